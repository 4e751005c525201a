// SPDX-License-Identifier: MIT
#include "postgres/connection_pool.hpp"

#include <libpq-fe.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <new>
#include <string>
#include <utility>

#include "common/spin_wait.hpp"

namespace a2::postgres::detail {

// ── Connecting by a deadline ───────────────────────────────────────────────────────────────

namespace {
thread_local a2::detail::SteadyTime t_connect_deadline = a2::detail::SteadyTime::max();
// An application_name that overrides the connection string's (null: none).
thread_local const char* t_application_name = nullptr;
// The libpq connection do_startconnect made last on this thread (ConnectionPool::connect keeps it).
thread_local PGconn* t_started = nullptr;
}  // namespace

ConnectByDeadline::handle ConnectByDeadline::do_startconnect(handle orig) {
  if (orig) return orig;
  PGconn* conn;
  if (t_application_name != nullptr) {
    // The connection string expanded as dbname, then application_name: the later one wins.
    const char* const keys[] = {"dbname", "application_name", nullptr};
    const char* const values[] = {options().c_str(), t_application_name, nullptr};
    conn = PQconnectStartParams(keys, values, 1);
  } else {
    conn = PQconnectStart(options().c_str());
  }
  if (conn == nullptr) throw std::bad_alloc();
  auto failed = [&](const std::string& why) {
    PQfinish(conn);
    throw pqxx::broken_connection(why);
  };
  if (PQstatus(conn) == CONNECTION_BAD) failed(PQerrorMessage(conn));
  // As libpq's connectDBComplete: wait for writability first, then as PQconnectPoll asks.
  PostgresPollingStatusType status = PGRES_POLLING_WRITING;
  for (;;) {
    if (status == PGRES_POLLING_OK) {
      t_started = conn;
      return conn;
    }
    if (status == PGRES_POLLING_FAILED) failed(PQerrorMessage(conn));
    pollfd pfd{PQsocket(conn),
               static_cast<short>(status == PGRES_POLLING_READING ? POLLIN : POLLOUT), 0};
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(
        t_connect_deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) failed("timed out connecting to the server");
    int rc = ::poll(&pfd, 1, static_cast<int>(std::min<std::int64_t>(left.count(), 1 << 30)));
    if (rc < 0 && errno != EINTR) failed("poll failed while connecting");
    if (rc == 0) continue;  // Checks the deadline again.
    status = PQconnectPoll(conn);
  }
}

bool Connection::idle_alive() {
  if (broken_) return false;
  const int fd = conn_->sock();
  if (fd < 0) return false;
  pollfd pfd{fd, POLLIN, 0};
  int rc;
  do rc = ::poll(&pfd, 1, 0);
  while (rc < 0 && errno == EINTR);
  if (rc != 0) broken_ = true;  // End of file, a reset, or a message nobody asked for.
  return !broken_;
}

// ── ConnectionPool ─────────────────────────────────────────────────────────────────────────

ConnectionPool::ConnectionPool(Settings settings)
    : settings_(std::move(settings)),
      spin_(a2::detail::make_spin_pacer(settings_.spin_wait)),
      pool_("postgres", settings_.pool_size, settings_.pool_acquire_timeout,
            [this](a2::detail::SteadyTime deadline) { return connect(deadline); }) {}

ConnectionPool::~ConnectionPool() { close(); }

std::unique_ptr<Connection> ConnectionPool::connect(a2::detail::SteadyTime deadline,
                                                    const std::string& application_name) {
  t_connect_deadline = deadline;
  t_application_name = application_name.empty() ? nullptr : application_name.c_str();
  t_started = nullptr;
  std::unique_ptr<PqConnection> pq;
  try {
    pq = std::make_unique<PqConnection>(settings_.connection);
  } catch (...) {
    t_connect_deadline = a2::detail::SteadyTime::max();
    t_application_name = nullptr;
    throw;
  }
  t_connect_deadline = a2::detail::SteadyTime::max();
  t_application_name = nullptr;
  PGconn* raw = std::exchange(t_started, nullptr);
  if (raw == nullptr || PQsocket(raw) != pq->sock())
    throw pqxx::broken_connection("connected without a libpq connection");
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  // Calls use `raw` directly (postgres/executor.hpp): libpqxx must never replace it.
  pq->inhibit_reactivation(true);
#pragma GCC diagnostic pop
  // Calls wait with poll() by their deadline, so sending never blocks either.
  if (PQsetnonblocking(raw, 1) != 0) throw pqxx::broken_connection(PQerrorMessage(raw));
  auto conn = std::make_unique<Connection>(std::move(pq), raw);
  // The set-up: one simple query of its SETs and the allocator warm-up (one round trip), by the
  // same deadline. Nothing of a caller's has been sent yet, so running out of time here is
  // "cannot connect", not an unknown outcome.
  const std::string set_up =
      "SET search_path TO \"" + settings_.schema + "\"; SET statement_timeout = " +
      std::to_string(settings_.statement_timeout.count()) +
      "; SET client_min_messages = warning; " + settings_sql(kWakeSettings) + "; " +
      planner_settings_sql() + "; " + std::string(kAllocatorWarmUp);
  try {
    Executor(*conn, "connect", deadline, settings_.command_timeout).exec_command(set_up.c_str());
  } catch (const a2::Unavailable&) {
    throw pqxx::broken_connection("timed out setting up a connection");
  }
  return conn;
}

}  // namespace a2::postgres::detail
