// SPDX-License-Identifier: MIT
#pragma once

// The work index of the in-memory reference backend and its live signal
// (docs/semantics.md#work-discovery, #find_work, #watch_work). The memory store calls one of the
// index's three moves at each write, as the table of "Work discovery" says:
//   lower(S, t)   E := min(E, t), and a work signal for S: with lower_if_earlier the only
//                 moves that signal, so the writes that signal are exactly the writes that
//                 lower an entry;
//   lower_if_earlier(S, t)   a renewal's: E := min(E, t), signalling only when that moved E;
//   after_claim   the claim's row of the table (E := an exact time, or removed, or lower to now),
//                 never a signal (claims do not signal);
//   remove(S)     a clear.
// Included by a2/detail/memory_store.hpp.

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "a2/errors.hpp"
#include "a2/options.hpp"
#include "a2/results.hpp"
#include "a2/work_watch.hpp"

namespace a2::detail {

// The signals of one watch: the sessions signalled since its last wait(), each once, in the order
// first seen. Guarded by MemoryWorkSignals::mutex.
struct MemoryWatchQueue {
  std::vector<std::string> order;
  std::set<std::string> seen;
  bool cancelled = false;
  std::condition_variable arrived;  // Notified on a signal, on cancel() and on close.
};

// Delivery of work signals to the live watches of one store. Shared by the store and its watches,
// so a watch that outlives its store stays memory-safe (its wait throws Unavailable). Thread
// safety: every member is guarded by `mutex`; the store takes it after its own mutex, a watch
// takes only this one.
struct MemoryWorkSignals {
  std::mutex mutex;
  bool closed = false;
  std::vector<std::shared_ptr<MemoryWatchQueue>> watches;

  void signal(const std::string& session_id) {
    std::lock_guard lock(mutex);
    for (auto& w : watches) {
      if (!w->seen.insert(session_id).second) continue;  // Already waiting to be reported.
      w->order.push_back(session_id);
      w->arrived.notify_all();
    }
  }

  void close() {
    std::lock_guard lock(mutex);
    closed = true;
    for (auto& w : watches) w->arrived.notify_all();
  }
};

// A watch of the memory store (docs/semantics.md#watch_work). Signals arrive synchronously from
// the writes of the same process, so none is ever lost and `resync` is never set. The safety
// sweep is not run: on memory every writer is a2, so sweep_work() finds nothing by definition.
// Thread safety: as WorkWatch (wait() from one thread at a time; cancel(), cancelled() from any).
class MemoryWorkWatch final : public WorkWatch {
 public:
  explicit MemoryWorkWatch(std::shared_ptr<MemoryWorkSignals> signals)
      : signals_(std::move(signals)), queue_(std::make_shared<MemoryWatchQueue>()) {
    std::lock_guard lock(signals_->mutex);
    signals_->watches.push_back(queue_);
  }

  ~MemoryWorkWatch() override {
    std::lock_guard lock(signals_->mutex);
    std::erase(signals_->watches, queue_);
  }

  WorkSignal wait(std::chrono::milliseconds timeout) override {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::unique_lock lock(signals_->mutex);
    while (true) {
      if (signals_->closed) throw Unavailable("a2 memory watch_work: the store is closed");
      if (queue_->cancelled) return {};
      if (!queue_->order.empty()) {
        WorkSignal out{std::move(queue_->order), false};
        queue_->order.clear();
        queue_->seen.clear();
        return out;
      }
      if (queue_->arrived.wait_until(lock, deadline) == std::cv_status::timeout &&
          queue_->order.empty() && !signals_->closed && !queue_->cancelled)
        return {};
    }
  }

  void cancel() noexcept override {
    try {
      std::lock_guard lock(signals_->mutex);
      queue_->cancelled = true;
      queue_->arrived.notify_all();
    } catch (...) {
    }
  }

  bool cancelled() const noexcept override {
    try {
      std::lock_guard lock(signals_->mutex);
      return queue_->cancelled;
    } catch (...) {
      return false;
    }
  }

 private:
  std::shared_ptr<MemoryWorkSignals> signals_;
  std::shared_ptr<MemoryWatchQueue> queue_;
};

// The work index: at most one entry (session, at) per session, ordered by (at, session id
// bytewise). Thread safety: none of its own; the memory store calls it under its mutex.
class MemoryWorkIndex {
 public:
  MemoryWorkIndex() : signals_(std::make_shared<MemoryWorkSignals>()) {}

