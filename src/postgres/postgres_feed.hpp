// SPDX-License-Identifier: MIT
#pragma once

// Live feeds of the Postgres backend: the store's own writes wake its feeds of the written
// session in the process, as soon as they committed (its appends and completions hand their
// events over, so a feed at the head takes them without a read); one LISTEN connection per
// store (a background thread, started by the first subscribe) wakes them for the writes of every
// other client (it skips the notifications of the store's own notifier, whose writes woke the
// feeds already); every feed also polls at the safety cadence, so a lost notification only
// delays.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "a2/feed.hpp"
#include "a2/observe.hpp"
#include "a2/types.hpp"
#include "postgres/connection_pool.hpp"
#include "postgres/wake_sender.hpp"

namespace a2::postgres::detail {

inline constexpr const char* kNotifyChannel = "a2_events";
// The most events of its own appends a store keeps per session with a feed in the process
// (Notifier::appended): a feed further behind reads.
inline constexpr std::size_t kHandedEvents = 256;
// Feeds follow valid session ids only, all shorter than the ids a2_notify sends as their md5.
static_assert(a2::kMaxSessionIdBytes < 8000, "schema.sql a2_notify: md5 payloads from 8000 bytes");

// Wake-up bookkeeping shared by a store's feeds. Thread-safe.
class Notifier {
 public:
  // `own` is the store's notifier: its notifications announce writes that written() announced.
  Notifier(std::shared_ptr<ConnectionPool> pool, std::shared_ptr<const WakeSender> own);
  ~Notifier();
  Notifier(const Notifier&) = delete;
  Notifier& operator=(const Notifier&) = delete;

  // Starts the LISTEN thread if it is not running.
  void start();
  // Stops the thread and wakes every waiter. Idempotent.
  void stop();
  bool stopped() const noexcept { return stopped_.load(); }

  void subscribe(const std::string& session);
  void unsubscribe(const std::string& session);

  // A counter that changes whenever a wake-up for `session` (or for everyone) arrives.
  std::uint64_t generation(const std::string& session);
  // Waits until generation(session) != seen, wake_all(), stop() or `until`.
  void wait(const std::string& session, std::uint64_t seen,
            std::chrono::steady_clock::time_point until);
  // Wakes every waiter (cancel, reconnect, an unrecognised payload).
  void wake_all();
  // Called for each notification: its payload and the backend pid that sent it.
  void notified(const std::string& payload, int sender_pid);
  // Called by the store for each of its own writes that wakes feeds, once it committed: wakes
  // this store's feeds of `session` without waiting for the notification. Cheap when no feed
  // is open (one atomic load).
  void written(const std::string& session);
  // The same for the store's own appends and completions, with their new events (the appended
  // ones, a completion's children): a feed whose cursor they continue takes them from here
  // instead of reading them (recent_after()). Kept for sessions with a feed here, at most
  // kHandedEvents each (the lowest indexes go first).
  void appended(const std::string& session, const std::vector<StoredEvent>& events);
  // The same, and drops the session's handed events, so its feeds read: the store's own clear (a
  // feed behind the new boundary then resumes at the marker), and a write whose reply could not
  // be decoded (what it added is unknown here).
  void written_unhanded(const std::string& session);
  // What a feed of `session` at `cursor` knows before it decides to read, under one lock.
  struct Recent {
    std::uint64_t generation = 0;  // generation(session).
    // Changes whenever a wake-up for `session` (or for everyone) arrives that did not hand its
    // events over (a notification, a clear, a reply that could not be decoded, a reconnect,
    // cancel): a feed that read after the last change and took every handed event has nothing
    // else to read.
    std::uint64_t unhanded = 0;
    // The handed events that continue `cursor` without a gap (cursor + 1, + 2, ...), at most
    // kFeedPageSize; empty when the next one was not handed here.
    std::vector<Event> events;
    // Events beyond the cursor were handed but not the next one: something between them was
    // not (another store's write, a write whose outcome is unknown, or the oldest handed events
    // were dropped): only a read finds it.
    bool gap = false;
  };
  Recent recent_after(const std::string& session, std::int64_t cursor) const;

 private:
  void loop();
  std::uint64_t generation_locked(const std::string& session) const;
  // Bumps the session's generation, and its unhanded one unless `handed`.
  void wake(const std::string& session, bool handed = false);

  std::shared_ptr<ConnectionPool> pool_;
  std::shared_ptr<const WakeSender> own_;
  std::atomic<std::size_t> feeds_{0};  // Open feeds (subscribe - unsubscribe).
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  struct Entry {
    std::size_t feeds = 0;
    std::uint64_t generation = 0;
    std::uint64_t unhanded = 0;            // The wake-ups that handed nothing over.
    std::map<std::int64_t, Event> handed;  // By index: appended()'s events.
  };
  std::map<std::string, Entry> sessions_;
  std::uint64_t everyone_ = 0;
  std::thread thread_;
  std::atomic<bool> stopped_{false};
};

// One feed (a2::Feed): catch-up and live events by polling the read_feed_page statement.
class PostgresFeed final : public Feed {
 public:
  PostgresFeed(std::shared_ptr<ConnectionPool> pool, std::shared_ptr<Notifier> notifier,
               std::string session_id, std::int64_t after_index,
               std::chrono::milliseconds safety_poll);
  ~PostgresFeed() override;

  std::vector<Event> next(std::chrono::milliseconds timeout) override;
  void cancel() noexcept override;
  bool cancelled() const noexcept override { return cancelled_.load(); }
  std::int64_t cursor() const noexcept override { return cursor_.load(); }

 private:
  std::vector<Event> read_after(std::int64_t cursor);

  std::shared_ptr<ConnectionPool> pool_;
  std::shared_ptr<Notifier> notifier_;
  std::string session_id_;
  std::atomic<std::int64_t> cursor_;
  std::chrono::milliseconds safety_poll_;
  bool by_poll_ = false;  // The last wait ended by the safety poll, not by a notification.
  // The unhanded generation before the last read (none yet) and when that read began: next()
  // reads again only after an unhanded wake-up, a gap in the handed events, a read that found
  // events (drained_) or a safety poll's time since that read.
  std::optional<std::uint64_t> read_unhanded_;
  std::chrono::steady_clock::time_point read_at_{};
  bool drained_ = true;  // The last read found nothing (or none was made yet).
  const a2::detail::CapturedObserver observer_ = a2::detail::CapturedObserver::current();
  std::atomic<bool> cancelled_{false};
};

}  // namespace a2::postgres::detail
