// SPDX-License-Identifier: MIT
#pragma once

// The in-memory reference backend (docs/semantics.md#the-reference-backend): the whole contract on
// plain standard containers, no server, nothing persisted. It is the backend the Redis and Postgres
// stores are compared against, so it is written for clarity: every operation states its verdicts in
// the contract's order, and derived sets (ready events, lane heads) are computed from the stored
// rows instead of being maintained incrementally.
//
// Included at the end of a2/memory.hpp; use a2::memory::open().
//
// Why one file of ~1000 lines: it is the executable reading of docs/semantics.md, one method per
// operation in the order of that document, sharing one session model and one lock. Splitting the
// operations apart would separate each verdict from the state it reads; the shared rules (input
// checks, row building, JSON text, error wording) already live in their own headers.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "a2/detail/constants.hpp"
#include "a2/detail/contract_errors.hpp"
#include "a2/detail/json_text.hpp"
#include "a2/detail/memory_work_index.hpp"
#include "a2/detail/rows.hpp"
#include "a2/errors.hpp"
#include "a2/feed.hpp"
#include "a2/memory.hpp"
#include "a2/store.hpp"
#include "a2/types.hpp"

namespace a2::detail {

// One reducer checkpoint as stored: {index, state, updatedAt}.
struct MemoryCheckpoint {
  std::int64_t index = 0;
  Json state;
  std::int64_t updated_at = 0;
};

// The checkpoints of one (session, reducer).
struct MemoryReducer {
  std::optional<MemoryCheckpoint> head;              // The newest checkpoint.
  std::map<std::int64_t, MemoryCheckpoint> history;  // Older checkpoints, kept while pinned.
  std::map<std::int64_t, std::int64_t> pin_counts;   // Checkpoint index -> events pinning it.
};

// One session. Events of every lifetime not yet reclaimed live in `events`; the current lifetime
// is the part with index >= clear_index.
struct MemorySession {
  std::int64_t head = 0;                       // Highest index ever assigned.
  std::int64_t clear_index = 0;                // Latest clear marker; 0 = never cleared.
  std::map<std::int64_t, StoredEvent> events;  // Rows by index (clear_index never set here).
  // Unfinished events of the current lifetime (index > clear_index, processed_at null),
  // dead letters and lane-blocked events included. A clear empties it.
  std::set<std::int64_t> pending;
  // Event index -> the checkpoints (reducer, checkpoint index) it pins.
  std::map<std::int64_t, std::set<std::pair<std::string, std::int64_t>>> pins;
  std::map<std::string, MemoryReducer> reducers;
};

// The owner record of an event id: which (session, index) holds it.
struct MemoryOwner {
  std::string session_id;
  std::int64_t index = 0;
};

struct MemoryPresenceEntry {
  Json state;
  std::int64_t expires_at = 0;
};

// Everything a store holds, shared with its feeds so that a feed stays memory-safe even if it
// outlives the store. Every member is guarded by `mutex`.
struct MemoryCore {
  std::mutex mutex;
  std::condition_variable changed;  // Notified when events are added and on close.
  bool closed = false;
  std::map<std::string, MemorySession> sessions;
  std::unordered_map<std::string, MemoryOwner> owners;  // Global: event id -> owner.
  std::map<std::string, std::map<std::string, MemoryPresenceEntry>> presence;
  MemoryWorkIndex work;  // docs/semantics.md#work-discovery.

  // Public events of `session_id` with index > after and >= clear_index, ascending, at most
  // `limit`. Caller holds `mutex`.
  std::vector<Event> events_after(const std::string& session_id, std::int64_t after,
                                  std::size_t limit) const {
    std::vector<Event> out;
    auto it = sessions.find(session_id);
    if (it == sessions.end()) return out;
    const MemorySession& s = it->second;
    auto row = s.events.lower_bound(std::max(after + 1, s.clear_index));
    for (; row != s.events.end() && out.size() < limit; ++row) out.push_back(row->second);
    return out;
  }
};

// A copy of what a memory store holds: rows, owners, presence and the work index's entries. Not
// its feeds, watches, clock or id source. For a test that must take back writes: the concurrent
// model check (conformance/model/concurrent_check.cpp) restores one at each backtrack of its
// search instead of replaying its whole history.
struct MemoryStateCopy {
  std::map<std::string, MemorySession> sessions;
  std::unordered_map<std::string, MemoryOwner> owners;
  std::map<std::string, std::map<std::string, MemoryPresenceEntry>> presence;
  std::map<std::string, std::int64_t> work;
};

// A live feed: catch-up then new events, woken by the store's condition variable.
// Thread safety: next() from one thread at a time; cancel(), cancelled(), cursor() from any.
// Destroy it before its store (Feed's contract); one that outlives the store is still safe and
// throws Unavailable from next().
class MemoryFeed final : public Feed {
 public:
  MemoryFeed(std::shared_ptr<MemoryCore> core, std::string session_id, std::int64_t after_index)
      : core_(std::move(core)), session_id_(std::move(session_id)), cursor_(after_index) {}

  std::vector<Event> next(std::chrono::milliseconds timeout) override {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::unique_lock lock(core_->mutex);
    while (true) {
      if (core_->closed) throw Unavailable("a2 feed: the store is closed");
      if (cancelled_.load()) return {};
      auto batch = core_->events_after(session_id_, cursor_.load(), kFeedPageSize);
      if (!batch.empty()) {
        cursor_.store(batch.back().index);
        return batch;
      }
      if (core_->changed.wait_until(lock, deadline) == std::cv_status::timeout) {
        // One last look: a notification may have raced the deadline.
        if (core_->closed) throw Unavailable("a2 feed: the store is closed");
        if (cancelled_.load()) return {};
        batch = core_->events_after(session_id_, cursor_.load(), kFeedPageSize);
        if (!batch.empty()) cursor_.store(batch.back().index);
        return batch;
      }
    }
  }

  void cancel() noexcept override {
    cancelled_.store(true);
    try {
      // Taking the mutex orders this after a next() that checked the flag and is about to wait.
      std::lock_guard lock(core_->mutex);
    } catch (...) {
    }
    core_->changed.notify_all();
  }
  bool cancelled() const noexcept override { return cancelled_.load(); }
  std::int64_t cursor() const noexcept override { return cursor_.load(); }

