// SPDX-License-Identifier: MIT
#pragma once

// The Postgres backend's connections: the shared pool (src/common/pool.hpp) of configured
// connections (libpqxx connects them by the deadline; their set-up and every call's statements
// run through postgres/executor.hpp, which enforces the deadline). Failures become a2::Error in
// postgres/errors.hpp.

#include <bitset>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "a2/errors.hpp"
#include "a2/observe.hpp"
#include "common/pool.hpp"
#include "postgres/errors.hpp"
#include "postgres/executor.hpp"

typedef struct pg_conn PGconn;  // libpq-fe.h

namespace a2::postgres::detail {

// A LISTEN connection (a feed's, a work watch's) that was lost connects again after this.
inline constexpr auto kReconnectDelay = std::chrono::milliseconds(1000);

struct Settings {
  std::string connection;
  std::string schema;  // A validated plain identifier.
  std::size_t pool_size = 4;
  std::chrono::milliseconds statement_timeout{30000};
  std::chrono::milliseconds command_timeout{35000};  // The deadline of every call.
  std::chrono::milliseconds pool_acquire_timeout{35000};
  // How long a call's wait for its reply polls first (Options::spin_wait; common/spin_wait.hpp).
  std::chrono::microseconds spin_wait{0};
};

// libpqxx's connection policy for connecting by a deadline: PQconnectStart and PQconnectPoll
// with poll() instead of the blocking PQconnectdb, so a server that accepts but does not answer
// cannot hold a call past its deadline. The deadline is the calling thread's (ConnectionPool
// sets it before constructing a connection).
class ConnectByDeadline : public pqxx::connectionpolicy {
 public:
  explicit ConnectByDeadline(const std::string& options) : pqxx::connectionpolicy(options) {}
  handle do_startconnect(handle orig) override;
};
using PqConnection = pqxx::basic_connection_base<ConnectByDeadline>;

// A setting of every connection of the store, part of its set-up.
struct ConnectionSetting {
  std::string_view name;
  std::string_view value;
};

// The planner settings: each statement is planned once per connection (generic plans),
// reaching rows by index and TID scans whatever the statistics say
// (docs/postgres-layout.md#plans). Tests explain statements under them, and the benchmark's
// connections without the library run with them.
inline constexpr ConnectionSetting kPlannerSettings[] = {
    {"plan_cache_mode", "force_generic_plan"},
    {"enable_seqscan", "off"},
    {"enable_bitmapscan", "off"},
};

// The wake-up settings (docs/postgres-layout.md#notifications-and-feeds): the write functions
// leave their wake-ups to the store's notifier instead of a NOTIFY in the transaction
// (schema.sql a2_owe_wake), and an append of one event leaves them to its reply instead of the
// setting a2.wake (a2_append_wake). The benchmark's connections without the library run with
// them.
inline constexpr ConnectionSetting kWakeSettings[] = {
    {"a2.wake_after_commit", "on"},
    {"a2.wake_by_reply", "on"},
};

// The allocator warm-up, the set-up's last statement (docs/postgres-layout.md#backend-memory):
// the backend allocates one block of 1 MiB and frees it. glibc's malloc serves a block that
// large by mmap, and freeing it raises the process's thresholds: blocks up to that size come
// from the heap from then on, and the heap keeps up to twice that free at its top. Without it
// a backend whose heap ends just above a write's statements grows the heap for a statement's
// executor memory and gives it back at the statement's end, two brk calls (and the kernel's
// TLB flush on every core) per statement. Any other allocator: a 1 MiB value made and freed.
inline constexpr std::string_view kAllocatorWarmUp =
    "SELECT pg_catalog.length(pg_catalog.repeat('x', 1048576))";

// Settings as one simple query of SETs.
template <std::size_t N>
std::string settings_sql(const ConnectionSetting (&settings)[N]) {
  std::string out;
  for (const auto& setting : settings) {
    if (!out.empty()) out += "; ";
    out.append("SET ").append(setting.name).append(" = ").append(setting.value);
  }
  return out;
}

// kPlannerSettings as one simple query of SETs.
inline std::string planner_settings_sql() { return settings_sql(kPlannerSettings); }

// The most statements sql/ may hold (a connection's prepared set is a bitset).
inline constexpr std::size_t kMaxStatements = 64;

// A pooled connection: the libpqxx connection (connecting and its set-up), its libpq handle
// (every call's statements: postgres/executor.hpp), the statements prepared on it and whether a
// failure made it unusable.
class Connection {
 public:
  Connection(std::unique_ptr<PqConnection> conn, PGconn* raw) : conn_(std::move(conn)), raw_(raw) {}
  pqxx::connection_base& get() { return *conn_; }
  PGconn* raw() const { return raw_; }
  bool broken() const { return broken_; }
  void mark_broken() { broken_ = true; }
  bool prepared(std::size_t slot) const { return prepared_.test(slot); }
  void set_prepared(std::size_t slot) { prepared_.set(slot); }
  // False when the server closed the idle connection or sent something unasked (a terminated
  // backend sends its FATAL message, then closes): a non-blocking poll, no round trip.
  bool idle_alive();

