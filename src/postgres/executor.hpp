// SPDX-License-Identifier: MIT
#pragma once

// Runs the prepared statements of sql/ on one connection by a call's deadline, with libpq
// directly (no libpqxx on this path): send, wait with poll() until the deadline, read the
// result. A statement is prepared on a connection at its first use there (one more round trip,
// once per connection and statement). Failures leave as the exceptions the backend's one
// translation (postgres/errors.hpp) reads: an SQL error as StatementError (a pqxx::sql_error
// with its SQLSTATE and constraint, postgres/statement_error.hpp), a lost connection as
// pqxx::broken_connection (the connection is then marked broken), no answer by the deadline as
// a2::Unavailable, outcome unknown.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "a2/observe.hpp"
#include "common/embedded.hpp"
#include "common/pool.hpp"
#include "postgres/result.hpp"

namespace a2::detail {
class SpinPacer;  // common/spin_wait.hpp
}  // namespace a2::detail

namespace a2::postgres::detail {

class Connection;

// A statement's parameters in libpq's text format: each a NUL-terminated text or null. Strings
// are borrowed (the caller's arguments outlive the statement); numbers are printed here.
class Params {
 public:
  template <class... A>
  explicit Params(const A&... args) {
    values_.reserve(sizeof...(A));
    numbers_.reserve(sizeof...(A));
    (add(args), ...);
  }
  Params(const Params&) = delete;
  Params& operator=(const Params&) = delete;

  int count() const { return static_cast<int>(values_.size()); }
  const char* const* values() const { return values_.data(); }

 private:
  void add(const std::string& text) { values_.push_back(text.c_str()); }
  void add(const char* text) { values_.push_back(text); }
  void add(std::int64_t number);
  void add(int number) { add(static_cast<std::int64_t>(number)); }
  void add(std::size_t number) { add(static_cast<std::int64_t>(number)); }
  void add(bool flag) { values_.push_back(flag ? "true" : "false"); }
  void add(std::nullopt_t) { values_.push_back(nullptr); }
  template <class T>
  void add(const std::optional<T>& value) {
    if (value)
      add(*value);
    else
      values_.push_back(nullptr);
  }

  std::vector<const char*> values_;
  std::vector<std::array<char, 24>> numbers_;  // Reserved up front: never moves.
};

// One call's statements on one connection. Not thread-safe (a call's own).
class Executor {
 public:
  // `spin`: the store's spin_wait and its pacing (common/spin_wait.hpp): each wait for a reply
  // may poll the socket before it sleeps; null: never.
  Executor(Connection& conn, std::string_view op, a2::detail::SteadyTime deadline,
           std::chrono::milliseconds command_timeout, a2::detail::SpinPacer* spin = nullptr)
      : conn_(conn), op_(op), deadline_(deadline), command_timeout_(command_timeout), spin_(spin) {}

  // Runs `statement` (one of sql::kAllStatements, prepared as a2_<stem>) with `args`.
  template <class... A>
  Result exec(const a2::detail::EmbeddedText& statement, const A&... args) {
    const Params params(args...);
    return exec_params(statement, params);
  }
  Result exec_params(const a2::detail::EmbeddedText& statement, const Params& params);
  // Runs `statement` like exec() and hands its rows to `take(const Result&)` as they arrive
  // (libpq's single-row mode: a Result of one row each), so a long read is decoded while the
  // server still sends it. An error of the statement, or one that `take` throws, leaves once
  // the connection is idle again (so it stays usable); the rows taken before it are then the
  // caller's to drop.
  template <class Take, class... A>
  void stream(const a2::detail::EmbeddedText& statement, Take&& take, const A&... args) {
    const Params params(args...);
    stream_params(statement, params, std::ref(take));
  }
  using RowSink = std::function<void(const Result&)>;
  void stream_params(const a2::detail::EmbeddedText& statement, const Params& params,
                     const RowSink& take);
  // Runs one SQL command without parameters (the notifier's BEGIN and ROLLBACK).
  Result exec_command(const char* sql);

 private:
  // Sends the prepared statement (preparing it on this connection first if needed).
  const std::string& send(const a2::detail::EmbeddedText& statement, const Params& params,
                          bool single_rows);
  // Waits for the result of what was sent; the first error (after the connection is idle
  // again) wins. With `take`, rows of single-row mode go to it as they arrive.
  Result result_of(std::string_view statement, const RowSink* take = nullptr);
  // Waits until the socket is ready for `events` (POLLIN, POLLOUT) or the deadline passes.
  void wait(short events);
  [[noreturn]] void lost();

  Connection& conn_;
  std::string_view op_;
  a2::detail::SteadyTime deadline_;
  std::chrono::milliseconds command_timeout_;
  a2::detail::SpinPacer* spin_;  // Null: no spin.
};

}  // namespace a2::postgres::detail