 private:
  std::shared_ptr<MemoryCore> core_;
  std::string session_id_;
  std::atomic<std::int64_t> cursor_;
  std::atomic<bool> cancelled_{false};
};

// The in-memory Store. Thread safety: one std::mutex per store (MemoryCore::mutex) is held for
// the whole of every operation, so each operation is atomic and all of them are linearizable;
// the clock and the IdSource are called under it. Feeds share the mutex.
class MemoryStore final : public Store {
 public:
  MemoryStore(std::shared_ptr<Clock> clock, std::shared_ptr<IdSource> ids,
              std::string clear_event_type = kClearEventType, ObserveOptions observe = {})
      : Store(std::move(clock), std::move(ids), "memory", std::move(observe)),
        clear_event_type_(std::move(clear_event_type)),
        core_(std::make_shared<MemoryCore>()) {}

  ~MemoryStore() override {
    // Wake feeds that outlive the store: they throw Unavailable instead of waiting forever.
    std::lock_guard lock(core_->mutex);
    core_->closed = true;
    core_->changed.notify_all();
    core_->work.close();
  }

  // What the store holds, copied (MemoryStateCopy), and the store put back to such a copy. A
  // restore tells no feed or watch: it is for tests that own the store alone.
  MemoryStateCopy copy_state() const {
    std::lock_guard lock(core_->mutex);
    return {core_->sessions, core_->owners, core_->presence, core_->work.entries()};
  }
  void restore_state(const MemoryStateCopy& copy) {
    std::lock_guard lock(core_->mutex);
    ensure_open_locked("restore_state");
    core_->sessions = copy.sessions;
    core_->owners = copy.owners;
    core_->presence = copy.presence;
    core_->work.assign(copy.work);
  }

 protected:
  // ---- append (docs/semantics.md#append) --------------------------------------------------------

  AppendResult do_append(const std::string& session_id, std::vector<NewEvent> events,
                         const AppendOptions& options, AppendIds /*ids*/) override {
    std::lock_guard lock(core_->mutex);
    ensure_open_locked("append");
    const std::int64_t now = clock().now_ms();
    const MemorySession& view = session_view(session_id);

    // Empty batch: no write, report the pending flag.
    if (events.empty()) return {{}, !view.pending.empty()};

    // 1. Ownership: foreign wins anywhere in the batch, then all-owned (replay) or some-owned.
    std::vector<std::int64_t> owned;
    for (const auto& e : events) {
      auto it = core_->owners.find(*e.id);
      if (it == core_->owners.end()) continue;
      const MemoryOwner& owner = it->second;
      if (owner.session_id != session_id) throw_id_owned_elsewhere(site("append"), *e.id);
      if (owner.index < view.clear_index) continue;  // Below our own boundary: free again.
      owned.push_back(owner.index);
    }
    if (owned.size() == events.size()) return replay_append(session_id, view, events, owned);
    if (!owned.empty())
      throw_some_ids_stored(site("append"), session_id, owned.size(), events.size());

    // 2. Origin: scheduled work from a cleared lifetime.
    if (options.origin_index && *options.origin_index <= view.clear_index)
      throw_scheduled_work_cleared(site("append"), session_id, *options.origin_index);

    // 3. Causes, each fully, in batch order (Q9).
    for (const auto& e : events)
      if (e.cause) check_cause("append", session_id, view, *e.cause);

    // 4. Write.
    MemorySession& s = core_->sessions[session_id];
    AppendResult result;
    const std::int64_t base = s.head;
    std::optional<std::int64_t> work_at;  // The earliest time an unsettled event is claimable.
    for (std::size_t i = 0; i < events.size(); ++i) {
      NewEvent& e = events[i];
      write_event(s,
                  scheduled(new_row(session_id, base + 1 + static_cast<std::int64_t>(i), *e.id,
                                    std::move(e.type), std::move(e.payload), e.cause, e.lane,
                                    e.settled, now),
                            e.available_at_ms, now),
                  e.settled, now);
      const StoredEvent& written = s.events.at(base + 1 + static_cast<std::int64_t>(i));
      if (!written.processed_at) work_at = earliest(work_at, written.available_at.value_or(now));
      result.events.push_back(written);
    }
    if (work_at) core_->work.lower(session_id, *work_at);
    result.has_pending = !s.pending.empty();
    core_->changed.notify_all();
    return result;
  }

  // ---- reads (docs/semantics.md#read to #read_feed_page) ----------------------------------------

  std::vector<StoredEvent> do_read(const std::string& session_id,
                                   const ReadOptions& options) override {
    return read_rows("read", session_id, options);
  }

  std::vector<Event> do_read_history(const std::string& session_id,
                                     const ReadOptions& options) override {
    std::vector<Event> out;
    for (auto& row : read_rows("read_history", session_id, options))
      out.push_back(static_cast<Event&&>(row));
    return out;
  }

  // Rows with max(after_index, clear_index - 1) < index <= min(through_index, head)
  // (docs/semantics.md#read).
  std::vector<StoredEvent> read_rows(std::string_view op, const std::string& session_id,
                                     const ReadOptions& options) {
    std::lock_guard lock(core_->mutex);
    ensure_open_locked(op);
    const MemorySession& s = session_view(session_id);
    std::vector<StoredEvent> out;
    const std::int64_t after = std::max(options.after_index, s.clear_index - 1);
    const std::int64_t through = std::min(options.through_index.value_or(s.head), s.head);
    for (auto it = s.events.upper_bound(after); it != s.events.end() && it->first <= through; ++it)
      out.push_back(it->second);
    return out;
  }

  std::optional<std::vector<Event>> do_read_tail(
      const std::string& session_id, std::int64_t from_index,
      std::optional<std::int64_t> through_index) override {
    std::lock_guard lock(core_->mutex);
    ensure_open_locked("read_tail");
    const MemorySession& s = session_view(session_id);
    // docs/semantics.md#read_tail.
    const std::int64_t hi = std::min(through_index.value_or(s.head), s.head);
    const std::int64_t lo = std::max(from_index, s.clear_index);
    auto first = s.events.lower_bound(lo);
    if (first == s.events.end() || first->first > hi) return std::vector<Event>{};
    if (from_index < std::max<std::int64_t>(s.clear_index, 1) ||
        hi - from_index + 1 > kReadPageSize)
      return std::nullopt;
    std::vector<Event> out;
    for (auto it = s.events.lower_bound(from_index); it != s.events.end() && it->first <= hi; ++it)
      out.push_back(it->second);
    return out;
  }

  std::vector<Event> do_read_events(const std::string& session_id,
                                    std::int64_t after_index) override {
    std::lock_guard lock(core_->mutex);
    ensure_open_locked("read_events");
    return core_->events_after(session_id, after_index, kReadPageSize);
  }

