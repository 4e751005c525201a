// SPDX-License-Identifier: MIT
#include "postgres/executor.hpp"

#include <libpq-fe.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <exception>
#include <iterator>
#include <memory>
#include <pqxx/except>
#include <stdexcept>

#include "a2/embedded/sql_files.hpp"
#include "common/spin_wait.hpp"
#include "postgres/connection_pool.hpp"
#include "postgres/errors.hpp"
#include "postgres/statement_error.hpp"

namespace a2::postgres::detail {
namespace {

constexpr std::size_t kStatementCount = std::size(a2::detail::sql::kAllStatements);
static_assert(kStatementCount <= kMaxStatements, "raise kMaxStatements (connection_pool.hpp)");

// The position of `statement` in kAllStatements and its prepared name, a2_<stem>.
struct Prepared {
  std::size_t slot;
  const std::string* name;
};

Prepared prepared_of(const a2::detail::EmbeddedText& statement) {
  static const auto names = [] {
    std::array<std::string, kStatementCount> out;
    for (std::size_t i = 0; i < kStatementCount; ++i)
      out[i] = "a2_" + std::string(a2::detail::sql::kAllStatements[i]->name);
    return out;
  }();
  for (std::size_t i = 0; i < kStatementCount; ++i)
    if (a2::detail::sql::kAllStatements[i] == &statement) return {i, &names[i]};
  throw std::logic_error("statement " + std::string(statement.name) + " is not one of sql/");
}

}  // namespace

void Params::add(std::int64_t number) {
  auto& text = numbers_.emplace_back();
  auto [end, ec] = std::to_chars(text.data(), text.data() + text.size() - 1, number);
  *end = '\0';
  values_.push_back(text.data());
}

const std::string& Executor::send(const a2::detail::EmbeddedText& statement,
                                   const Params& params, bool single_rows) {
  PGconn* c = conn_.raw();
  const Prepared p = prepared_of(statement);
  if (!conn_.prepared(p.slot)) {
    const std::string text(statement.text);
    if (PQsendPrepare(c, p.name->c_str(), text.c_str(), 0, nullptr) == 0) lost();
    (void)result_of(*p.name);
    conn_.set_prepared(p.slot);
  }
  if (PQsendQueryPrepared(c, p.name->c_str(), params.count(), params.values(), nullptr, nullptr,
                          0) == 0)
    lost();
  // Right after the send, before any result is read, as libpq requires.
  if (single_rows && PQsetSingleRowMode(c) == 0) {
    conn_.mark_broken();  // The statement's result is still to come.
    throw std::logic_error("a2 postgres: single-row mode refused for " + *p.name);
  }
  return *p.name;
}

Result Executor::exec_params(const a2::detail::EmbeddedText& statement, const Params& params) {
  return result_of(send(statement, params, false));
}

void Executor::stream_params(const a2::detail::EmbeddedText& statement, const Params& params,
                             const RowSink& take) {
  (void)result_of(send(statement, params, true), &take);
}

Result Executor::exec_command(const char* sql) {
  if (PQsendQuery(conn_.raw(), sql) == 0) lost();
  return result_of(sql);
}

Result Executor::result_of(std::string_view statement, const RowSink* take) {
  PGconn* c = conn_.raw();
  // The request may wait in libpq's buffer (nonblocking connection): send all of it, reading
  // meanwhile, as libpq asks.
  for (int left; (left = PQflush(c)) != 0;) {
    if (left < 0) lost();
    wait(POLLIN | POLLOUT);
    if (PQconsumeInput(c) == 0) lost();
  }
  using Owned = std::unique_ptr<PGresult, decltype(&PQclear)>;
  Owned error(nullptr, &PQclear);
  Owned last(nullptr, &PQclear);
  std::exception_ptr refused;  // What `take` threw.
  for (;;) {
    while (PQisBusy(c) != 0) {
      wait(POLLIN);
      if (PQconsumeInput(c) == 0) lost();
    }
    Owned r(PQgetResult(c), &PQclear);
    if (r == nullptr) break;
    const auto status = PQresultStatus(r.get());
    if (status == PGRES_FATAL_ERROR || status == PGRES_NONFATAL_ERROR ||
        status == PGRES_BAD_RESPONSE) {
      if (error == nullptr) error = std::move(r);
    } else if (status == PGRES_SINGLE_TUPLE) {
      // Only stream_params() asks for single rows, with a taker.
      if (take != nullptr && error == nullptr && refused == nullptr) {
        try {
          (*take)(Result(r.release()));
        } catch (...) {
          refused = std::current_exception();
        }
      }
    } else {
      last = std::move(r);
    }
  }
  if (PQstatus(c) != CONNECTION_OK) {
    // The server closed the connection (its last words, if any, in `error`).
    const std::string why =
        error != nullptr ? PQresultErrorMessage(error.get()) : PQerrorMessage(c);
    conn_.mark_broken();
    throw pqxx::broken_connection(why);
  }
  if (error != nullptr) {
    const char* state = PQresultErrorField(error.get(), PG_DIAG_SQLSTATE);
    const char* constraint = PQresultErrorField(error.get(), PG_DIAG_CONSTRAINT_NAME);
    throw StatementError(PQresultErrorMessage(error.get()), std::string(statement),
                         state != nullptr ? state : "", constraint != nullptr ? constraint : "");
  }
  if (refused != nullptr) std::rethrow_exception(refused);
  return Result(last.release());
}

void Executor::wait(short events) {
  pollfd pfd{PQsocket(conn_.raw()), events, 0};
  // A reply may come while the thread polls (the store's spin_wait): no sleep, no wake-up.
  if (events == POLLIN && spin_ && a2::detail::spin_until_readable(pfd.fd, *spin_, deadline_))
    return;
  for (;;) {
    const auto left =
        std::chrono::ceil<std::chrono::milliseconds>(deadline_ - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      conn_.mark_broken();  // Whatever it still sends belongs to the abandoned request.
      throw_timed_out(op_, command_timeout_);
    }
    const int rc = ::poll(&pfd, 1, static_cast<int>(std::min<std::int64_t>(left.count(), 1 << 30)));
    if (rc > 0) return;
    if (rc < 0 && errno != EINTR) lost();
  }
}

void Executor::lost() {
  const std::string why = PQerrorMessage(conn_.raw());
  conn_.mark_broken();
  throw pqxx::broken_connection(why.empty() ? "the connection failed" : why);
}

}  // namespace a2::postgres::detail
