// SPDX-License-Identifier: MIT
#pragma once

// The Postgres backend's connections: a bounded pool of configured libpqxx connections and the
// one place where libpqxx and SQL errors become a2::Error.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <pqxx/pqxx>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "a2/errors.hpp"

namespace a2::postgres::detail {

struct Settings {
  std::string connection;
  std::string schema;  // A validated plain identifier.
  std::size_t pool_size = 4;
  std::chrono::milliseconds statement_timeout{30000};
};

// Rethrows the exception being handled as an a2::Error: the contract errors raised by the SQL
// functions (SQLSTATE A2001..A2005) as their types, every other failure as Unavailable.
// `sent` says whether the request may have reached the server (a lost connection then leaves
// the outcome unknown). Call only inside a catch block.
[[noreturn]] void translate_current_exception(std::string_view op, bool sent);

// Thread-safe. Connections are opened lazily up to pool_size; a connection that failed is
// discarded, so the next operation reconnects.
class ConnectionPool {
 public:
  explicit ConnectionPool(Settings settings);
  ~ConnectionPool();
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  const Settings& settings() const { return settings_; }

  // A new connection with search_path, statement_timeout and the prepared statements set up.
  // Throws pqxx errors (callers translate).
  std::unique_ptr<pqxx::connection> connect();

  // Hands a connection (from connect()) to the pool.
  void adopt(std::unique_ptr<pqxx::connection> conn);

  // Runs fn(connection) on a pooled connection; every failure leaves as an a2::Error.
  template <class F>
  auto run(std::string_view op, F&& fn) -> decltype(fn(std::declval<pqxx::connection&>())) {
    std::unique_ptr<pqxx::connection> conn;
    try {
      conn = acquire(op);
    } catch (const a2::Error&) {
      throw;
    } catch (...) {
      translate_current_exception(op, false);
    }
    try {
      auto result = fn(*conn);
      release(std::move(conn), false);
      return result;
    } catch (...) {
      bool failed = connection_failed(*conn);
      release(std::move(conn), failed);
      translate_current_exception(op, true);
    }
  }

  // Closes idle connections now and busy ones when they come back; acquire() then fails.
  void close();

 private:
  std::unique_ptr<pqxx::connection> acquire(std::string_view op);
  void release(std::unique_ptr<pqxx::connection> conn, bool broken);
  // Whether the exception being handled leaves `conn` unusable (anything but an SQL error on an
  // open connection). Call only inside a catch block.
  static bool connection_failed(pqxx::connection& conn) noexcept;

  Settings settings_;
  std::mutex mutex_;
  std::condition_variable available_;
  std::vector<std::unique_ptr<pqxx::connection>> idle_;
  std::size_t open_ = 0;  // Idle plus lent out (plus being opened).
  bool closed_ = false;
};

}  // namespace a2::postgres::detail