  std::vector<SerializedEvent> do_read_feed_page(const std::string& session_id,
                                                 std::int64_t after_index) override {
    std::lock_guard lock(core_->mutex);
    ensure_open_locked("read_feed_page");
    std::vector<SerializedEvent> out;
    for (auto& e : core_->events_after(session_id, after_index, kFeedPageSize))
      out.push_back({.id = std::move(e.id),
                     .type = std::move(e.type),
                     .payload_json = json_text(e.payload),
                     .index = e.index,
                     .session_id = std::move(e.session_id),
                     .created_at = e.created_at});
    return out;
  }

  // ---- claims (docs/semantics.md#claim_available, #renew_claims) --------------------------------

  ClaimResult do_claim_available(const ClaimRequest& request) override {
    std::lock_guard lock(core_->mutex);
    ensure_open_locked("claim_available");
    const std::int64_t now = clock().now_ms();
    MemorySession* s = find_session(request.session_id);
    if (!s) return {};
    const std::set<std::int64_t> excluded(request.exclude_indexes.begin(),
                                          request.exclude_indexes.end());
    return claim_locked(request.session_id, *s, request.holder,
                        lease_expires_at(now, request.ttl_ms, request.expires_at_ms), excluded,
                        request.max_events, now);
  }

  RenewResult do_renew_claims(const RenewRequest& request) override {
    std::lock_guard lock(core_->mutex);
    ensure_open_locked("renew_claims");
    const std::int64_t now = clock().now_ms();
    const std::int64_t expires_at = lease_expires_at(now, request.ttl_ms, request.expires_at_ms);
    MemorySession* s = find_session(request.session_id);
    const std::int64_t clear_index = s ? s->clear_index : 0;
    const std::int64_t head = s ? s->head : 0;
    RenewResult result;
    std::vector<std::int64_t> cleared;  // Listed last, as Redis does (the lists are sets).
    for (const ClaimRef& claim : request.claims) {
      if (claim.index <= clear_index) {
        cleared.push_back(claim.index);  // Its lifetime is gone: superseded.
        continue;
      }
      if (claim.index > head) continue;  // Ignored.
      StoredEvent& e = s->events.at(claim.index);
      if (e.attempt_count > claim.attempt) {
        result.superseded.push_back(claim.index);  // Re-claimed since.
        continue;
      }
      if (expires_at > now && !e.processed_at && !e.failed_at && e.claim_holder &&
          *e.claim_holder == request.holder && e.claim_expires_at && *e.claim_expires_at > now &&
          e.attempt_count == claim.attempt) {  // Equality (Q11).
        e.claim_expires_at = expires_at;
        result.renewed.push_back(claim.index);
      }
      // Otherwise ignored: lapsed, finished, or another holder's lease.
    }
    result.superseded.insert(result.superseded.end(), cleared.begin(), cleared.end());
    // Work index: the renewed events are claimable from their new lease end.
    if (!result.renewed.empty()) core_->work.lower_if_earlier(request.session_id, expires_at);
    return result;
  }

  // docs/semantics.md#release_claims: a live lease of this holder at this attempt ends without a
  // failure; everything else is not_held. An index is in exactly one list: released if any of its
  // listed claims released it. Both lists ascending. With available_at_ms after now each released
  // event waits until then (a snooze: its available_at, as a delayed retry's); else an
  // available_at already stored stays.
  ReleaseResult do_release_claims(const ReleaseRequest& request) override {
    std::lock_guard lock(core_->mutex);
    ensure_open_locked("release_claims");
    const std::int64_t now = clock().now_ms();
    const bool snooze = request.available_at_ms && *request.available_at_ms > now;
    MemorySession* s = find_session(request.session_id);
    std::set<std::int64_t> released;
    std::set<std::int64_t> listed;
    for (const ClaimRef& claim : request.claims) {
      listed.insert(claim.index);
      if (!s || claim.index <= s->clear_index || claim.index > s->head) continue;
      StoredEvent& e = s->events.at(claim.index);
      if (e.processed_at || e.failed_at || e.attempt_count != claim.attempt || !e.claim_holder ||
          *e.claim_holder != request.holder || !e.claim_expires_at || *e.claim_expires_at <= now)
        continue;
      e.claim_holder.reset();
      e.claim_expires_at.reset();
      if (snooze) e.available_at = *request.available_at_ms;
      released.insert(claim.index);
    }
    if (!released.empty())
      core_->work.lower(request.session_id, snooze ? *request.available_at_ms : now);
    ReleaseResult result;
    result.released.assign(released.begin(), released.end());
    for (std::int64_t index : listed)
      if (!released.count(index)) result.not_held.push_back(index);
    return result;
  }

  // docs/semantics.md#held_claims: the live leases of `holder` above the boundary, ascending.
  std::vector<HeldClaim> do_held_claims(const std::string& session_id,
                                        const std::string& holder) override {
    std::lock_guard lock(core_->mutex);
    ensure_open_locked("held_claims");
    const std::int64_t now = clock().now_ms();
    const MemorySession& s = session_view(session_id);
    std::vector<HeldClaim> out;
    for (std::int64_t index : s.pending) {  // Unsettled events above the boundary.
      const StoredEvent& e = s.events.at(index);
      if (e.failed_at || !e.claim_holder || *e.claim_holder != holder || !e.claim_expires_at ||
          *e.claim_expires_at <= now)
        continue;
      out.push_back({index, e.attempt_count, *e.claim_expires_at});
    }
    return out;
  }

  // docs/semantics.md#head.
  HeadResult do_head(const std::string& session_id) override {
    std::lock_guard lock(core_->mutex);
    ensure_open_locked("head");
    const MemorySession& s = session_view(session_id);
    return {s.head, s.clear_index};
  }

  // ---- completion (docs/semantics.md#complete_attempt, #complete_attempts, #claim_next) ---------

  CompleteResult do_complete_attempt(const CompleteRequest& request) override {
    std::lock_guard lock(core_->mutex);
    constexpr std::string_view op = "complete_attempt";
    ensure_open_locked(op);
    const std::int64_t now = clock().now_ms();
    const std::string& sid = request.session_id;
    const CompletionPlan plan = check_completion(op, sid, find_session(sid), request.index,
                                                 request.attempt, request.events);
    CompleteResult result = apply_completion(sid, plan, request.index, request.attempt,
                                             request.events, !request.claim_next, now);
    if (plan.kind == CompletionPlan::apply && !request.events.empty()) core_->changed.notify_all();
    if (request.claim_next) result.next = claim_next(sid, *request.claim_next, now);
    return result;
  }

