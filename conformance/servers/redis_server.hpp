// SPDX-License-Identifier: MIT
#pragma once

// redis-server instances spawned by the tests: one shared server per test executable (started
// on first use, stopped at exit) and private ones for fault tests (killed and restarted).

#include <string>
#include <vector>

#include "servers/process.hpp"

namespace a2::test {

// One redis-server from PATH on a free 127.0.0.1 port, in its own temp dir, logging to
// <dir>/redis.log, with DEBUG allowed from local connections. Not thread-safe (start/stop/kill
// from one thread).
class RedisServer {
 public:
  // persistent = false: `--save '' --appendonly no` (nothing on disk). persistent = true:
  // `--appendonly yes --appendfsync always`, so every acknowledged write survives a SIGKILL.
  explicit RedisServer(bool persistent = false);
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  int port() const { return port_; }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
  const std::string& dir() const { return dir_; }
  // The server's log so far.
  std::string log() const;
  bool running() { return process_.running(); }
  pid_t pid() const { return process_.pid(); }

  // Runs every thread of the server on the CPUs `cpus` only (servers/process.hpp set_cpus);
  // empty: every CPU. For the benchmark's placement rows.
  bool set_cpus(const std::vector<int>& cpus) { return a2::test::set_cpus(process_.pid(), cpus); }

  // SIGSTOP: the server keeps its connections but answers nothing until resume() (SIGCONT).
  void pause();
  void resume();

  // SIGKILL, no shutdown: in-flight commands lose their replies.
  void kill();
  // Starts it again on the same port and dir (after kill()); waits until it accepts connections.
  void restart();

  // The executable's shared, non-persistent server, started on first use; stopped at exit.
  static RedisServer& shared();
  // True once shared() has started a server (so failure reporting can show its log).
  static bool shared_started();

 private:
  void start();

  bool persistent_;
  std::string dir_;
  int port_ = 0;
  Process process_;
};

// Prints the last `max_bytes` of the shared server's log to stderr, if it was started.
void print_shared_redis_log(std::size_t max_bytes = 20000);

}  // namespace a2::test
