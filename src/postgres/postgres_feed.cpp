// SPDX-License-Identifier: MIT
#include "postgres/postgres_feed.hpp"

#include <algorithm>
#include <utility>

#include "a2/detail/constants.hpp"
#include "postgres/rows.hpp"

namespace a2::postgres::detail {
namespace {

// Receives NOTIFYs on the store's LISTEN connection.
class Receiver final : public pqxx::notification_receiver {
 public:
  Receiver(pqxx::connection_base& conn, Notifier& notifier)
      : pqxx::notification_receiver(conn, kNotifyChannel), notifier_(notifier) {}
  void operator()(const std::string& payload, int pid) override {
    notifier_.notified(payload, pid);
  }

 private:
  Notifier& notifier_;
};

constexpr auto kListenPoll = std::chrono::milliseconds(200);  // Stop latency of the thread.

}  // namespace

Notifier::Notifier(std::shared_ptr<ConnectionPool> pool, std::shared_ptr<const WakeSender> own)
    : pool_(std::move(pool)), own_(std::move(own)) {}

Notifier::~Notifier() { stop(); }

void Notifier::start() {
  std::lock_guard lock(mutex_);
  if (thread_.joinable() || stopped_.load()) return;
  thread_ = std::thread([this] { loop(); });
}

void Notifier::stop() {
  std::thread thread;
  {
    std::lock_guard lock(mutex_);
    stopped_.store(true);
    ++everyone_;
    thread.swap(thread_);
  }
  changed_.notify_all();
  if (thread.joinable()) thread.join();
}

void Notifier::subscribe(const std::string& session) {
  std::lock_guard lock(mutex_);
  ++sessions_[session].feeds;
  feeds_.fetch_add(1);
}

void Notifier::unsubscribe(const std::string& session) {
  std::lock_guard lock(mutex_);
  auto it = sessions_.find(session);
  if (it == sessions_.end()) return;
  feeds_.fetch_sub(1);
  if (--it->second.feeds == 0) sessions_.erase(it);
}

std::uint64_t Notifier::generation_locked(const std::string& session) const {
  auto it = sessions_.find(session);
  return everyone_ + (it == sessions_.end() ? 0 : it->second.generation);
}

std::uint64_t Notifier::generation(const std::string& session) {
  std::lock_guard lock(mutex_);
  return generation_locked(session);
}

void Notifier::wait(const std::string& session, std::uint64_t seen,
                    std::chrono::steady_clock::time_point until) {
  std::unique_lock lock(mutex_);
  changed_.wait_until(lock, until, [&] { return generation_locked(session) != seen; });
}

void Notifier::wake_all() {
  {
    std::lock_guard lock(mutex_);
    ++everyone_;
  }
  changed_.notify_all();
}

void Notifier::notified(const std::string& payload, int sender_pid) {
  // The store's own notifier announces the store's own writes, which woke their feeds here as
  // they committed (written()): reading again for them would double every feed's reads.
  if (sender_pid != 0 && sender_pid == own_->backend_pid()) return;
  wake(payload);
}

void Notifier::written(const std::string& session) {
  if (feeds_.load() == 0) return;
  wake(session);
}

void Notifier::appended(const std::string& session, const std::vector<StoredEvent>& events) {
  if (feeds_.load() == 0) return;
  {
    std::lock_guard lock(mutex_);
    auto it = sessions_.find(session);
    if (it == sessions_.end()) return;  // No feed of this session here.
    auto& handed = it->second.handed;
    for (const auto& e : events) handed.insert_or_assign(e.index, static_cast<const Event&>(e));
    while (handed.size() > kHandedEvents) handed.erase(handed.begin());
    ++it->second.generation;
  }
  changed_.notify_all();
}

void Notifier::written_unhanded(const std::string& session) {
  if (feeds_.load() == 0) return;
  {
    std::lock_guard lock(mutex_);
    auto it = sessions_.find(session);
    if (it == sessions_.end()) return;
    it->second.handed.clear();
    ++it->second.generation;
    ++it->second.unhanded;
  }
  changed_.notify_all();
}

Notifier::Recent Notifier::recent_after(const std::string& session, std::int64_t cursor) const {
  Recent out;
  std::lock_guard lock(mutex_);
  out.generation = generation_locked(session);
  out.unhanded = everyone_;
  auto it = sessions_.find(session);
  if (it == sessions_.end()) return out;
  out.unhanded += it->second.unhanded;
  const auto& handed = it->second.handed;
  const auto beyond = handed.upper_bound(cursor);
  for (auto e = beyond; e != handed.end() && e->first == cursor + 1 &&
                        out.events.size() < static_cast<std::size_t>(a2::detail::kFeedPageSize);
       ++e, ++cursor)
    out.events.push_back(e->second);
  out.gap = out.events.empty() && beyond != handed.end();
  return out;
}

void Notifier::wake(const std::string& session, bool handed) {
  {
    std::lock_guard lock(mutex_);
    auto it = sessions_.find(session);
    if (it != sessions_.end()) {
      ++it->second.generation;
      if (!handed) ++it->second.unhanded;
    } else {
      // No feed of this session here. (Session ids of 8000 bytes or more are notified as their
      // md5, schema.sql a2_notify; a feed's session id is at most kMaxSessionIdBytes, so such a
      // payload, or any other 32-byte one, is never for a feed here: 32 hex digits is a common
      // form of session id, and waking every feed for it made each of them read.)
      return;
    }
  }
  changed_.notify_all();
}

void Notifier::loop() {
  while (!stopped_.load()) {
    try {
      auto conn =
          pool_->connect(std::chrono::steady_clock::now() + pool_->settings().command_timeout);
      Receiver receiver(conn->get(), *this);
      // Notifications sent while no LISTEN was active are lost: let every feed re-read.
      wake_all();
      while (!stopped_.load()) {
        conn->get().await_notification(0, std::chrono::microseconds(kListenPoll).count());
      }
    } catch (...) {
      // LISTEN unavailable: the feeds' safety poll carries on; retry after a pause.
      std::unique_lock lock(mutex_);
      changed_.wait_for(lock, kReconnectDelay, [&] { return stopped_.load(); });
    }
  }
}

PostgresFeed::PostgresFeed(std::shared_ptr<ConnectionPool> pool, std::shared_ptr<Notifier> notifier,
                           std::string session_id, std::int64_t after_index,
                           std::chrono::milliseconds safety_poll)
    : pool_(std::move(pool)),
      notifier_(std::move(notifier)),
      session_id_(std::move(session_id)),
      cursor_(after_index),
      safety_poll_(std::max(safety_poll, std::chrono::milliseconds(1))) {
  notifier_->subscribe(session_id_);
}

PostgresFeed::~PostgresFeed() { notifier_->unsubscribe(session_id_); }

std::vector<Event> PostgresFeed::read_after(std::int64_t cursor) {
  return pool_->run("feed", [&](Executor& x) {
    return events_of(
        x.exec(a2::detail::sql::kReadEventsPage, session_id_, cursor, a2::detail::kFeedPageSize));
  });
}

std::vector<Event> PostgresFeed::next(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    if (cancelled_.load()) return {};
    if (notifier_->stopped()) throw Unavailable("a2 postgres feed: the store is closed");
    // Taken before the read, so a wake-up during the read is not lost.
    auto recent = notifier_->recent_after(session_id_, cursor_.load());
    // This store's own appends that continue the cursor were handed over: no read.
    if (!recent.events.empty()) {
      by_poll_ = false;
      cursor_.store(recent.events.back().index);
      return std::move(recent.events);
    }
    // Caught up with what was handed, the last read found nothing new after it, and nothing
    // else was announced since: a read would find nothing (and wait for a pooled connection
    // beside the writers to learn it). A read that found events is followed by another (more
    // may have committed meanwhile), as a drain goes. A wait that ended by the safety poll
    // ends at read_at_ + safety_poll_, so the last condition covers it.
    const auto now = std::chrono::steady_clock::now();
    if (!read_unhanded_ || *read_unhanded_ != recent.unhanded || recent.gap || !drained_ ||
        now - read_at_ >= safety_poll_) {
      read_unhanded_ = recent.unhanded;
      read_at_ = now;
      auto events = read_after(cursor_.load());
      if (by_poll_ && !events.empty())
        observer_.log(LogLevel::info, "safety_poll_catch_up",
                      "a2 postgres feed: the safety poll found " + std::to_string(events.size()) +
                          " event(s) of session '" + session_id_ +
                          "' no notification announced");
      by_poll_ = false;
      drained_ = events.empty();
      if (!events.empty()) {
        cursor_.store(events.back().index);
        return events;
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) return {};
    const auto until = std::min(deadline, read_at_ + safety_poll_);
    notifier_->wait(session_id_, recent.generation, until);
    by_poll_ = until < deadline && notifier_->generation(session_id_) == recent.generation;
  }
}

void PostgresFeed::cancel() noexcept {
  cancelled_.store(true);
  notifier_->wake_all();
}

}  // namespace a2::postgres::detail
