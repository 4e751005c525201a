// SPDX-License-Identifier: MIT
#include "postgres/wake_sender.hpp"

#include <algorithm>
#include <charconv>
#include <exception>
#include <utility>
#include <vector>

#include "a2/embedded/sql_files.hpp"
#include "postgres/calls/params.hpp"

namespace a2::postgres::detail {
namespace {

constexpr auto kFirstRetryDelay = std::chrono::milliseconds(10);
// The warm-up (connecting, and a round that is rolled back) gives up after this: close() waits
// for it at most this long. A notifier that could not warm up connects at its first round, by
// command_timeout.
constexpr auto kWarmUpTimeout = std::chrono::milliseconds(1000);
// The notifier's rounds never spin (docs/semantics.md#spin-wait): they run beside the store's
// calls, whose waits the one spinning thread of the process is for.
constexpr a2::detail::SpinPacer* kNoSpin = nullptr;

}  // namespace

int wake_flags(const Result& rows, Result::size_type column, Result::size_type row) noexcept {
  if (row < 0 || row >= rows.size() || column >= rows.columns() || rows[row][column].is_null())
    return 0;
  const char* text = rows[row][column].c_str();
  int flags = 0;
  std::from_chars(text, text + rows[row][column].size(), flags);  // '' (none): stays 0.
  return flags & (kWakeFeeds | kWakeWork);
}

bool WakeSender::Batch::add(const std::string& s, int flags) {
  auto [it, added] = position.try_emplace(s, sessions.size());
  if (!added) {
    sessions[it->second].second |= flags;
    return true;
  }
  if (sessions.size() >= kMaxPendingWakes) {
    position.erase(it);
    return false;
  }
  sessions.emplace_back(s, flags);
  return true;
}

WakeSender::WakeSender(std::shared_ptr<ConnectionPool> pool) : pool_(std::move(pool)) {}

WakeSender::~WakeSender() { stop(); }

bool WakeSender::start_locked() noexcept {
  if (thread_.joinable()) return true;
  try {
    observer_ = a2::detail::CapturedObserver::current();
    thread_ = std::thread([this] { loop(); });
  } catch (...) {
    return false;  // No memory or no thread: the next write tries again.
  }
  started_.store(true, std::memory_order_release);
  return true;
}

void WakeSender::start() noexcept {
  if (started_.load(std::memory_order_acquire)) return;
  std::lock_guard lock(mutex_);
  if (!stopping_) (void)start_locked();
}

void WakeSender::add(const std::string& s, int flags) noexcept {
  if (flags == 0) return;
  bool first = false;
  try {
    std::lock_guard lock(mutex_);
    if (stopping_ || !start_locked()) return;
    first = pending_.sessions.empty();
    // Full (the notifier cannot send): dropped.
    if (!pending_.add(s, flags)) return;
    if (first) pending_.since = std::chrono::steady_clock::now();
  } catch (...) {
    return;  // No memory or no thread: the wake-up is dropped, as when it cannot be sent.
  }
  if (first) changed_.notify_one();  // Otherwise the loop has not gone to sleep yet.
}

void WakeSender::stop() {
  std::thread thread;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    thread.swap(thread_);
  }
  changed_.notify_all();
  if (thread.joinable()) thread.join();
}

void WakeSender::drop(std::size_t sessions, const std::string& why) {
  observer_.log(LogLevel::warning, "notify_dropped",
                "a2 postgres notify: dropped the wake-ups of " + std::to_string(sessions) +
                    " session(s) (" + why + "); their listeners catch up at the safety poll");
}

void WakeSender::drop_connection() noexcept {
  conn_.reset();
  backend_pid_.store(0);  // A pid the server may give to another client's connection.
}

void WakeSender::connect(std::chrono::steady_clock::time_point deadline) {
  // A connection the server closed while idle (a terminated backend) is replaced before the
  // round, not by a failed round.
  if (conn_ && !conn_->idle_alive()) drop_connection();
  if (conn_) return;
  conn_ = pool_->connect(deadline,
                         std::string(kNotifierApplicationName) + " " + pool_->settings().schema);
  backend_pid_.store(conn_->get().backendpid());
}