  // docs/semantics.md#complete_attempts: every completion is checked against the state at the
  // start (the first error in list order fails the call before anything changes), then applied in
  // list order; claim_next runs last, whatever the verdicts.
  CompleteManyResult do_complete_attempts(const CompleteManyRequest& request) override {
    std::lock_guard lock(core_->mutex);
    constexpr std::string_view op = "complete_attempts";
    ensure_open_locked(op);
    return complete_many_locked(op, request, clock().now_ms());
  }

  // docs/semantics.md#complete_in_sessions: the requests one after another under the one lock,
  // each as complete_attempts alone; a refused request's error is its outcome.
  std::vector<CompleteManyOutcome> do_complete_in_sessions(
      const std::vector<CompleteManyRequest>& requests) override {
    std::lock_guard lock(core_->mutex);
    constexpr std::string_view op = "complete_in_sessions";
    ensure_open_locked(op);
    const std::int64_t now = clock().now_ms();
    std::vector<CompleteManyOutcome> out(requests.size());
    for (std::size_t i = 0; i < requests.size(); ++i) {
      try {
        out[i].result = complete_many_locked(op, requests[i], now);
      } catch (const Error&) {
        out[i].error = std::current_exception();
      }
    }
    return out;
  }

  // complete_attempts' work as the operation `op` (core_->mutex held).
  CompleteManyResult complete_many_locked(std::string_view op, const CompleteManyRequest& request,
                                          std::int64_t now) {
    const std::string& sid = request.session_id;

    // 1. Errors first. A completion changes only its own parent row and adds rows with ids no other
    // completion of the call names, so each plan stays what it would be at its place in the list.
    std::vector<CompletionPlan> plans;
    for (const Completion& c : request.completions)
      plans.push_back(check_completion(op, sid, find_session(sid), c.index, c.attempt, c.events));

    // 2. Apply in list order.
    CompleteManyResult result;
    bool wrote_children = false;
    for (std::size_t i = 0; i < request.completions.size(); ++i) {
      const Completion& c = request.completions[i];
      result.results.push_back(
          apply_completion(sid, plans[i], c.index, c.attempt, c.events, !request.claim_next, now));
      wrote_children |= plans[i].kind == CompletionPlan::apply && !c.events.empty();
    }
    if (wrote_children) core_->changed.notify_all();  // Once.

    // 3. claim_next.
    if (request.claim_next) result.next = claim_next(sid, *request.claim_next, now);
    return result;
  }

  // ---- failure, dead letters, redrive (docs/semantics.md#fail_attempt to #redrive) --------------

  FailResult do_fail_attempt(const FailRequest& request) override {
    std::lock_guard lock(core_->mutex);
    ensure_open_locked("fail_attempt");
    const std::int64_t now = clock().now_ms();
    MemorySession* s = find_session(request.session_id);
    const std::int64_t clear_index = s ? s->clear_index : 0;
    const std::int64_t head = s ? s->head : 0;

    if (request.index <= clear_index) return {FailVerdict::superseded, 0};
    if (request.index > head)
      throw_no_event(site("fail_attempt"), request.session_id, request.index);
    StoredEvent& e = s->events.at(request.index);
    if (e.processed_at || e.attempt_count != request.attempt)
      return {FailVerdict::superseded, e.failure_count};
    if (e.failed_at) return {FailVerdict::dead_lettered, e.failure_count};  // Retry of it.
    if (e.last_failed_attempt == request.attempt && !e.claim_holder)
      return {FailVerdict::failed, e.failure_count};  // Retry of a recorded failure.
    if (!e.claim_holder) return {FailVerdict::superseded, e.failure_count};

    e.failure_count += 1;
    e.last_error = request.error;
    e.last_failed_at = now;
    e.last_failed_attempt = request.attempt;
    e.claim_holder.reset();
    e.claim_expires_at.reset();
    if (e.failure_count >= request.max_failures) {
      e.failed_at = now;       // Stays pending (blocks its lane); leaves the ready set.
      e.available_at.reset();  // A dead letter ignores retry_at_ms.
      release_pins(*s, request.index);
      if (has_lane_successor(*s, request.index)) core_->work.lower(request.session_id, now);
      return {FailVerdict::dead_lettered, e.failure_count};
    }
    // Claimable again at once, or from a later retry_at_ms (docs/semantics.md#delayed-work).
    if (request.retry_at_ms && *request.retry_at_ms > now)
      e.available_at = *request.retry_at_ms;
    else
      e.available_at.reset();
    core_->work.lower(request.session_id, e.available_at.value_or(now));
    return {FailVerdict::failed, e.failure_count};
  }

  std::vector<StoredEvent> do_dead_letters(const std::string& session_id) override {
    std::lock_guard lock(core_->mutex);
    ensure_open_locked("dead_letters");
    const MemorySession& s = session_view(session_id);
    std::vector<StoredEvent> out;
    for (std::int64_t index : s.pending) {
      const StoredEvent& e = s.events.at(index);
      if (e.failed_at) out.push_back(e);
    }
    return out;
  }

  RedriveResult do_redrive(const RedriveRequest& request) override {
    std::lock_guard lock(core_->mutex);
    ensure_open_locked("redrive");
    const std::int64_t now = clock().now_ms();
    MemorySession* s = find_session(request.session_id);
    if (!s) return {false, false};
    auto result = [&](bool redriven) { return RedriveResult{redriven, !s->pending.empty()}; };
    if (request.index <= s->clear_index || request.index > s->head) return result(false);
    StoredEvent& e = s->events.at(request.index);
    if (e.processed_at || !e.failed_at) return result(false);
    if (request.action == RedriveAction::skip) {
      // Settled; failed_at stays; the lane passes to its next event (ready_indexes).
      e.processed_at = now;
      s->pending.erase(request.index);
    } else {
      // Ready again: a dead letter is always its lane's head.
      e.failed_at.reset();
      e.failure_count = 0;
    }
    core_->work.lower(request.session_id, now);
    return result(true);
  }

  // ---- snapshots and state (docs/semantics.md#read_state to #put_snapshots) ---------------------

  StateResult do_read_state(const std::string& session_id, const std::string& reducer,
                            const StateOptions& options) override {
    std::lock_guard lock(core_->mutex);
    ensure_open_locked("read_state");
    return read_state_locked(session_id, reducer, options.through_index,
                             options.snapshot_through_index);
  }

  std::vector<StateResult> do_read_states(const std::string& reducer,
                                          const std::vector<StateRequest>& requests) override {
    std::lock_guard lock(core_->mutex);
    ensure_open_locked("read_states");
    std::vector<StateResult> out;
    for (const auto& r : requests)
      out.push_back(
          read_state_locked(r.session_id, reducer, r.through_index, r.snapshot_through_index));
    return out;
  }

