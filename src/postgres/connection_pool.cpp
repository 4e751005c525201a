// SPDX-License-Identifier: MIT
#include "postgres/connection_pool.hpp"

#include <string>

#include "a2/detail/sql_files.hpp"

namespace a2::postgres::detail {
namespace {

// The primary line of a server error ("ERROR:  text\nCONTEXT: ..." -> "text").
std::string primary_message(std::string_view what) {
  auto nl = what.find('\n');
  auto line = what.substr(0, nl);
  for (std::string_view prefix : {"ERROR:  ", "FATAL:  ", "ERROR: ", "FATAL: "}) {
    if (line.substr(0, prefix.size()) == prefix) {
      line.remove_prefix(prefix.size());
      break;
    }
  }
  return std::string(line);
}

std::string context(std::string_view op) { return "a2 postgres " + std::string(op) + ": "; }

// Every statement of sql/<stem>.sql, prepared on each connection as a2_<stem>.
const a2::detail::EmbeddedText* const kStatements[] = {
    &a2::detail::sql::kAppend,       &a2::detail::sql::kAppendOne,
    &a2::detail::sql::kClaimAvailable,
    &a2::detail::sql::kRenewClaims,  &a2::detail::sql::kCompleteAttempt,
    &a2::detail::sql::kFailAttempt,  &a2::detail::sql::kRedrive,
    &a2::detail::sql::kPutSnapshots, &a2::detail::sql::kClear,
    &a2::detail::sql::kReclaim,      &a2::detail::sql::kPatchPresence,
    &a2::detail::sql::kRead,         &a2::detail::sql::kReadHistory,
    &a2::detail::sql::kReadTail,     &a2::detail::sql::kReadEventsPage,
    &a2::detail::sql::kDeadLetters,
    &a2::detail::sql::kReadStates,   &a2::detail::sql::kReadPresence,
};

}  // namespace

void translate_current_exception(std::string_view op, bool sent) {
  try {
    throw;
  } catch (const a2::Error&) {
    throw;
  } catch (const pqxx::sql_error& e) {
    const std::string& state = e.sqlstate();
    std::string message = primary_message(e.what());
    // The contract's errors, raised by the functions of schema.sql.
    if (state == "A2001") throw InvalidArgument(message);
    if (state == "A2002") throw Unavailable(message);
    if (state == "A2003") throw PartialDuplicateBatch(message);
    if (state == "A2004") throw SupersededAttempt(message);
    if (state == "A2005") throw SessionCleared(message);
    // Deadlocks (40P01), serialization failures (40001), timeouts and anything unexpected.
    throw Unavailable(context(op) + message + " (SQLSTATE " + state + ")");
  } catch (const pqxx::broken_connection& e) {
    if (sent)
      throw Unavailable(context(op) +
                            "the connection was lost after the request was sent; "
                            "outcome unknown: " +
                            primary_message(e.what()),
                        true);
    throw Unavailable(context(op) + "cannot connect: " + primary_message(e.what()));
  } catch (const pqxx::in_doubt_error& e) {
    throw Unavailable(context(op) + "outcome unknown: " + primary_message(e.what()), true);
  } catch (const pqxx::statement_completion_unknown& e) {
    throw Unavailable(context(op) + "outcome unknown: " + primary_message(e.what()), true);
  } catch (const pqxx::failure& e) {
    throw Unavailable(context(op) + primary_message(e.what()));
  } catch (const std::exception& e) {
    throw Unavailable(context(op) + e.what());
  } catch (...) {
    throw Unavailable(context(op) + "unknown failure");
  }
}

ConnectionPool::ConnectionPool(Settings settings) : settings_(std::move(settings)) {}

ConnectionPool::~ConnectionPool() { close(); }

std::unique_ptr<pqxx::connection> ConnectionPool::connect() {
  auto conn = std::make_unique<pqxx::connection>(settings_.connection);
  // set_variable (not a raw SET) so that libpqxx restores them should it ever reconnect.
  conn->set_variable("search_path", "\"" + settings_.schema + "\"");
  conn->set_variable("statement_timeout", std::to_string(settings_.statement_timeout.count()));
  conn->set_variable("client_min_messages", "warning");
  for (const auto* statement : kStatements)
    conn->prepare("a2_" + std::string(statement->name), std::string(statement->text));
  return conn;
}

void ConnectionPool::adopt(std::unique_ptr<pqxx::connection> conn) {
  std::unique_lock lock(mutex_);
  if (closed_ || open_ >= settings_.pool_size) return;  // Dropped: closes it.
  ++open_;
  idle_.push_back(std::move(conn));
  available_.notify_one();
}

std::unique_ptr<pqxx::connection> ConnectionPool::acquire(std::string_view op) {
  std::unique_lock lock(mutex_);
  available_.wait(lock, [&] { return closed_ || !idle_.empty() || open_ < settings_.pool_size; });
  if (closed_) throw Unavailable(context(op) + "the store is closed");
  if (!idle_.empty()) {
    auto conn = std::move(idle_.back());
    idle_.pop_back();
    return conn;
  }
  ++open_;
  lock.unlock();
  try {
    return connect();
  } catch (...) {
    lock.lock();
    --open_;
    available_.notify_one();
    throw;
  }
}

void ConnectionPool::release(std::unique_ptr<pqxx::connection> conn, bool broken) {
  std::unique_lock lock(mutex_);
  if (broken || closed_) {
    --open_;
    lock.unlock();
    available_.notify_one();
    conn.reset();  // Outside the lock: closing may take a moment.
    return;
  }
  idle_.push_back(std::move(conn));
  lock.unlock();
  available_.notify_one();
}

bool ConnectionPool::connection_failed(pqxx::connection& conn) noexcept {
  try {
    throw;
  } catch (const pqxx::sql_error&) {
    return !conn.is_open();
  } catch (...) {
    return true;
  }
}

void ConnectionPool::close() {
  std::vector<std::unique_ptr<pqxx::connection>> idle;
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
    open_ -= idle_.size();
    idle.swap(idle_);
  }
  available_.notify_all();
  idle.clear();
}

}  // namespace a2::postgres::detail
