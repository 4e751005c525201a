// SPDX-License-Identifier: MIT
#pragma once

// The work signal of the Postgres backend (Store::watch_work, docs/semantics.md#watch_work): a
// LISTEN on the a2_work channel over a connection of the watch's own, read by wait() itself in
// short slices (so cancel() is seen within one slice), plus the safety sweep every
// sweep_interval.

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "a2/observe.hpp"
#include "a2/results.hpp"
#include "a2/work_watch.hpp"
#include "postgres/connection_pool.hpp"

namespace a2::postgres::detail {

// The channel of the work signals (schema.sql): the payload is the session id, or '' when the
// id is 8000 bytes or longer (too long for a NOTIFY payload), which names no session.
inline constexpr const char* kWorkChannel = "a2_work";

class PostgresWorkWatch final : public WorkWatch {
 public:
  // `sweep` runs one sweep_work pass; `closed` tells whether the store was closed. Connects and
  // listens before returning (throws Unavailable if it cannot), so every signal sent after
  // watch_work() returns is seen.
  PostgresWorkWatch(std::shared_ptr<ConnectionPool> pool, std::function<SweepResult()> sweep,
                    std::function<bool()> closed, std::chrono::milliseconds sweep_interval);
  ~PostgresWorkWatch() override;

  WorkSignal wait(std::chrono::milliseconds timeout) override;
  void cancel() noexcept override { cancelled_.store(true); }
  bool cancelled() const noexcept override { return cancelled_.load(); }

  // Called by the LISTEN receiver for each notification.
  void notified(const std::string& payload);

 private:
  class Listener;
  void listen();  // Connects and LISTENs; throws pqxx errors.
  void drop_connection() noexcept;
  bool has_news() const { return resync_ || !sessions_.empty(); }
  WorkSignal take();
  void add(const std::string& session);

  std::shared_ptr<ConnectionPool> pool_;
  std::function<SweepResult()> sweep_;
  std::function<bool()> closed_;
  std::chrono::milliseconds sweep_interval_;
  std::chrono::steady_clock::time_point next_sweep_;
  const a2::detail::CapturedObserver observer_ = a2::detail::CapturedObserver::current();
  std::chrono::steady_clock::time_point next_connect_;
  std::unique_ptr<Connection> conn_;
  std::unique_ptr<Listener> listener_;
  std::vector<std::string> sessions_;  // Signalled since the last wait, in the order first seen.
  std::unordered_set<std::string> seen_;
  bool resync_ = false;
  std::atomic<bool> cancelled_{false};
};

}  // namespace a2::postgres::detail