  void do_put_snapshots(const std::string& session_id, const std::string& reducer,
                        std::vector<SnapshotWrite> writes) override {
    std::lock_guard lock(core_->mutex);
    ensure_open_locked("put_snapshots");
    const std::int64_t now = clock().now_ms();
    MemorySession& s = core_->sessions[session_id];

    // 3. Writes of a cleared lifetime are dropped.
    std::erase_if(writes, [&](const SnapshotWrite& w) { return w.index < s.clear_index; });
    if (writes.empty()) return;
    MemoryReducer& r = s.reducers[reducer];

    // 4. Pins on unfinished events of the current lifetime; idempotent per (event, checkpoint).
    for (const auto& w : writes) {
      for (std::int64_t e : w.pin_event_indexes) {
        if (e <= s.clear_index || e > s.head) continue;
        const StoredEvent& target = s.events.at(e);
        if (target.processed_at || target.failed_at) continue;
        if (s.pins[e].insert({reducer, w.index}).second) r.pin_counts[w.index] += 1;
      }
    }

    // 5. A head of a cleared lifetime counts as absent (its old history goes with it).
    if (r.head && r.head->index < s.clear_index) {
      r.head.reset();
      r.history.erase(r.history.begin(), r.history.lower_bound(s.clear_index));
    }

    // 7-8. Head bookkeeping; an advancing write moves a pinned old head into history.
    const SnapshotWrite& latest = writes.back();
    const bool writes_head = !r.head || latest.index >= r.head->index;
    const bool advances = !r.head || latest.index > r.head->index;
    const std::int64_t final_head = advances ? latest.index : r.head->index;
    if (advances && r.head && pinned(r, r.head->index)) r.history[r.head->index] = *r.head;

    // 9. Older writes replace history at their index and survive only while pinned.
    for (const auto& w : writes) {
      if (w.index >= final_head) continue;
      r.history.erase(w.index);
      if (pinned(r, w.index)) r.history[w.index] = MemoryCheckpoint{w.index, w.state, now};
    }

    // 10. The head.
    if (writes_head) r.head = MemoryCheckpoint{latest.index, latest.state, now};
  }

  // ---- clear and reclaim (docs/semantics.md#clear, #reclaim) ------------------------------------

  ClearResult do_clear(const ClearRequest& request) override {
    std::lock_guard lock(core_->mutex);
    ensure_open_locked("clear");
    const std::int64_t now = clock().now_ms();
    const std::string& sid = request.session_id;
    const MemorySession& view = session_view(sid);
    const std::int64_t head = view.head;
    const std::int64_t clear_index = view.clear_index;

    // 2. Cause, before idempotency (Q15).
    if (request.cause) check_cause("clear", sid, view, *request.cause);
    // 3. The same conditional clear already happened.
    if (request.if_last_index && clear_index == *request.if_last_index + 1)
      return {true, head, clear_index};
    // 4. The conditional clear lost a race.
    if (request.if_last_index && *request.if_last_index != head) return {false, head, clear_index};
    // 5. Nothing to clear.
    if (head == 0 || clear_index == head) return {true, head, clear_index};
    // 6. The marker id must be unowned; any record counts, even a stale one of this session.
    const std::string marker_id = draw_marker_id("clear");
    if (core_->owners.count(marker_id)) throw_marker_id_taken(site("clear"), marker_id);

    // 7. Apply: the marker opens the new lifetime; the old pending work disappears.
    MemorySession& s = core_->sessions[sid];
    const std::int64_t marker = head + 1;
    StoredEvent row;
    row.session_id = sid;
    row.index = marker;
    row.id = marker_id;
    row.type = clear_event_type_;
    row.payload = nullptr;
    row.created_at = now;
    s.pending.clear();
    write_event(s, std::move(row), /*settled=*/true, now);
    s.clear_index = marker;
    core_->work.remove(sid);
    core_->changed.notify_all();
    return {true, marker, marker};
  }

  ReclaimResult do_reclaim(const std::string& session_id) override {
    std::lock_guard lock(core_->mutex);
    ensure_open_locked("reclaim");
    MemorySession* s = find_session(session_id);
    if (!s || s->clear_index == 0) return {0, true};
    ReclaimResult result;
    auto it = s->events.begin();
    while (it != s->events.end() && it->first < s->clear_index &&
           result.deleted < kReclaimBatchSize) {
      const std::int64_t index = it->first;
      // The owner record goes only if it still names this event (an id reused since survives).
      auto owner = core_->owners.find(it->second.id);
      if (owner != core_->owners.end() && owner->second.session_id == session_id &&
          owner->second.index == index)
        core_->owners.erase(owner);
      s->pins.erase(index);
      it = s->events.erase(it);
      result.deleted += 1;
    }
    // Done in the call that leaves nothing below the boundary (Q12): sweep the checkpoints.
    if (s->events.empty() || s->events.begin()->first >= s->clear_index) {
      for (auto& entry : s->reducers) {
        MemoryReducer& r = entry.second;
        if (r.head && r.head->index < s->clear_index) r.head.reset();
        r.history.erase(r.history.begin(), r.history.lower_bound(s->clear_index));
        r.pin_counts.erase(r.pin_counts.begin(), r.pin_counts.lower_bound(s->clear_index));
      }
      result.done = true;
    }
    return result;
  }

  // ---- feeds, presence, close (docs/semantics.md#subscribe to #close) ---------------------------

  std::unique_ptr<Feed> do_subscribe(const std::string& session_id,
                                     std::int64_t after_index) override {
    std::lock_guard lock(core_->mutex);
    ensure_open_locked("subscribe");
    return std::make_unique<MemoryFeed>(core_, session_id, after_index);
  }

  PresenceMap do_patch_presence(const std::string& session_id,
                                const PresencePatch& patch) override {
    std::lock_guard lock(core_->mutex);
    ensure_open_locked("patch_presence");
    const std::int64_t now = clock().now_ms();
    auto& entries = core_->presence[session_id];
    if (patch.state.is_null())
      entries.erase(patch.participant);
    else
      entries[patch.participant] = MemoryPresenceEntry{patch.state, time_after(now, patch.ttl_ms)};
    return live_presence(entries, now);
  }

  PresenceMap do_read_presence(const std::string& session_id) override {
    std::lock_guard lock(core_->mutex);
    ensure_open_locked("read_presence");
    const std::int64_t now = clock().now_ms();
    auto found = core_->presence.find(session_id);
    if (found == core_->presence.end()) return {};
    return live_presence(found->second, now);
  }

  void do_close() override {
    std::lock_guard lock(core_->mutex);
    core_->closed = true;
    core_->changed.notify_all();  // Waiting feeds throw Unavailable.
    core_->work.close();          // And waiting watches.
  }

