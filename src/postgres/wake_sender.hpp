// SPDX-License-Identifier: MIT
#pragma once

// The wake-ups of a store's committed writes, sent off the commit path
// (docs/postgres-layout.md#notifications-and-feeds). A NOTIFY inside a write's transaction
// serializes every commit of the database, so the write functions only say which wake-ups a
// write owes (r_wake, schema.sql a2_owe_wake) and the store sends them from one connection of its
// own, outside the pool: a thread runs rounds of sql/send_wakes.sql, one statement (one
// transaction) per round, each session once per channel; sessions that writes add while a
// round is in flight go in the next one, paced by RoundPacer.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "a2/observe.hpp"
#include "postgres/connection_pool.hpp"
#include "postgres/result.hpp"

namespace a2::postgres::detail {

// The flags of r_wake (schema.sql a2_owe_wake).
inline constexpr int kWakeFeeds = 1;  // a2_events: the session's feeds.
inline constexpr int kWakeWork = 2;   // a2_work: the session's work signal.

// The notifier connection's application_name is this, a space and the store's schema
// (operators and tests find it in pg_stat_activity by it).
inline constexpr const char* kNotifierApplicationName = "a2 notifier";

// The most sessions waiting for a round; a write beyond it while the notifier cannot send
// (the server is unreachable) drops its wake-up.
inline constexpr std::size_t kMaxPendingWakes = 100000;

// When the notifier's next round may start. A round starts at least kRoundInterval after the
// previous one started, so a lone writer's writes share rounds; when that round had to wait for
// its turn (wake-ups were queued before it could start: the writes keep the notifier busy), at
// least kBusyRoundInterval after it. Each round costs a round trip and a transaction of its own,
// whose wake-ups of two processes slow a lone writer on a small machine
// (docs/postgres-layout.md#notifications-and-feeds, Pacing), so a steady stream of writes gets
// at most one round per kBusyRoundInterval; a write after a pause is still sent at once. Not
// thread-safe (the notifier's thread owns it).
class RoundPacer {
 public:
  using Time = std::chrono::steady_clock::time_point;
  static constexpr auto kRoundInterval = std::chrono::milliseconds(1);
  static constexpr auto kBusyRoundInterval = std::chrono::milliseconds(3);

  // The earliest start of the next round (the epoch before the first).
  Time next() const noexcept { return next_; }
  // A round starts at `now`; `queued_since` is when its first wake-up was queued.
  void started(Time now, Time queued_since) noexcept {
    next_ = now + (queued_since < next_ ? kBusyRoundInterval : kRoundInterval);
  }

 private:
  Time next_{};
};

// The flags of the r_wake column `column` of a write's reply, in its row `row` (0 when it names
// none).
int wake_flags(const Result& rows, Result::size_type column, Result::size_type row = 0) noexcept;

// Thread-safe. The thread starts with the first start() or add() and connects at once, so that
// the connection is up before the first wake-up is owed (a new connection takes a few round
// trips, tens of milliseconds on a loaded server); a lost connection is replaced (a failed round is
// sent once more on the new one, then dropped), the delay between failed attempts doubling from 10
// ms to kReconnectDelay. Nothing a writer does waits for it: add() only queues. A wake-up that
// cannot be sent is dropped (a warning is logged); listeners then catch up at their safety poll or
// sweep.
class WakeSender {
 public:
  explicit WakeSender(std::shared_ptr<ConnectionPool> pool);
  ~WakeSender();
  WakeSender(const WakeSender&) = delete;
  WakeSender& operator=(const WakeSender&) = delete;

  // Starts the thread (which connects) unless it runs; the store calls it at every write, so
  // a process that claims before it releases or completes has its notifier connected by then.
  // Never blocks on I/O and never throws; a no-op after stop().
  void start() noexcept;
  // Queues the wake-ups `flags` (kWakeFeeds | kWakeWork) of session s for the next round.
  // Never blocks on I/O and never throws; a no-op after stop().
  void add(const std::string& s, int flags) noexcept;
  // Sends what is queued (one last round, when connected), then stops the thread and closes
  // the connection. Idempotent.
  void stop();
  // The backend pid of the notifier's connection (0 before it first connected): listeners in
  // this process skip its notifications, whose feeds the writes woke here already
  // (Notifier::written). Thread-safe.
  int backend_pid() const noexcept { return backend_pid_.load(); }

 private:
  // Sessions and their flags in the order first queued (signals keep write order), each once.
  struct Batch {
    std::vector<std::pair<std::string, int>> sessions;
    std::chrono::steady_clock::time_point since{};  // When the first was queued.
    std::unordered_map<std::string, std::size_t> position;
    // Adds `flags` to s; false when s is new and the batch is full.
    bool add(const std::string& s, int flags);
  };
  // Starts the thread (mutex_ held); false when it cannot (no memory, no thread).
  bool start_locked() noexcept;
  void loop();
  // Connects by `deadline` unless connected (a connection the server closed is replaced);
  // throws pqxx errors.
  void connect(std::chrono::steady_clock::time_point deadline);
  // Closes the connection and forgets its backend pid.
  void drop_connection() noexcept;
  // Connects, and runs a round that is rolled back (nothing is sent): the first real round is
  // then as fast as the others. Gives up after kWarmUpTimeout (1 s). Throws a2::Error or pqxx
  // errors.
  void warm_up();
  // One round on the connection (connecting first when there is none); false when it failed.
  bool send(const Batch& batch);
  void drop(std::size_t sessions, const std::string& why);

  std::shared_ptr<ConnectionPool> pool_;
  std::mutex mutex_;
  std::condition_variable changed_;
  Batch pending_;
  bool stopping_ = false;
  std::atomic<bool> started_{false};  // thread_ was started: start() need not lock.
  std::thread thread_;
  a2::detail::CapturedObserver observer_;  // The first start()'s or add()'s (a write's) observer.
  std::unique_ptr<Connection> conn_;       // The loop's own.
  std::atomic<int> backend_pid_{0};        // conn_'s, kept after it is gone.
  std::string last_error_;                 // The loop's: why the last round failed.
};

}  // namespace a2::postgres::detail
