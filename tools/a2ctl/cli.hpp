// SPDX-License-Identifier: MIT
#pragma once

// What every a2ctl command shares: the global options, the exit codes, the errors that choose
// them, and the store (opened on first use). Not thread-safe: one command runs per process.

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "a2/store.hpp"

namespace CLI {
class App;
}

namespace a2ctl {

// The process's exit status (docs/operating.md#exit-codes).
enum Exit : int {
  kOk = 0,           // Done.
  kRefused = 1,      // The store answered with a verdict that refuses the operation.
  kUsage = 2,        // Bad arguments, bad JSON input, a2::InvalidArgument.
  kUnavailable = 3,  // The store could not be reached or failed (a2::Unavailable).
};

// An operation the store refused (a verdict, not a failure): exit 1.
class Refused : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad usage found after the arguments parsed (a bad JSON payload, conflicting flags): exit 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The options before (or after) the command name that every command takes.
struct Globals {
  std::string store_url{};        // --store / A2_STORE
  std::string prefix = "a2";      // --prefix / A2_PREFIX: the Redis key prefix.
  std::string schema = "public";  // --schema / A2_SCHEMA: the Postgres schema.
  bool json = false;              // --json: one JSON document instead of tables.
  bool yes = false;               // --yes: confirm destructive commands without asking.
  std::string now{};              // --now: the time to judge leases and print relative times by.
};

class Context {
 public:
  Context(std::istream& input, std::ostream& output, std::ostream& errors)
      : in(input), out(output), err(errors) {}

  Globals globals{};
  std::string command = "a2ctl";  // The running command, for error messages.
  std::istream& in;
  std::ostream& out;
  std::ostream& err;

  // The store named by --store, opened on first use (store_url.cpp).
  a2::Store& store();
  // The time by --now, else the system clock (ms since the Unix epoch).
  std::int64_t now_ms();
  // Registers what `sub` does once the arguments parsed (run() calls it).
  void define(CLI::App* sub, std::function<void()> action) {
    actions.emplace_back(sub, std::move(action));
  }
  std::vector<std::pair<CLI::App*, std::function<void()>>> actions{};

 private:
  std::unique_ptr<a2::Store> store_{};
  std::optional<std::int64_t> now_{};
};

// The command groups (one file each): each adds its subcommands to the app.
void add_session_commands(CLI::App& app, Context& ctx);   // sessions, show, stats
void add_event_commands(CLI::App& app, Context& ctx);     // events, event, tail
void add_dead_commands(CLI::App& app, Context& ctx);      // dead-letters, redrive
void add_write_commands(CLI::App& app, Context& ctx);     // append, clear, reclaim
void add_transfer_commands(CLI::App& app, Context& ctx);  // export, import

// Every session under the prefix / schema, by id (byte order), each once: every page of
// list_sessions loaded (Redis pages come unordered and may repeat a session).
std::vector<a2::SessionSummary> all_sessions(a2::Store& store);

// Parses the arguments, runs the command and returns the exit status; never throws.
int run(int argc, char** argv, Context& ctx);

}  // namespace a2ctl