void WakeSender::warm_up() {
  const auto deadline =
      std::chrono::steady_clock::now() +
      std::min<std::chrono::milliseconds>(kWarmUpTimeout, pool_->settings().command_timeout);
  connect(deadline);
  // A round in a transaction that is rolled back sends nothing (a notification goes out at
  // commit), but prepares the statement and compiles the functions it calls: about 10 ms the
  // first real round would otherwise take.
  const std::vector<std::string> none{"a2 notifier warm-up"};
  pool_->run_on(*conn_, "notify", deadline, kNoSpin, [&](Executor& x) {
    x.exec_command("BEGIN");
    try {
      x.exec(a2::detail::sql::kSendWakes, calls::text_array(none), calls::text_array(none));
      x.exec_command("ROLLBACK");
    } catch (...) {
      conn_->mark_broken();  // Perhaps still in the transaction: not used again.
      throw;
    }
    return 0;
  });
}

bool WakeSender::send(const Batch& batch) {
  std::vector<std::string> feeds;
  std::vector<std::string> work;
  for (const auto& [s, flags] : batch.sessions) {
    if (flags & kWakeFeeds) feeds.push_back(s);
    if (flags & kWakeWork) work.push_back(s);
  }
  const auto& settings = pool_->settings();
  try {
    connect(std::chrono::steady_clock::now() + settings.command_timeout);
    pool_->run_on(*conn_, "notify", std::chrono::steady_clock::now() + settings.command_timeout,
                  kNoSpin, [&](Executor& x) {
                    return x.exec(a2::detail::sql::kSendWakes, calls::text_array(feeds),
                                  calls::text_array(work));
                  });
    return true;
  } catch (const std::exception& e) {
    last_error_ = e.what();
  } catch (...) {
    last_error_ = "unknown error";
  }
  if (conn_ && conn_->broken()) drop_connection();
  return false;
}

void WakeSender::loop() {
  auto delay = kFirstRetryDelay;
  bool failing = false;  // The last round failed: a failed round now is dropped, not retried.
  RoundPacer pacer;
  try {
    warm_up();  // Now, before the first wake-up is owed.
  } catch (...) {
    if (conn_ && conn_->broken()) drop_connection();  // The first round connects again.
  }
  std::unique_lock lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return stopping_ || !pending_.sessions.empty(); });
    if (pending_.sessions.empty()) break;  // Stopping with nothing to send.
    if (!stopping_ && std::chrono::steady_clock::now() < pacer.next()) {
      changed_.wait_until(lock, pacer.next(), [&] { return stopping_; });
      continue;
    }
    pacer.started(std::chrono::steady_clock::now(), pending_.since);
    Batch batch = std::exchange(pending_, Batch{});
    const bool last = stopping_;
    lock.unlock();
    // The last round (at close) goes out only on a live connection: no reconnect at close.
    const bool tried = !last || conn_ != nullptr;
    const bool sent = tried && send(batch);
    lock.lock();
    if (sent) {
      failing = false;
      delay = kFirstRetryDelay;
      if (last) break;
      continue;
    }
    if (failing || last) {
      const std::size_t n = batch.sessions.size();
      lock.unlock();
      drop(n, tried ? last_error_ : "the store closed while the notifier was not connected");
      lock.lock();
      if (last) break;
    } else {
      // Once more on a new connection, ahead of what arrived meanwhile (signals keep write
      // order).
      for (const auto& [s, flags] : pending_.sessions) (void)batch.add(s, flags);
      pending_ = std::move(batch);
      failing = true;
    }
    changed_.wait_for(lock, delay, [&] { return stopping_; });
    delay = std::min<std::chrono::milliseconds>(delay * 2, kReconnectDelay);
  }
  lock.unlock();
  drop_connection();
}

}  // namespace a2::postgres::detail