  // ---- work discovery (docs/semantics.md#find_work to #watch_work) ------------------------------

  // ---- inspection (docs/semantics.md#list_sessions, #inspect_session) ----------------------------

  // Sessions in byte order of the id after the cursor; the cursor is the page's last id.
  SessionPage do_list_sessions(const ListSessionsRequest& request) override {
    check_session_cursor("list_sessions", request.cursor);
    std::lock_guard lock(core_->mutex);
    ensure_open_locked("list_sessions");
    const std::int64_t now = clock().now_ms();
    SessionPage page;
    auto it = request.cursor.empty() ? core_->sessions.begin()
                                     : core_->sessions.upper_bound(request.cursor);
    for (; it != core_->sessions.end(); ++it) {
      if (it->second.head < 1) continue;  // Only sessions holding an event are listed.
      if (static_cast<std::int64_t>(page.sessions.size()) == request.limit) {
        page.next_cursor = page.sessions.back().session_id;
        break;
      }
      page.sessions.push_back(inspect_locked(it->first, it->second, now).summary);
    }
    return page;
  }

  SessionInspection do_inspect_session(const std::string& session_id) override {
    std::lock_guard lock(core_->mutex);
    ensure_open_locked("inspect_session");
    return inspect_locked(session_id, session_view(session_id), clock().now_ms());
  }

  WorkPage do_find_work(const FindWorkRequest& request) override {
    std::lock_guard lock(core_->mutex);
    ensure_open_locked("find_work");
    return core_->work.page(request);
  }

  // Every writer of a memory store is a2, so the index is never later than the work (I20).
  SweepResult do_sweep_work() override {
    std::lock_guard lock(core_->mutex);
    ensure_open_locked("sweep_work");
    return {};
  }

  std::unique_ptr<WorkWatch> do_watch_work(const WatchWorkOptions&) override {
    std::lock_guard lock(core_->mutex);
    ensure_open_locked("watch_work");
    return core_->work.watch();
  }

 private:
  // Caller holds the mutex. An operation that passed the base class's check while close() ran
  // still fails cleanly.
  void ensure_open_locked(std::string_view op) const {
    if (core_->closed) throw Unavailable("a2 " + std::string(op) + ": the store is closed");
  }

  MemorySession* find_session(const std::string& session_id) {
    auto it = core_->sessions.find(session_id);
    return it == core_->sessions.end() ? nullptr : &it->second;
  }
  // The session, or an empty one if it has never been written (reads create nothing).
  const MemorySession& session_view(const std::string& session_id) const {
    static const MemorySession kEmpty;
    auto it = core_->sessions.find(session_id);
    return it == core_->sessions.end() ? kEmpty : it->second;
  }

  // Contract errors are worded by a2/detail/contract_errors.hpp, as on every backend.
  static ErrorSite site(std::string_view op) { return ErrorSite{"memory", op}; }

  // The fence of a cause (docs/semantics.md#append step 3, #clear step 2): boundary, range,
  // attempt.
  void check_cause(std::string_view op, const std::string& session_id, const MemorySession& s,
                   const EventCause& cause) const {
    if (cause.index <= s.clear_index)
      throw_attempt_superseded(site(op), session_id, cause.index, cause.attempt);
    if (cause.index > s.head) throw_no_event(site(op), session_id, cause.index);
    const StoredEvent& parent = s.events.at(cause.index);
    if (parent.attempt_count != cause.attempt || parent.failed_at)
      throw_attempt_superseded(site(op), session_id, cause.index, cause.attempt);
  }

  // Stores a new row at row.index (which must be head + 1), records its id's owner, and either
  // settles it at `now` or enqueues it as pending work.
  void write_event(MemorySession& s, StoredEvent row, bool settled, std::int64_t now) {
    const std::int64_t index = row.index;
    if (settled)
      row.processed_at = now;
    else
      s.pending.insert(index);
    core_->owners[row.id] = MemoryOwner{row.session_id, index};
    s.events[index] = std::move(row);
    s.head = index;
  }

  // Scheduled work (docs/semantics.md#delayed-work): an unsettled row with available_at_ms after
  // now stores it; a time not after now stores nothing. (The validator refuses it on settled rows.)
  static StoredEvent scheduled(StoredEvent row, std::optional<std::int64_t> available_at_ms,
                               std::int64_t now) {
    if (!row.processed_at && available_at_ms && *available_at_ms > now)
      row.available_at = *available_at_ms;
    return row;
  }

  // docs/semantics.md#claim_available steps 1-3 on a session, under the mutex: claims the ready,
  // unexcluded, unheld, undelayed events in ascending order, at most `max_events` (unset: all).
  // Then applies the claim's rule of the work index (unchanged with exclusions).
  ClaimResult claim_locked(const std::string& session_id, MemorySession& s,
                           const std::string& holder, std::int64_t expires_at,
                           const std::set<std::int64_t>& excluded,
                           const std::optional<std::int64_t>& max_events, std::int64_t now) {
    ClaimResult result;
    std::optional<std::int64_t> retry_at;
    auto wait_until = [&](std::int64_t t) { retry_at = std::min(retry_at.value_or(t), t); };
    for (std::int64_t index : ready_indexes(s)) {
      if (excluded.count(index)) continue;  // Ignored entirely (Q10).
      // The limit reached: later candidates are neither claimed nor looked at.
      if (max_events && static_cast<std::int64_t>(result.events.size()) >= *max_events) break;
      StoredEvent& e = s.events.at(index);
      if (e.claim_expires_at && *e.claim_expires_at > now) {  // Held.
        wait_until(*e.claim_expires_at);
        continue;
      }
      if (e.available_at && *e.available_at > now) {  // Delayed.
        wait_until(*e.available_at);
        continue;
      }
      e.attempt_count += 1;
      if (!e.first_claimed_at) e.first_claimed_at = now;
      e.last_claimed_at = now;
      e.claim_holder = holder;
      e.claim_expires_at = expires_at;
      StoredEvent claimed = e;
      if (s.clear_index > 0) claimed.clear_index = s.clear_index;
      result.events.push_back(std::move(claimed));
    }
    if (!result.events.empty()) {
      result.verdict = ClaimVerdict::claimed;
    } else if (retry_at) {
      result.verdict = ClaimVerdict::busy;
      result.retry_at = *retry_at;
    } else {
      result.verdict = ClaimVerdict::settled;
    }
    if (excluded.empty())
      core_->work.after_claim(
          session_id, result, retry_at, expires_at,
          max_events && static_cast<std::int64_t>(result.events.size()) == *max_events, now);
    return result;
  }

