// SPDX-License-Identifier: MIT
#pragma once

// Spawning and stopping the test servers (redis-server, postgres) the tests start themselves.

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace a2::test {

// A TCP port on 127.0.0.1 that was free a moment ago.
int free_port();

// A new private directory under $TMPDIR (or /tmp); owned by `owner_user` when given.
std::string make_temp_dir(const std::string& prefix,
                          const std::optional<std::string>& owner_user = std::nullopt);

// Deletes a directory tree; errors are ignored.
void remove_tree(const std::string& path);

// The first executable named `name` on PATH or in `extra_dirs`; empty if none.
std::string find_program(const std::string& name, const std::vector<std::string>& extra_dirs = {});

// The whole text of a file, or "" if it cannot be read.
std::string read_file(const std::string& path);

// True once something accepts TCP connections on 127.0.0.1:`port` (or `timeout` passes).
bool wait_for_port(int port, std::chrono::milliseconds timeout);

// A child process with stdout and stderr appended to a log file. Not copyable; the destructor
// stops it (SIGTERM, then SIGKILL after 10 s) and reaps it. Not thread-safe.
class Process {
 public:
  Process() = default;
  // Starts argv[0] (a path) with argv. When run_as_user is set and we are root, the child
  // switches to that user first (Postgres refuses to run as root).
  static Process spawn(const std::vector<std::string>& argv, const std::string& log_path,
                       const std::optional<std::string>& run_as_user = std::nullopt);
  Process(Process&& other) noexcept;
  Process& operator=(Process&& other) noexcept;
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  ~Process();

  pid_t pid() const { return pid_; }
  bool running();
  // Sends `sig` (no-op if not running).
  void signal(int sig);
  // Waits for exit up to `timeout`; true if it exited.
  bool wait_exit(std::chrono::milliseconds timeout);
  // SIGTERM, then SIGKILL if it has not exited within `grace`.
  void stop(std::chrono::milliseconds grace = std::chrono::seconds(10));

 private:
  pid_t pid_ = -1;
};

// Runs every thread of the process `pid` on the CPUs `cpus` only (sched_setaffinity); threads
// and processes it starts later inherit the set. Empty: every CPU of the machine. False when a
// thread refused (it ended meanwhile, or is not ours). For the benchmarks' placement rows.
bool set_cpus(pid_t pid, const std::vector<int>& cpus);

// Runs a command to completion (stdout/stderr to the log); returns its exit status.
int run(const std::vector<std::string>& argv, const std::string& log_path,
        const std::optional<std::string>& run_as_user = std::nullopt);

}  // namespace a2::test
