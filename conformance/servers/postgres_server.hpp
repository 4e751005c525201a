// SPDX-License-Identifier: MIT
#pragma once

// A scratch Postgres cluster for the tests: initdb in a new temp dir, `postgres` on a free
// port with its unix socket in that dir. As root, initdb and postgres run as the unprivileged
// user `a2test` (Postgres refuses to run as root; scripts/setup creates the user).

#include <optional>
#include <string>
#include <vector>

#include "servers/process.hpp"

namespace a2::test {

// The path of the Postgres program `name` (postgres, initdb, pgbench, ...): in `pg_config
// --bindir`, else in the newest /usr/lib/postgresql/<version>/bin that has it, else on PATH;
// empty if none. Used by the tests' servers and by the benchmarks.
std::string find_postgres_program(const std::string& name);

// Not thread-safe (start/stop); connection() may be read from any thread once started.
class PostgresServer {
 public:
  // Creates the cluster and starts the server. `settings` are extra "name=value" server
  // settings (each passed as -c). Throws std::runtime_error with the log if it cannot start.
  explicit PostgresServer(std::vector<std::string> settings = {});
  ~PostgresServer();  // Stops the server (fast shutdown) and deletes the cluster.
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  // A libpq connection string for the database `postgres` as superuser `postgres`.
  std::string connection() const;
  int port() const { return port_; }
  const std::string& log_path() const { return log_path_; }
  // The server log so far.
  std::string log() const;

  // Starts the server again on the same cluster and port; waits until it accepts connections.
  void start();
  // Fast shutdown (SIGINT): clients are disconnected, the cluster is shut down cleanly.
  void stop();
  // Immediate shutdown (SIGQUIT): like a crash; the next start runs recovery.
  void stop_immediate();
  bool running();
  pid_t pid() const { return process_.pid(); }

  // SIGSTOP to the postmaster and every backend and helper process (its children): the server
  // keeps its connections but answers nothing until resume() (SIGCONT).
  void pause();
  void resume();
  // Runs the postmaster and every process it has started on the CPUs `cpus` only
  // (sched_setaffinity); the backends it starts later inherit them. Empty: every CPU of the
  // machine. For the benchmark's placement rows. False when a process refused (it is gone, or
  // not ours).
  bool set_cpus(const std::vector<int>& cpus);

  // One server per test executable: started on first use, stopped at exit.
  static PostgresServer& shared();
  // The shared server if shared() was called, else nullptr.
  static PostgresServer* shared_if_started();

 private:
  std::optional<std::string> user_;  // Set when running as root.
  std::string bindir_;
  std::string dir_;
  std::string data_dir_;
  std::string log_path_;
  int port_ = 0;
  std::vector<std::string> settings_;
  Process process_;
};

}  // namespace a2::test
