// SPDX-License-Identifier: MIT
#include "postgres/work_watch.hpp"

#include <algorithm>
#include <thread>
#include <utility>

#include "a2/errors.hpp"
#include "postgres/errors.hpp"

namespace a2::postgres::detail {
namespace {

// The longest a wait() blocks on the socket before it looks at cancel() and the sweep again.
constexpr auto kSlice = std::chrono::milliseconds(50);

}  // namespace

class PostgresWorkWatch::Listener final : public pqxx::notification_receiver {
 public:
  Listener(pqxx::connection_base& conn, PostgresWorkWatch& watch)
      : pqxx::notification_receiver(conn, kWorkChannel), watch_(watch) {}
  void operator()(const std::string& payload, int) override { watch_.notified(payload); }

 private:
  PostgresWorkWatch& watch_;
};

PostgresWorkWatch::PostgresWorkWatch(std::shared_ptr<ConnectionPool> pool,
                                     std::function<SweepResult()> sweep,
                                     std::function<bool()> closed,
                                     std::chrono::milliseconds sweep_interval)
    : pool_(std::move(pool)),
      sweep_(std::move(sweep)),
      closed_(std::move(closed)),
      sweep_interval_(sweep_interval),
      next_sweep_(std::chrono::steady_clock::now()) {
  try {
    listen();
  } catch (...) {
    drop_connection();
    translate_current_exception("watch_work", false);
  }
}

PostgresWorkWatch::~PostgresWorkWatch() { drop_connection(); }

void PostgresWorkWatch::listen() {
  conn_ = pool_->connect(std::chrono::steady_clock::now() + pool_->settings().command_timeout);
  listener_ = std::make_unique<Listener>(conn_->get(), *this);
}

void PostgresWorkWatch::drop_connection() noexcept {
  listener_
      .reset();  // libpqxx's receiver destructor does not throw (a failed UNLISTEN is a notice).
  conn_.reset();
}

void PostgresWorkWatch::add(const std::string& session) {
  if (seen_.insert(session).second) sessions_.push_back(session);
}

void PostgresWorkWatch::notified(const std::string& payload) {
  if (payload.empty())
    resync_ = true;  // A session id too long for a payload: the signal names no session.
  else
    add(payload);
}

WorkSignal PostgresWorkWatch::take() {
  WorkSignal out{std::move(sessions_), resync_};
  sessions_.clear();
  seen_.clear();
  resync_ = false;
  return out;
}

WorkSignal PostgresWorkWatch::wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (cancelled_.load()) return {};
    if (closed_()) throw Unavailable("a2 postgres watch_work: the store is closed");
    auto now = std::chrono::steady_clock::now();
    if (sweep_interval_.count() > 0 && now >= next_sweep_) {
      next_sweep_ = now + sweep_interval_;
      try {
        auto found = sweep_().indexed;
        if (!found.empty())
          observer_.log(LogLevel::info, "safety_poll_catch_up",
                        "a2 postgres watch_work: the safety sweep found work in " +
                            std::to_string(found.size()) + " session(s) no wake-up announced");
        for (auto& entry : found) add(entry.session_id);
      } catch (const Unavailable&) {
        resync_ = true;  // The sweep did not run: the worker pages through find_work again.
      }
    }
    if (!conn_ && now >= next_connect_) {
      try {
        listen();
        resync_ = true;  // Signals sent while no LISTEN was active are lost.
      } catch (...) {
        drop_connection();
        next_connect_ = now + kReconnectDelay;
      }
    }
    auto slice = std::min<std::chrono::steady_clock::duration>(kSlice, deadline - now);
    if (slice < std::chrono::steady_clock::duration::zero())
      slice = std::chrono::steady_clock::duration::zero();
    if (sweep_interval_.count() > 0) slice = std::min(slice, next_sweep_ - now);
    const auto micros = std::max<long long>(
        0, std::chrono::duration_cast<std::chrono::microseconds>(slice).count());
    if (conn_) {
      try {
        // Delivers what has arrived (without blocking when something is already pending),
        // else waits up to the slice.
        if (conn_->get().get_notifs() == 0 && !has_news() && micros > 0)
          conn_->get().await_notification(micros / 1000000, micros % 1000000);
      } catch (...) {
        // Lost: listen again at once (the loop's top), then report resync.
        drop_connection();
        next_connect_ = std::chrono::steady_clock::now();
        resync_ = true;
        continue;
      }
    } else if (!has_news() && micros > 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(micros));
    }
    if (has_news() && !cancelled_.load()) return take();
    if (std::chrono::steady_clock::now() >= deadline) return {};
  }
}

}  // namespace a2::postgres::detail