 private:
  std::unique_ptr<PqConnection> conn_;
  PGconn* raw_;  // conn_'s (libpqxx never replaces it: reactivation is inhibited).
  std::bitset<kMaxStatements> prepared_;
  bool broken_ = false;
};

// Thread-safe. Connections are opened lazily up to pool_size; a connection that failed is
// discarded, so the next operation reconnects. Every run() has a deadline (command_timeout).
class ConnectionPool {
 public:
  explicit ConnectionPool(Settings settings);
  ~ConnectionPool();
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  const Settings& settings() const { return settings_; }

  // A new connection with search_path, statement_timeout and the prepared statements set up,
  // by `deadline`; `application_name`, when given, replaces the connection string's. Throws
  // pqxx errors (callers translate).
  std::unique_ptr<Connection> connect(a2::detail::SteadyTime deadline,
                                      const std::string& application_name = {});

  // Hands a connection (from connect()) to the pool.
  void adopt(std::unique_ptr<Connection> conn) { pool_.adopt(std::move(conn)); }

  // Runs fn(executor) on a pooled connection by the call's deadline; every failure leaves as
  // an a2::Error.
  template <class F>
  auto run(std::string_view op, F&& fn) -> decltype(fn(std::declval<Executor&>())) {
    return run_by(op, std::chrono::steady_clock::now() + settings_.command_timeout,
                  std::forward<F>(fn));
  }

  // The same by a deadline of the caller's (an append group's: its members' earliest).
  template <class F>
  auto run_by(std::string_view op, a2::detail::SteadyTime deadline, F&& fn)
      -> decltype(fn(std::declval<Executor&>())) {
    std::optional<Pool::Lease> lease;
    try {
      lease.emplace(pool_.acquire(op, deadline));
    } catch (const a2::Error&) {
      throw;
    } catch (...) {
      translate_current_exception(op, false);
    }
    ++a2::detail::t_round_trips;  // One statement: the one place a call's round trip counts.
    return run_on(**lease, op, deadline, spin_.get(), std::forward<F>(fn));
  }

  // Runs fn(executor) on `conn` (a pooled one, or one of connect()'s outside the pool) by
  // `deadline`, each wait for a reply spinning first by `spin` (a store call's: the store's
  // pacer; null for the notifier's rounds, which run beside the calls); every failure leaves as
  // an a2::Error, and `conn` is marked broken when it is unusable.
  template <class F>
  auto run_on(Connection& conn, std::string_view op, a2::detail::SteadyTime deadline,
              a2::detail::SpinPacer* spin, F&& fn) -> decltype(fn(std::declval<Executor&>())) {
    Executor executor(conn, op, deadline, settings_.command_timeout, spin);
    try {
      return fn(executor);
    } catch (...) {
      translate_current_exception(op, true);
    }
  }

  // Closes idle connections now and busy ones when they come back; acquire() then fails.
  void close() { pool_.close(); }

 private:
  using Pool = a2::detail::Pool<Connection>;

  Settings settings_;
  // The store's spin_wait and its pacing (null: spin_wait 0); the pool's calls spin by it.
  std::shared_ptr<a2::detail::SpinPacer> spin_;
  Pool pool_;
};

}  // namespace a2::postgres::detail