  // docs/semantics.md#claim_next: claim_available({session, holder, lease, [], max_events}) after
  // the completions, in the same locked step.
  ClaimResult claim_next(const std::string& session_id, const ClaimNext& next, std::int64_t now) {
    MemorySession* s = find_session(session_id);
    if (!s) return {};
    return claim_locked(session_id, *s, next.holder,
                        lease_expires_at(now, next.ttl_ms, next.expires_at_ms), {}, next.max_events,
                        now);
  }

  // What complete_attempt steps 1-6 decided for one completion: nothing changes (superseded), a
  // replay of a stored completion (its child rows' indexes, ascending), or apply steps 7-8.
  struct CompletionPlan {
    enum Kind { superseded, replay, apply } kind = superseded;
    std::vector<std::int64_t> child_rows;  // replay: the stored children's indexes, ascending.
  };

  // complete_attempt steps 1-6 (docs/semantics.md#complete_attempt) against the current state:
  // throws the completion's error (InvalidArgument, PartialDuplicateBatch), changes nothing.
  CompletionPlan check_completion(std::string_view op, const std::string& sid,
                                  const MemorySession* s, std::int64_t index, std::int64_t attempt,
                                  const std::vector<ChildEvent>& events) const {
    const std::int64_t clear_index = s ? s->clear_index : 0;
    const std::int64_t head = s ? s->head : 0;

    // 1-2. Boundary, then range.
    if (index <= clear_index) return {};
    if (index > head) throw_no_event(site(op), sid, index);
    const StoredEvent& parent = s->events.at(index);

    // 3. Already processed: an idempotent retry of a lost acknowledgement, or superseded.
    if (parent.processed_at) {
      if (parent.processed_by_attempt.value_or(0) != attempt) return {};
      const auto& stored = parent.returned_event_ids;
      if (!stored || stored->size() != events.size())
        throw_completion_mismatch(site(op), sid, index, attempt);
      CompletionPlan plan{CompletionPlan::replay, {}};
      const EventCause expected{index, attempt};
      for (std::size_t i = 0; i < events.size(); ++i) {
        const std::string& id = *events[i].id;
        if ((*stored)[i] != id) throw_completion_mismatch(site(op), sid, index, attempt);
        auto owner = core_->owners.find(id);
        if (owner == core_->owners.end() || owner->second.session_id != sid ||
            owner->second.index < clear_index)
          throw_completion_mismatch(site(op), sid, index, attempt);
        auto row = s->events.find(owner->second.index);
        if (row == s->events.end() || row->second.id != id || row->second.cause != expected)
          throw_completion_mismatch(site(op), sid, index, attempt);
        plan.child_rows.push_back(owner->second.index);
      }
      std::sort(plan.child_rows.begin(), plan.child_rows.end());
      return plan;
    }

    // 4. Fence: only the current, claimed, not failed attempt completes. Lease expiry and
    // holder identity are not checked.
    if (parent.attempt_count != attempt || !parent.claim_holder || parent.failed_at ||
        parent.last_failed_attempt == attempt)
      return {};

    // 6. Child ids owned by a live event (own ids below the boundary are free).
    for (const auto& c : events) {
      auto owner = core_->owners.find(*c.id);
      if (owner != core_->owners.end() &&
          (owner->second.session_id != sid || owner->second.index >= clear_index))
        throw_child_id_taken(site(op), sid, index, *c.id);
    }
    return {CompletionPlan::apply, {}};
  }

  // Carries out a plan of check_completion: the verdict, and for `apply` steps 7-8 (the caller
  // wakes feeds). Replayed rows are read now, with their current metadata. With `index_work`
  // (no claim_next, whose claim decides the entry instead) an applied completion lowers the work
  // index entry when it handed a lane on or wrote unsettled children.
  CompleteResult apply_completion(const std::string& sid, const CompletionPlan& plan,
                                  std::int64_t index, std::int64_t attempt,
                                  const std::vector<ChildEvent>& events, bool index_work,
                                  std::int64_t now) {
    if (plan.kind == CompletionPlan::superseded) return {CompleteVerdict::superseded, {}, {}};
    MemorySession& s = *find_session(sid);  // A replay or an apply has a parent row.
    CompleteResult result{CompleteVerdict::completed, {}, {}};
    if (plan.kind == CompletionPlan::replay) {
      for (std::int64_t row : plan.child_rows) result.events.push_back(s.events.at(row));
      return result;
    }

    // 7. Settle the parent (lane handoff follows from ready_indexes), release its pins.
    StoredEvent& parent = s.events.at(index);
    std::vector<std::string> child_ids;
    for (const auto& c : events) child_ids.push_back(*c.id);
    parent.processed_at = now;
    parent.processed_by_attempt = attempt;
    parent.returned_event_ids = std::move(child_ids);
    parent.claim_holder.reset();
    parent.claim_expires_at.reset();
    s.pending.erase(index);
    release_pins(s, index);
    // The lane passed to its next pending event: claimable now (its available_at not looked at).
    std::optional<std::int64_t> work_at;
    if (has_lane_successor(s, index)) work_at = now;

    // 8. Children, enqueued after the handoff.
    const std::int64_t base = s.head;
    for (std::size_t i = 0; i < events.size(); ++i) {
      const ChildEvent& c = events[i];
      const std::int64_t child = base + 1 + static_cast<std::int64_t>(i);
      write_event(s,
                  scheduled(new_row(sid, child, *c.id, c.type, c.payload,
                                    EventCause{index, attempt}, c.lane, c.settled, now),
                            c.available_at_ms, now),
                  c.settled, now);
      const StoredEvent& written = s.events.at(child);
      if (!written.processed_at) work_at = earliest(work_at, written.available_at.value_or(now));
      result.events.push_back(written);
    }
    if (index_work && work_at) core_->work.lower(sid, *work_at);
    return result;
  }

  // Whether another pending event (above the boundary) shares the lane of event `index`.
  static bool has_lane_successor(const MemorySession& s, std::int64_t index) {
    const StoredEvent& e = s.events.at(index);
    if (!e.lane) return false;
    for (std::int64_t other : s.pending)
      if (other != index && s.events.at(other).lane == e.lane) return true;
    return false;
  }

  static std::optional<std::int64_t> earliest(std::optional<std::int64_t> a, std::int64_t b) {
    return std::min(a.value_or(b), b);
  }

