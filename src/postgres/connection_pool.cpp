// SPDX-License-Identifier: MIT
#include "postgres/connection_pool.hpp"

#include <libpq-fe.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <new>
#include <string>
#include <utility>

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

// ── Watchdog ───────────────────────────────────────────────────────────────────────────────

Watchdog::Watchdog() : thread_([this] { loop(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

std::uint64_t Watchdog::arm(int socket, a2::detail::SteadyTime deadline) {
  bool wake = false;
  std::uint64_t ticket;
  {
    std::lock_guard lock(mutex_);
    ticket = ++next_ticket_;
    entries_.emplace(ticket, Entry{socket, deadline});
    wake = deadline < waiting_until_;  // Deadlines mostly grow: the thread rarely needs waking.
  }
  if (wake) changed_.notify_all();
  return ticket;
}

bool Watchdog::disarm(std::uint64_t ticket) {
  std::lock_guard lock(mutex_);
  auto it = entries_.find(ticket);
  if (it == entries_.end()) return false;
  const bool fired = it->second.fired;
  entries_.erase(it);
  return fired;
}

void Watchdog::loop() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    const auto now = std::chrono::steady_clock::now();
    auto earliest = a2::detail::SteadyTime::max();
    for (auto& [ticket, entry] : entries_) {
      if (entry.fired) continue;
      if (entry.deadline <= now) {
        // Under the lock: once disarm() returned, the socket is never touched again.
        if (entry.socket >= 0) ::shutdown(entry.socket, SHUT_RDWR);
        entry.fired = true;
      } else {
        earliest = std::min(earliest, entry.deadline);
      }
    }
    waiting_until_ = earliest;
    if (earliest == a2::detail::SteadyTime::max())
      changed_.wait(lock);
    else
      changed_.wait_until(lock, earliest);
  }
}

// ── ConnectionPool ─────────────────────────────────────────────────────────────────────────

ConnectionPool::ConnectionPool(Settings settings)
    : settings_(std::move(settings)),
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
  // The setup's round trips count against the deadline too.
  const auto ticket = watchdog_.arm(pq->sock(), deadline);
  try {
    pq->set_variable("search_path", "\"" + settings_.schema + "\"");
    pq->set_variable("statement_timeout", std::to_string(settings_.statement_timeout.count()));
    pq->set_variable("client_min_messages", "warning");
    // The write functions leave the wake-ups to the store's notifier (schema.sql a2_wake).
    pq->set_variable("a2.wake_after_commit", "on");
  } catch (...) {
    if (watchdog_.disarm(ticket))
      throw pqxx::broken_connection("timed out setting up a connection");
    throw;
  }
  if (watchdog_.disarm(ticket)) throw pqxx::broken_connection("timed out setting up a connection");
  // Calls wait with poll() by their deadline, so sending never blocks either.
  if (PQsetnonblocking(raw, 1) != 0) throw pqxx::broken_connection(PQerrorMessage(raw));
  return std::make_unique<Connection>(std::move(pq), raw);
}

}  // namespace a2::postgres::detail