  // lower(E, t): E := min(E, t), and a work signal for the session (a write that lowers an entry
  // signals it, docs/semantics.md#watch_work).
  void lower(const std::string& session_id, std::int64_t t) {
    auto it = at_.find(session_id);
    if (it == at_.end() || t < it->second) put(session_id, t);
    signals_->signal(session_id);
  }

  // A renewal's lower(E, t), t the new lease end: a lease renewed to end before the entry makes
  // its event claimable sooner than the entry said. It signals only when it moved the entry: a
  // renewal that extends a lease lowers nothing (docs/semantics.md#work-discovery).
  void lower_if_earlier(const std::string& session_id, std::int64_t t) {
    auto it = at_.find(session_id);
    if (it != at_.end() && it->second <= t) return;
    put(session_id, t);
    signals_->signal(session_id);
  }

  // The claim's row of the table (claim_available, and the claim of claim_next), for a claim
  // without exclude_indexes (with them the entry is unchanged: do not call). `busy_at` is the
  // earliest lease end or available_at of the ready events the claim saw but did not claim,
  // `lease_end` the lease it gave, `stopped_at_limit` whether it claimed exactly max_events.
  void after_claim(const std::string& session_id, const ClaimResult& claim,
                   std::optional<std::int64_t> busy_at, std::int64_t lease_end,
                   bool stopped_at_limit, std::int64_t now) {
    switch (claim.verdict) {
      case ClaimVerdict::settled:
        remove(session_id);
        return;
      case ClaimVerdict::busy:
        put(session_id, claim.retry_at);
        return;
      case ClaimVerdict::claimed:
        if (stopped_at_limit) {  // The rest unseen: maybe claimable now.
          auto it = at_.find(session_id);
          if (it == at_.end() || now < it->second) put(session_id, now);
        } else {  // Exactly when the next claim can succeed.
          put(session_id, std::min(lease_end, busy_at.value_or(lease_end)));
        }
        return;
    }
  }

  // A clear: the session has no work until a write indexes it again.
  void remove(const std::string& session_id) {
    auto it = at_.find(session_id);
    if (it == at_.end()) return;
    order_.erase({it->second, it->first});
    at_.erase(it);
  }

  // docs/semantics.md#find_work: the entries after the cursor (exclusive), at_ms <= due_by_ms
  // when given, at most `limit`; `next` is the last entry of a full page.
  WorkPage page(const FindWorkRequest& request) const {
    WorkPage out;
    auto it = request.after ? order_.upper_bound({request.after->at_ms, request.after->session_id})
                            : order_.begin();
    for (; it != order_.end() && static_cast<std::int64_t>(out.sessions.size()) < request.limit;
         ++it) {
      if (request.due_by_ms && it->first > *request.due_by_ms) break;
      out.sessions.push_back({it->second, it->first});
    }
    if (static_cast<std::int64_t>(out.sessions.size()) == request.limit)
      out.next = WorkCursor{out.sessions.back().at_ms, out.sessions.back().session_id};
    return out;
  }

  std::unique_ptr<WorkWatch> watch() { return std::make_unique<MemoryWorkWatch>(signals_); }

  // The entries (session -> at), and putting a copy of them back (MemoryStore::restore_state):
  // no signal, the watches are left as they are.
  std::map<std::string, std::int64_t> entries() const { return at_; }
  void assign(const std::map<std::string, std::int64_t>& entries) {
    at_.clear();
    order_.clear();
    for (const auto& [session_id, at] : entries) put(session_id, at);
  }

  // The store closed: waiting watches wake and throw Unavailable.
  void close() { signals_->close(); }

 private:
  void put(const std::string& session_id, std::int64_t t) {
    remove(session_id);
    at_.emplace(session_id, t);
    order_.emplace(t, session_id);
  }

  std::map<std::string, std::int64_t> at_;                // Session -> at.
  std::set<std::pair<std::int64_t, std::string>> order_;  // (at, session), the page order.
  std::shared_ptr<MemoryWorkSignals> signals_;
};

}  // namespace a2::detail