  // Ready events, ascending: pending, not dead-lettered, and unlaned or the lowest-index pending
  // event of its lane (a dead-lettered lane head blocks its lane; a delayed one is ready and
  // delays its lane).
  static std::vector<std::int64_t> ready_indexes(const MemorySession& s) {
    std::vector<std::int64_t> out;
    std::set<std::string> lanes_with_head;
    for (std::int64_t index : s.pending) {
      const StoredEvent& e = s.events.at(index);
      if (e.lane && !lanes_with_head.insert(*e.lane).second) continue;  // Behind its lane head.
      if (!e.failed_at) out.push_back(index);
    }
    return out;
  }

  // docs/semantics.md#session-counts over the pending set: a dead letter is counted dead and
  // still heads (blocks) its lane; a pending event is claimed while its lease is live, else
  // ready when due and first of its lane. Lanes, claims and checkpoints as #inspect_session.
  static SessionInspection inspect_locked(const std::string& session_id, const MemorySession& s,
                                          std::int64_t now) {
    SessionInspection out;
    SessionSummary& sum = out.summary;
    sum.session_id = session_id;
    sum.head = s.head;
    sum.clear_index = s.clear_index;
    std::map<std::string, LaneState> lanes;
    for (std::int64_t index : s.pending) {  // Unfinished events above the boundary, ascending.
      const StoredEvent& e = s.events.at(index);
      bool lane_head = true;
      if (e.lane) {
        auto [lane, added] = lanes.try_emplace(*e.lane, LaneState{*e.lane, index, 0});
        lane_head = added;
        if (!e.failed_at) lane->second.pending += 1;
      }
      if (e.failed_at) {
        sum.dead += 1;
        continue;
      }
      sum.pending += 1;
      if (e.claim_holder)
        out.claims.push_back({index, e.attempt_count, *e.claim_holder, e.claim_expires_at.value_or(0)});
      if (e.claim_expires_at && *e.claim_expires_at > now)
        sum.claimed += 1;
      else if (lane_head && !(e.available_at && *e.available_at > now))
        sum.ready += 1;
    }
    for (auto& [name, lane] : lanes) out.lanes.push_back(std::move(lane));
    for (const auto& [reducer, r] : s.reducers) {
      if (!r.head || r.head->index < s.clear_index) continue;  // Of a cleared lifetime.
      std::int64_t history = 0;
      for (auto h = r.history.lower_bound(s.clear_index);
           h != r.history.end() && h->first < r.head->index; ++h)
        history += 1;
      out.snapshots.push_back({reducer, r.head->index, history});
    }
    return out;
  }

  // Append replay (docs/semantics.md#append step 5, Q6): the owners must be exactly n consecutive
  // indexes whose rows match the request position by position (id, type, lane, cause; not the
  // payload).
  AppendResult replay_append(const std::string& session_id, const MemorySession& s,
                             const std::vector<NewEvent>& events,
                             std::vector<std::int64_t> owned) const {
    std::sort(owned.begin(), owned.end());
    AppendResult result;
    for (std::size_t i = 0; i < events.size(); ++i) {
      const NewEvent& want = events[i];
      const std::int64_t index = owned.front() + static_cast<std::int64_t>(i);
      auto row = s.events.find(index);
      if (owned[i] != index || row == s.events.end() || row->second.id != *want.id ||
          row->second.type != want.type || row->second.lane != want.lane ||
          row->second.cause != want.cause)
        throw_replay_mismatch(site("append"), session_id);
      result.events.push_back(row->second);
    }
    result.has_pending = !s.pending.empty();
    return result;
  }

  static bool pinned(const MemoryReducer& r, std::int64_t checkpoint_index) {
    auto it = r.pin_counts.find(checkpoint_index);
    return it != r.pin_counts.end() && it->second > 0;
  }

  // Pin release (docs/semantics.md#pin-release): on completion and dead-lettering of event `index`.
  // A checkpoint whose last pin goes loses its history copy; a head is never deleted here.
  static void release_pins(MemorySession& s, std::int64_t index) {
    auto found = s.pins.find(index);
    if (found == s.pins.end()) return;
    for (const auto& [reducer, checkpoint] : found->second) {
      MemoryReducer& r = s.reducers[reducer];
      auto count = r.pin_counts.find(checkpoint);
      if (count != r.pin_counts.end() && --count->second > 0) continue;
      if (count != r.pin_counts.end()) r.pin_counts.erase(count);
      r.history.erase(checkpoint);
    }
    s.pins.erase(found);
  }

  StateResult read_state_locked(const std::string& session_id, const std::string& reducer,
                                std::optional<std::int64_t> through_index,
                                std::optional<std::int64_t> snapshot_through_index) const {
    const MemorySession& s = session_view(session_id);
    const std::int64_t cap = snapshot_through_index.value_or(
        through_index.value_or(std::numeric_limits<std::int64_t>::max()));
    StateResult result;
    auto r = s.reducers.find(reducer);
    if (r != s.reducers.end()) {
      const MemoryReducer& red = r->second;
      const bool head_live = red.head && red.head->index >= s.clear_index;
      if (head_live) result.head_index = red.head->index;
      if (head_live && red.head->index <= cap) {
        result.snapshot = Checkpoint{red.head->index, red.head->state};
      } else {
        // The newest history checkpoint in [clear_index, cap].
        auto it = red.history.upper_bound(cap);
        if (it != red.history.begin()) {
          --it;
          if (it->first >= s.clear_index) result.snapshot = Checkpoint{it->first, it->second.state};
        }
      }
    }
    const std::int64_t frontier = std::min(s.head, through_index.value_or(s.head));
    const std::int64_t after =
        std::max(result.snapshot ? result.snapshot->index : 0, s.clear_index - 1);
    for (auto it = s.events.upper_bound(after); it != s.events.end() && it->first <= frontier; ++it)
      result.events.push_back(it->second);
    if (s.clear_index > 0) result.clear_index = s.clear_index;
    return result;
  }

  // Prunes expired entries (expires_at <= now) and returns the live map.
  static PresenceMap live_presence(std::map<std::string, MemoryPresenceEntry>& entries,
                                   std::int64_t now) {
    std::erase_if(entries, [&](const auto& kv) { return kv.second.expires_at <= now; });
    PresenceMap out;
    for (const auto& [participant, entry] : entries) out.emplace(participant, entry.state);
    return out;
  }

  std::string clear_event_type_;
  std::shared_ptr<MemoryCore> core_;
};

}  // namespace a2::detail

namespace a2::memory {

inline std::unique_ptr<Store> open(const Options& options) {
  a2::detail::check_clear_event_type("memory open", options.clear_event_type);
  return std::make_unique<a2::detail::MemoryStore>(options.clock, options.ids,
                                                   options.clear_event_type, options.observe);
}

}  // namespace a2::memory
