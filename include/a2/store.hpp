// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "a2/clock.hpp"
#include "a2/detail/constants.hpp"
#include "a2/detail/observed.hpp"
#include "a2/detail/spin_calls.hpp"
#include "a2/detail/validate.hpp"
#include "a2/errors.hpp"
#include "a2/feed.hpp"
#include "a2/observe.hpp"
#include "a2/options.hpp"
#include "a2/results.hpp"
#include "a2/types.hpp"
#include "a2/work_watch.hpp"

namespace a2 {

// A durable store of sessions: per session an append-only log of densely indexed events that
// doubles as a work queue (claims, completions with child events, failures, dead letters,
// lanes), reducer checkpoints, clears with batched reclaim, live feeds and presence.
// docs/semantics.md is the specification; the conformance suite is its executable form.
//
// Thread safety: every Store is safe for concurrent use from many threads without external
// synchronization. Each write is atomic and linearizable per session.
//
// The public methods validate their input (detail/validate.hpp) and check that the store is
// open before any I/O, then call the backend. Bad input throws InvalidArgument and changes
// nothing; a closed store throws Unavailable. Expected outcomes are verdicts in the results;
// every failure is an a2::Error (errors.hpp).
//
// Every public operation runs inside observed() (below): with an Observer set in the backend's
// Options::observe it is reported, validation included (docs/observe.md); without one it costs
// one test of a pointer. A new operation wraps its body the same way.
class Store {
 public:
  virtual ~Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Appends events at head+1.. in order. Events without id get one from the IdSource. If every
  // id is already owned by this session (a lost acknowledgement) nothing is written and the
  // stored rows are returned. An empty batch writes nothing and reports has_pending.
  // Throws PartialDuplicateBatch (some ids owned, an id of another session, a replay that does
  // not match), SupersededAttempt (a cause whose attempt is no longer current),
  // SessionCleared (origin_index at or below the boundary), InvalidArgument (bad input, a
  // duplicate id in the batch, a cause above the head), Unavailable. Retry-safe with ids.
  AppendResult append(std::string_view session_id, std::vector<NewEvent> events,
                      const AppendOptions& options = {}) {
    return observed("append", session_id, [&]() -> AppendResult {
      constexpr std::string_view op = "append";
      detail::check_session_id(op, session_id);
      detail::check_batch_size(op, events.size());
      std::set<std::string> seen;
      for (const auto& e : events) {
        detail::check_event(op, e, seen);
        if (e.cause) {
          detail::check_integer(op, "cause index", e.cause->index);
          detail::check_integer(op, "cause attempt", e.cause->attempt);
        }
      }
      if (options.origin_index) detail::check_integer(op, "origin_index", *options.origin_index, 1);
      ensure_open(op);
      auto ids = events.empty() ? AppendIds::named : AppendIds::drawn;
      for (auto& e : events) {
        if (e.id) ids = AppendIds::named;
        normalize(op, e, seen, events.size());
      }
      return do_append(std::string(session_id), std::move(events), options, ids);
    });
  }

  // The stored rows with max(after_index, clear_index - 1) < index <= min(through_index, head):
  // the current lifetime, marker included. Bounds are frozen when the read starts.
  std::vector<StoredEvent> read(std::string_view session_id, const ReadOptions& options = {}) {
    return observed("read", session_id, [&]() -> std::vector<StoredEvent> {
      check_read("read", session_id, options);
      if (options.through_index && *options.through_index <= options.after_index) return {};
      return do_read(std::string(session_id), options);
    });
  }

  // Same range as read(), public events only.
  std::vector<Event> read_history(std::string_view session_id, const ReadOptions& options = {}) {
    return observed("read_history", session_id, [&]() -> std::vector<Event> {
      check_read("read_history", session_id, options);
      if (options.through_index && *options.through_index <= options.after_index) return {};
      return do_read_history(std::string(session_id), options);
    });
  }

  // read() with explicit bounds (docs/semantics.md#read_range).
  std::vector<StoredEvent> read_range(std::string_view session_id, std::int64_t after_index,
                                      std::optional<std::int64_t> through_index = std::nullopt) {
    return observed("read_range", session_id, [&]() -> std::vector<StoredEvent> {
      ReadOptions options{.after_index = after_index, .through_index = through_index};
      check_read("read_range", session_id, options);
      if (through_index && *through_index <= after_index) return {};
      return do_read(std::string(session_id), options);
    });
  }

  // The events from_index..min(through_index, head) if they fit one page of 256 and lie in the
  // current lifetime; [] when no event of the lifetime is in range; std::nullopt otherwise
  // (too many, or from_index below the lifetime's start). docs/semantics.md#read_tail.
  std::optional<std::vector<Event>> read_tail(
      std::string_view session_id, std::int64_t from_index,
      std::optional<std::int64_t> through_index = std::nullopt) {
    return observed("read_tail", session_id, [&]() -> std::optional<std::vector<Event>> {
      constexpr std::string_view op = "read_tail";
      detail::check_session_id(op, session_id);
      detail::check_integer(op, "from_index", from_index, 1);
      if (through_index) detail::check_integer(op, "through_index", *through_index, 0);
      ensure_open(op);
      return do_read_tail(std::string(session_id), from_index, through_index);
    });
  }

  // One page (at most 256) of public events after after_index in the current lifetime; a cursor
  // below the boundary resumes at the marker.
  std::vector<Event> read_events(std::string_view session_id, std::int64_t after_index) {
    return observed("read_events", session_id, [&]() -> std::vector<Event> {
      check_read("read_events", session_id,
                 {.after_index = after_index, .through_index = std::nullopt});
      return do_read_events(std::string(session_id), after_index);
    });
  }

  // One feed page (at most 1000) after after_index, payloads as stored JSON text.
  std::vector<SerializedEvent> read_feed_page(std::string_view session_id,
                                              std::int64_t after_index) {
    return observed("read_feed_page", session_id, [&]() -> std::vector<SerializedEvent> {
      check_read("read_feed_page", session_id,
                 {.after_index = after_index, .through_index = std::nullopt});
      return do_read_feed_page(std::string(session_id), after_index);
    });
  }

  // Claims the available events (ready, lease absent or expired, not delayed, not excluded),
  // all of them or the max_events lowest.
  //   claimed  the claimed rows, ascending, attempt_count incremented
  //   busy     nothing available but a live lease or a delayed event exists; retry_at = the
  //            earliest time one of them becomes claimable
  //   settled  nothing claimable and nothing in flight
  // Throws InvalidArgument, Unavailable. One round trip on Redis.
  ClaimResult claim_available(const ClaimRequest& request) {
    return observed(
        "claim_available", request.session_id,
        [&]() -> ClaimResult {
          constexpr std::string_view op = "claim_available";
          detail::check_session_id(op, request.session_id);
          detail::check_text(op, "holder", request.holder, kMaxHolderBytes);
          detail::check_lease(op, request.ttl_ms, request.expires_at_ms);
          detail::check_list_size(op, "exclude_indexes", request.exclude_indexes.size());
          for (auto i : request.exclude_indexes) detail::check_integer(op, "excluded index", i);
          if (request.max_events) detail::check_integer(op, "max_events", *request.max_events, 1);
          ensure_open(op);
          return do_claim_available(request);
        },
        request);
  }

  // Ends the listed leases now without counting a failure: each claim is released (the event
  // is available again at once; its next claim is the next attempt) or not_held (another
  // attempt, another holder, a lapsed lease, finished, cleared). With available_at_ms after now
  // the released events wait until then (a snooze). docs/semantics.md#release_claims.
  // Throws InvalidArgument, Unavailable. One round trip. Retry-safe: a repeat reports not_held.
  ReleaseResult release_claims(const ReleaseRequest& request) {
    return observed(
        "release_claims", request.session_id,
        [&]() -> ReleaseResult {
          constexpr std::string_view op = "release_claims";
          detail::check_session_id(op, request.session_id);
          detail::check_text(op, "holder", request.holder, kMaxHolderBytes);
          detail::check_claims(op, request.claims);
          if (request.available_at_ms)
            detail::check_integer(op, "available_at_ms", *request.available_at_ms, 0);
          ensure_open(op);
          if (request.claims.empty()) return {};
          return do_release_claims(request);
        },
        request);
  }

  // The live leases `holder` holds in the current lifetime, ascending by index: what a worker
  // recovers after losing a claim's reply. docs/semantics.md#held_claims.
  std::vector<HeldClaim> held_claims(std::string_view session_id, std::string_view holder) {
    return observed("held_claims", session_id, [&]() -> std::vector<HeldClaim> {
      constexpr std::string_view op = "held_claims";
      detail::check_session_id(op, session_id);
      detail::check_text(op, "holder", holder, kMaxHolderBytes);
      ensure_open(op);
      return do_held_claims(std::string(session_id), std::string(holder));
    });
  }

  // The head index and clear boundary: one round trip, no event bodies (a feed "from now"
  // subscribes after head_index). docs/semantics.md#head.
  HeadResult head(std::string_view session_id) {
    return observed("head", session_id, [&]() -> HeadResult {
      constexpr std::string_view op = "head";
      detail::check_session_id(op, session_id);
      ensure_open(op);
      return do_head(std::string(session_id));
    });
  }

  // Extends the listed leases held by `holder`. An index at or below the boundary, or whose
  // attempt was re-claimed, is superseded; a lapsed, finished or foreign lease is in neither list.
  RenewResult renew_claims(const RenewRequest& request) {
    return observed(
        "renew_claims", request.session_id,
        [&]() -> RenewResult {
          constexpr std::string_view op = "renew_claims";
          detail::check_session_id(op, request.session_id);
          detail::check_text(op, "holder", request.holder, kMaxHolderBytes);
          detail::check_lease(op, request.ttl_ms, request.expires_at_ms);
          detail::check_claims(op, request.claims);
          ensure_open(op);
          return do_renew_claims(request);
        },
        request);
  }

  // Completes the current attempt of a claimed event and appends its children atomically.
  //   completed   the child rows (also on an idempotent retry with the same child ids)
  //   superseded  the attempt is no longer current (re-claimed, failed, cleared); nothing changed
  // Throws PartialDuplicateBatch (a child id already owned; a retry that does not match),
  // InvalidArgument (index above the head, bad input), Unavailable. Retry-safe with child ids.
  // With claim_next it then claims the session's next work for that holder in the same call
  // (result.next; docs/semantics.md#claim_next): a busy worker needs one round trip per job.
  CompleteResult complete_attempt(CompleteRequest request) {
    return observed(
        "complete_attempt", request.session_id,
        [&]() -> CompleteResult {
          constexpr std::string_view op = "complete_attempt";
          detail::check_session_id(op, request.session_id);
          detail::check_integer(op, "index", request.index);
          detail::check_integer(op, "attempt", request.attempt);
          detail::check_batch_size(op, request.events.size());
          std::set<std::string> seen;
          for (const auto& e : request.events) detail::check_event(op, e, seen);
          if (request.claim_next) check_claim_next(op, *request.claim_next);
          ensure_open(op);
          for (auto& e : request.events) normalize(op, e, seen, request.events.size());
          return do_complete_attempt(request);
        },
        request);
  }

  // Completes many attempts of one session in one atomic call: each completion gets the verdict
  // complete_attempt would give it at its place in the list; an error of any (a child id taken,
  // a retry that does not match, an index above the head) fails the whole call and changes
  // nothing. With claim_next, then claims the session's next work for the holder in the same
  // call. docs/semantics.md#complete_attempts. Throws PartialDuplicateBatch, InvalidArgument
  // (also: an index listed twice, a child id given twice in the call), Unavailable. One round
  // trip. Retry-safe with child ids (claim_next is not replayed: see the docs).
  CompleteManyResult complete_attempts(CompleteManyRequest request) {
    return observed(
        "complete_attempts", request.session_id,
        [&]() -> CompleteManyResult {
          constexpr std::string_view op = "complete_attempts";
          std::set<std::string> seen;
          std::size_t completions = 0, children = 0;
          check_complete_many(op, request, seen, completions, children);
          ensure_open(op);
          if (request.completions.empty() && !request.claim_next) return {};
          for (auto& c : request.completions)
            for (auto& e : c.events) normalize(op, e, seen, children);
          return do_complete_attempts(request);
        },
        request);
  }

  // Several complete_attempts calls of distinct sessions in one round trip, for a worker whose
  // finished jobs are spread over many sessions. outcomes[i] answers requests[i]: the result
  // complete_attempts(requests[i]) would have returned alone, or the error it would have thrown
  // (a refused request changes nothing of its own; the others are stored). Each request is
  // atomic on its own, not with the others. docs/semantics.md#complete_in_sessions. Throws
  // InvalidArgument before any I/O (a session named twice, a child id given twice in the call,
  // more than kMaxCompletedSessions requests, more than 10,000 completions or children in all,
  // any request invalid as a complete_attempts call) and Unavailable when the round trip that
  // every request shares fails (outcome unknown once sent). Retry-safe as complete_attempts.
  std::vector<CompleteManyOutcome> complete_in_sessions(std::vector<CompleteManyRequest> requests) {
    return observed(
        "complete_in_sessions", "",
        [&]() -> std::vector<CompleteManyOutcome> {
          constexpr std::string_view op = "complete_in_sessions";
          if (requests.size() > kMaxCompletedSessions)
            detail::invalid(op, "at most " + std::to_string(kMaxCompletedSessions) +
                                    " requests, not " + std::to_string(requests.size()));
          std::set<std::string> sessions, seen;
          std::size_t completions = 0, children = 0;
          for (const auto& q : requests) {
            check_complete_many(op, q, seen, completions, children);
            if (!sessions.insert(q.session_id).second)
              detail::invalid(
                  op, "session " + detail::quote_arg(q.session_id) + " is named by two requests");
          }
          ensure_open(op);
          // A request without completions or claim_next is answered here, as complete_attempts
          // answers it; the others go to the backend.
          std::vector<CompleteManyOutcome> out(requests.size());
          std::vector<CompleteManyRequest> sent;
          std::vector<std::size_t> at;
          for (std::size_t i = 0; i < requests.size(); ++i) {
            auto& q = requests[i];
            if (q.completions.empty() && !q.claim_next) {
              out[i].result.emplace();
              continue;
            }
            for (auto& c : q.completions)
              for (auto& e : c.events) normalize(op, e, seen, children);
            sent.push_back(std::move(q));
            at.push_back(i);
          }
          if (sent.empty()) return out;
          auto answers = do_complete_in_sessions(sent);
          if (answers.size() != sent.size())
            throw Unavailable("a2 " + std::string(op) + ": the backend answered " +
                                  std::to_string(answers.size()) + " of " +
                                  std::to_string(sent.size()) + " requests",
                              /*outcome_unknown=*/true);
          for (std::size_t j = 0; j < sent.size(); ++j) {
            out[at[j]] = std::move(answers[j]);
            requests[at[j]] = std::move(sent[j]);  // For the observer's transitions.
          }
          return out;
        },
        requests);
  }

  // Records a failure of the current attempt.
  //   failed         below max_failures; the event is claimable again (from retry_at_ms)
  //   dead_lettered  the limit was reached; only redrive brings it back
  //   superseded     the attempt is no longer current; nothing changed
  // Throws InvalidArgument (index above the head), Unavailable. Retry-safe (by attempt).
  FailResult fail_attempt(const FailRequest& request) {
    return observed(
        "fail_attempt", request.session_id,
        [&]() -> FailResult {
          constexpr std::string_view op = "fail_attempt";
          detail::check_session_id(op, request.session_id);
          detail::check_integer(op, "index", request.index);
          detail::check_integer(op, "attempt", request.attempt);
          detail::check_integer(op, "max_failures", request.max_failures);
          detail::check_text(op, "error", request.error, kMaxErrorTextBytes, /*allow_empty=*/true);
          if (request.retry_at_ms)
            detail::check_integer(op, "retry_at_ms", *request.retry_at_ms, 0);
          ensure_open(op);
          return do_fail_attempt(request);
        },
        request);
  }

  // The dead letters of the current lifetime with full metadata, ascending.
  std::vector<StoredEvent> dead_letters(std::string_view session_id) {
    return observed("dead_letters", session_id, [&]() -> std::vector<StoredEvent> {
      constexpr std::string_view op = "dead_letters";
      detail::check_session_id(op, session_id);
      ensure_open(op);
      return do_dead_letters(std::string(session_id));
    });
  }

  // Retries (claimable again, failure count reset) or skips (settled, lane handed on) a dead
  // letter of the current lifetime; anything else reports redriven = false and changes nothing.
  RedriveResult redrive(const RedriveRequest& request) {
    return observed(
        "redrive", request.session_id,
        [&]() -> RedriveResult {
          constexpr std::string_view op = "redrive";
          detail::check_session_id(op, request.session_id);
          detail::check_integer(op, "index", request.index);
          ensure_open(op);
          return do_redrive(request);
        },
        request);
  }

  // What a reducer needs to fold the session: the best checkpoint and the events after it.
  StateResult read_state(std::string_view session_id, std::string_view reducer,
                         const StateOptions& options = {}) {
    return observed("read_state", session_id, [&]() -> StateResult {
      constexpr std::string_view op = "read_state";
      detail::check_session_id(op, session_id);
      detail::check_reducer(op, reducer);
      check_state_bounds(op, options.through_index, options.snapshot_through_index);
      ensure_open(op);
      return do_read_state(std::string(session_id), std::string(reducer), options);
    });
  }

  // read_state for many sessions of one reducer; result i answers requests[i].
  std::vector<StateResult> read_states(std::string_view reducer,
                                       const std::vector<StateRequest>& requests) {
    return observed("read_states", {}, [&]() -> std::vector<StateResult> {
      constexpr std::string_view op = "read_states";
      detail::check_reducer(op, reducer);
      detail::check_list_size(op, "requests", requests.size());
      for (const auto& r : requests) {
        detail::check_session_id(op, r.session_id);
        check_state_bounds(op, r.through_index, r.snapshot_through_index);
      }
      ensure_open(op);
      if (requests.empty()) return {};
      return do_read_states(std::string(reducer), requests);
    });
  }

  // Writes reducer checkpoints. One write per index (the last for an index wins), applied in
  // index order; writes below the boundary are dropped; the highest write becomes the head if
  // it is not older than the head; older writes are kept only while pinned by unfinished events.
  void put_snapshots(std::string_view session_id, std::string_view reducer,
                     std::vector<SnapshotWrite> writes) {
    return observed("put_snapshots", session_id, [&]() -> void {
      constexpr std::string_view op = "put_snapshots";
      detail::check_session_id(op, session_id);
      detail::check_reducer(op, reducer);
      detail::check_list_size(op, "writes", writes.size());
      for (const auto& w : writes) {
        detail::check_integer(op, "checkpoint index", w.index, 0);
        detail::check_json(op, "checkpoint state", w.state);
        detail::check_list_size(op, "pin_event_indexes", w.pin_event_indexes.size());
        for (auto p : w.pin_event_indexes) detail::check_integer(op, "pinned event index", p, 1);
      }
      ensure_open(op);
      // Normalize (docs/semantics.md#put_snapshots step 1): the last write per index wins,
      // ascending.
      std::vector<SnapshotWrite> normalized;
      for (auto it = writes.rbegin(); it != writes.rend(); ++it) {
        bool seen = false;
        for (const auto& n : normalized) seen = seen || n.index == it->index;
        if (!seen) normalized.push_back(std::move(*it));
      }
      std::sort(normalized.begin(), normalized.end(),
                [](const SnapshotWrite& a, const SnapshotWrite& b) { return a.index < b.index; });
      if (normalized.empty()) return;
      do_put_snapshots(std::string(session_id), std::string(reducer), std::move(normalized));
    });
  }

  // Appends a clear marker at head+1 and moves the boundary there: the old lifetime's events,
  // work and checkpoints become invisible. See ClearResult and docs/semantics.md#clear.
  // Throws SupersededAttempt (stale cause), PartialDuplicateBatch (marker id taken),
  // InvalidArgument (cause above the head), Unavailable. Retry-safe with if_last_index.
  ClearResult clear(const ClearRequest& request) {
    return observed("clear", request.session_id, [&]() -> ClearResult {
      constexpr std::string_view op = "clear";
      detail::check_session_id(op, request.session_id);
      if (request.if_last_index)
        detail::check_integer(op, "if_last_index", *request.if_last_index, 0);
      if (request.cause) {
        detail::check_integer(op, "cause index", request.cause->index);
        detail::check_integer(op, "cause attempt", request.cause->attempt);
      }
      ensure_open(op);
      return do_clear(request);
    });
  }

  // Deletes one batch (at most 256 events) of the old lifetimes below the boundary and, at the
  // end, their checkpoints. Loop until done.
  ReclaimResult reclaim(std::string_view session_id) {
    return observed("reclaim", session_id, [&]() -> ReclaimResult {
      constexpr std::string_view op = "reclaim";
      detail::check_session_id(op, session_id);
      ensure_open(op);
      return do_reclaim(std::string(session_id));
    });
  }

  // A live feed of the session's events after after_index (feed.hpp).
  std::unique_ptr<Feed> subscribe(std::string_view session_id, std::int64_t after_index = 0) {
    return observed("subscribe", session_id, [&]() -> std::unique_ptr<Feed> {
      check_read("subscribe", session_id,
                 {.after_index = after_index, .through_index = std::nullopt});
      return do_subscribe(std::string(session_id), after_index);
    });
  }

  // One page of the work index: the sessions that may have claimable work, each with the
  // earliest time it may (docs/semantics.md#find_work). Kept by a2's writes, so idle sessions
  // cost nothing; work written by the original package appears after a sweep_work().
  // Throws InvalidArgument (limit outside 1..1000, a bad cursor), Unavailable. One round trip.
  WorkPage find_work(const FindWorkRequest& request = {}) {
    return observed("find_work", {}, [&]() -> WorkPage {
      constexpr std::string_view op = "find_work";
      detail::check_integer(op, "limit", request.limit, 1);
      if (request.limit > detail::kFindWorkMaxLimit)
        detail::invalid(op, "limit is " + std::to_string(request.limit) +
                                "; it must be <= " + std::to_string(detail::kFindWorkMaxLimit));
      if (request.due_by_ms) detail::check_integer(op, "due_by_ms", *request.due_by_ms, 0);
      if (request.after) {
        detail::check_integer(op, "cursor at_ms", request.after->at_ms, 0);
        detail::check_session_id(op, request.after->session_id);
      }
      ensure_open(op);
      return do_find_work(request);
    });
  }

  // One pass of the safety sweep: indexes the sessions with ready work that the work index
  // misses or dates too late (work written by the original package), at the earliest time each
  // may be claimed. Returns them; empty when every writer is a2. docs/semantics.md#sweep_work.
  // Throws Unavailable.
  SweepResult sweep_work() {
    return observed("sweep_work", {}, [&]() -> SweepResult {
      ensure_open("sweep_work");
      return do_sweep_work();
    });
  }

  // A live signal of "session S may have new work" (work_watch.hpp), which also runs the
  // safety sweep every options.sweep_interval. docs/semantics.md#watch_work.
  std::unique_ptr<WorkWatch> watch_work(const WatchWorkOptions& options = {}) {
    return observed("watch_work", {}, [&]() -> std::unique_ptr<WorkWatch> {
      constexpr std::string_view op = "watch_work";
      if (options.sweep_interval.count() < 0)
        detail::invalid(op, "sweep_interval is " + std::to_string(options.sweep_interval.count()) +
                                " ms; it must be >= 0");
      ensure_open(op);
      return do_watch_work(options);
    });
  }

  // One page of the sessions that hold at least one event (cleared ones included), each with its
  // counts (docs/semantics.md#list_sessions). Page on with next_cursor until it is "". Order:
  // session id order on memory and Postgres, unspecified on Redis, where a session may (rarely)
  // appear on two pages; a page may be short, even empty, before the end. Read-only.
  // Throws InvalidArgument (limit outside 1..1000, a malformed cursor), Unavailable.
  SessionPage list_sessions(const ListSessionsRequest& request = {}) {
    return observed("list_sessions", "", [&]() -> SessionPage {
      constexpr std::string_view op = "list_sessions";
      detail::check_integer(op, "limit", request.limit, 1);
      if (request.limit > detail::kListSessionsMaxLimit)
        detail::invalid(op, "limit is " + std::to_string(request.limit) + "; it must be <= " +
                                std::to_string(detail::kListSessionsMaxLimit));
      ensure_open(op);
      return do_list_sessions(request);
    });
  }

  // A session's counts, lanes with unfinished work, recorded claims and newest checkpoints
  // (docs/semantics.md#inspect_session); zeros for a session without events. Read-only, a few
  // round trips; its cost follows the session's unfinished work. Throws InvalidArgument,
  // Unavailable.
  SessionInspection inspect_session(std::string_view session_id) {
    return observed("inspect_session", session_id, [&]() -> SessionInspection {
      constexpr std::string_view op = "inspect_session";
      detail::check_session_id(op, session_id);
      ensure_open(op);
      return do_inspect_session(std::string(session_id));
    });
  }

  // Upserts or removes one participant and returns the live presence map. Not part of the log:
  // unaffected by clear and reclaim.
  PresenceMap patch_presence(std::string_view session_id, const PresencePatch& patch) {
    return observed("patch_presence", session_id, [&]() -> PresenceMap {
      constexpr std::string_view op = "patch_presence";
      detail::check_session_id(op, session_id);
      detail::check_text(op, "participant", patch.participant, kMaxParticipantBytes);
      detail::check_json(op, "presence state", patch.state);
      if (!patch.state.is_null()) detail::check_integer(op, "ttl_ms", patch.ttl_ms, 1);
      ensure_open(op);
      return do_patch_presence(std::string(session_id), patch);
    });
  }

  // The live presence map of a session.
  PresenceMap read_presence(std::string_view session_id) {
    return observed("read_presence", session_id, [&]() -> PresenceMap {
      constexpr std::string_view op = "read_presence";
      detail::check_session_id(op, session_id);
      ensure_open(op);
      return do_read_presence(std::string(session_id));
    });
  }

  // Releases connections and stops feeds. Idempotent; afterwards every operation throws
  // Unavailable.
  void close() {
    if (!closed_.exchange(true)) do_close();
  }
  bool closed() const noexcept { return closed_.load(); }

  // The time by the store's clock (Options::clock), in ms since the Unix epoch: the time its
  // leases, delays and work index are judged by. A worker computes lease ends and retry times
  // from it, so a ManualClock drives both. A reading outside 0..2^53-1 is InvalidArgument, as in
  // every operation that reads it (docs/semantics.md#input-limits).
  std::int64_t now_ms() const { return clock_->now_ms(); }

  // An event id from the store's IdSource (Options::ids), as append and complete draw for an
  // event or child without one, for a caller that names its ids before the first call so that
  // a retry is recognised: a Worker names its handlers' children so. Thread-safe.
  std::string draw_event_id() { return ids_->next_id(); }

  // The observer of Options::observe (null when none): a Worker on this store reports its jobs
  // to it too (docs/observe.md#O10).
  const std::shared_ptr<Observer>& observer() const noexcept { return observe_.observer; }
  // "memory", "redis", "postgres": the backend word of the reports.
  std::string_view backend() const noexcept { return backend_; }

 protected:
  Store(std::shared_ptr<Clock> clock, std::shared_ptr<IdSource> ids,
        std::string_view backend = "store", ObserveOptions observe = {})
      : clock_(std::make_shared<detail::CheckedClock>(clock ? std::move(clock)
                                                            : std::make_shared<SystemClock>())),
        ids_(ids ? std::move(ids) : std::make_shared<TimeOrderedIdSource>()),
        backend_(backend),
        observe_(std::move(observe)) {}

  Clock& clock() const noexcept { return *clock_; }
  // The id of a clear marker: drawn from the IdSource and checked as an event's drawn id is (not
  // valid text: InvalidArgument). A backend draws it before its write (docs/semantics.md#Q27).
  std::string draw_marker_id(std::string_view op) {
    std::string id = ids_->next_id();
    detail::check_event_id(op, id, nullptr, /*drawn=*/true);
    return id;
  }
  // For a backend whose option spin_wait is set, in its constructor: every public operation
  // then counts among the calls in flight that a wait for a reply checks before it spins
  // (a2/detail/spin_calls.hpp).
  void count_calls_for_spin_wait() noexcept { spin_counted_ = true; }

  // Who named the ids of an append's events (do_append). drawn: the store drew every one from
  // its IdSource, so no stored row holds one unless that source repeats itself; a backend may
  // leave looking for such a row to its unique constraint, as long as it then answers the
  // append as it answers a caller's id (docs/postgres-layout.md#a2_append_one). named: the
  // caller named at least one (a retry of a lost acknowledgement names the ids it sent).
  enum class AppendIds { named, drawn };

  // Backends implement these. Input is validated and normalized: lanes "" are std::nullopt,
  // every event and child has an id, snapshot writes are one per index, ascending, non-empty.
  virtual AppendResult do_append(const std::string& session_id, std::vector<NewEvent> events,
                                 const AppendOptions& options, AppendIds ids) = 0;
  virtual std::vector<StoredEvent> do_read(const std::string& session_id,
                                           const ReadOptions& options) = 0;
  virtual std::vector<Event> do_read_history(const std::string& session_id,
                                             const ReadOptions& options) = 0;
  virtual std::optional<std::vector<Event>> do_read_tail(
      const std::string& session_id, std::int64_t from_index,
      std::optional<std::int64_t> through_index) = 0;
  virtual std::vector<Event> do_read_events(const std::string& session_id,
                                            std::int64_t after_index) = 0;
  virtual std::vector<SerializedEvent> do_read_feed_page(const std::string& session_id,
                                                         std::int64_t after_index) = 0;
  virtual ClaimResult do_claim_available(const ClaimRequest& request) = 0;
  virtual RenewResult do_renew_claims(const RenewRequest& request) = 0;
  virtual ReleaseResult do_release_claims(const ReleaseRequest& request) = 0;
  virtual std::vector<HeldClaim> do_held_claims(const std::string& session_id,
                                                const std::string& holder) = 0;
  virtual HeadResult do_head(const std::string& session_id) = 0;
  virtual CompleteResult do_complete_attempt(const CompleteRequest& request) = 0;
  virtual CompleteManyResult do_complete_attempts(const CompleteManyRequest& request) = 0;
  // One or more requests of distinct sessions, each with a completion or a claim_next; one
  // outcome per request, in order (docs/semantics.md#complete_in_sessions).
  virtual std::vector<CompleteManyOutcome> do_complete_in_sessions(
      const std::vector<CompleteManyRequest>& requests) = 0;
  virtual FailResult do_fail_attempt(const FailRequest& request) = 0;
  virtual std::vector<StoredEvent> do_dead_letters(const std::string& session_id) = 0;
  virtual RedriveResult do_redrive(const RedriveRequest& request) = 0;
  virtual StateResult do_read_state(const std::string& session_id, const std::string& reducer,
                                    const StateOptions& options) = 0;
  virtual std::vector<StateResult> do_read_states(const std::string& reducer,
                                                  const std::vector<StateRequest>& requests) = 0;
  virtual void do_put_snapshots(const std::string& session_id, const std::string& reducer,
                                std::vector<SnapshotWrite> writes) = 0;
  virtual ClearResult do_clear(const ClearRequest& request) = 0;
  virtual ReclaimResult do_reclaim(const std::string& session_id) = 0;
  virtual std::unique_ptr<Feed> do_subscribe(const std::string& session_id,
                                             std::int64_t after_index) = 0;
  virtual WorkPage do_find_work(const FindWorkRequest& request) = 0;
  virtual SweepResult do_sweep_work() = 0;
  virtual std::unique_ptr<WorkWatch> do_watch_work(const WatchWorkOptions& options) = 0;
  // The cursor is "" or well-formed for the backend: the backend checks its form (a session id
  // on memory and Postgres, a SCAN cursor on Redis) and throws InvalidArgument.
  virtual SessionPage do_list_sessions(const ListSessionsRequest& request) = 0;
  virtual SessionInspection do_inspect_session(const std::string& session_id) = 0;
  virtual PresenceMap do_patch_presence(const std::string& session_id,
                                        const PresencePatch& patch) = 0;
  virtual PresenceMap do_read_presence(const std::string& session_id) = 0;
  // Called once, by the first close().
  virtual void do_close() = 0;

 private:
  // Runs f(), the whole of a public operation (validation too), and reports it to the observer:
  // one OperationRecord, the WorkRecords of transitions_of(request, result), a slow_operation
  // log event. Costless without an observer: one test of a pointer, and one of a flag (a store
  // with spin_wait counts its calls in flight: a2/detail/spin_calls.hpp).
  template <class F, class Q = detail::NoRequest>
  auto observed(std::string_view op, std::string_view session, F&& f, const Q& request = {})
      -> decltype(f()) {
    const detail::SpinCallScope in_flight(spin_counted_);
    if (!observe_.observer) [[likely]]
      return f();
    return observed_call(op, session, f, request);
  }

  // Out of line and cold: only stores with an observer get here, and callers stay small.
  template <class F, class Q>
  [[gnu::noinline, gnu::cold]] auto observed_call(std::string_view op, std::string_view session, F& f, const Q& request)
      -> decltype(f()) {
    using R = decltype(f());
    Observer& observer = *observe_.observer;
    const auto started_at = std::chrono::system_clock::now();
    const auto started = std::chrono::steady_clock::now();
    const std::int64_t trips = detail::t_round_trips;
    const std::int64_t spins = detail::t_spins;
    const std::int64_t answered = detail::t_spins_answered;
    struct Scope {  // Backends log through it (detail::log_event) while the operation runs.
      detail::ObserveScope outer = detail::t_observe_scope;
      ~Scope() { detail::t_observe_scope = outer; }
    } scope;
    detail::t_observe_scope = {&observe_.observer, backend_};
    auto report = [&](std::string_view outcome, std::optional<ErrorCode> error, bool unknown) {
      const auto duration = std::chrono::steady_clock::now() - started;
      observer.on_operation({op, backend_, started_at, duration, outcome, error, unknown,
                             detail::t_round_trips - trips, session, detail::t_spins - spins,
                             detail::t_spins_answered - answered});
      if (duration >= observe_.slow_operation)
        detail::log_event(
            LogLevel::warning, "slow_operation",
            "a2 " + backend_ + " " + std::string(op) + ": took " +
                std::to_string(
                    std::chrono::duration_cast<std::chrono::microseconds>(duration).count()) +
                " us (the threshold is " + std::to_string(observe_.slow_operation.count()) +
                " ms)");
    };
    try {
      if constexpr (std::is_void_v<R>) {
        f();
        report("ok", std::nullopt, false);
      } else {
        R result = f();
        report(detail::outcome_of(result), std::nullopt, false);
        // A transition names its session when the operation spans several (else the call's).
        detail::transitions_of(
            request, result,
            [&](WorkTransition t, std::int64_t index, std::int64_t attempt,
                std::string_view in = {}) {
              observer.on_work({t, backend_, in.empty() ? session : in, index, attempt});
            });
        return result;
      }
    } catch (const Unavailable& e) {
      report(to_string(e.code()), e.code(), e.outcome_unknown());
      throw;
    } catch (const Error& e) {
      report(to_string(e.code()), e.code(), false);
      throw;
    } catch (...) {
      report("error", std::nullopt, false);
      throw;
    }
  }

  void ensure_open(std::string_view op) const {
    if (closed_.load()) throw Unavailable("a2 " + std::string(op) + ": the store is closed");
  }
  void check_read(std::string_view op, std::string_view session_id, const ReadOptions& options) {
    detail::check_session_id(op, session_id);
    detail::check_integer(op, "after_index", options.after_index, 0);
    if (options.through_index)
      detail::check_integer(op, "through_index", *options.through_index, 0);
    ensure_open(op);
  }
  // One complete_attempts request (also a request of complete_in_sessions): `seen` holds the
  // child ids of the call so far, `completions` and `children` its counts so far.
  static void check_complete_many(std::string_view op, const CompleteManyRequest& request,
                                  std::set<std::string>& seen, std::size_t& completions,
                                  std::size_t& children) {
    detail::check_session_id(op, request.session_id);
    completions += request.completions.size();
    detail::check_list_size(op, "completions", completions);
    std::set<std::int64_t> indexes;
    for (const auto& c : request.completions) {
      detail::check_integer(op, "index", c.index);
      detail::check_integer(op, "attempt", c.attempt);
      if (!indexes.insert(c.index).second)
        detail::invalid(op, "index " + std::to_string(c.index) + " is listed twice");
      children += c.events.size();
      detail::check_batch_size(op, children);
      for (const auto& e : c.events) detail::check_event(op, e, seen);
    }
    if (request.claim_next) check_claim_next(op, *request.claim_next);
  }
  static void check_claim_next(std::string_view op, const ClaimNext& next) {
    detail::check_text(op, "claim_next holder", next.holder, kMaxHolderBytes);
    detail::check_lease(op, next.ttl_ms, next.expires_at_ms);
    detail::check_integer(op, "claim_next max_events", next.max_events, 1);
  }
  static void check_state_bounds(std::string_view op, const std::optional<std::int64_t>& through,
                                 const std::optional<std::int64_t>& snapshot_through) {
    if (through) detail::check_integer(op, "through_index", *through, 0);
    if (snapshot_through) detail::check_integer(op, "snapshot_through_index", *snapshot_through, 0);
  }
  // One of the `count` events or children of a call, after check_event: a lane "" becomes no
  // lane (Q7: on every backend), and an event without id gets one from the IdSource, checked as
  // a supplied id is (`seen` holds the call's ids so far), so an IdSource that repeats itself
  // within a call is refused before any I/O (S245).
  template <class E>
  void normalize(std::string_view op, E& e, std::set<std::string>& seen, std::size_t count) {
    if (e.lane && e.lane->empty()) e.lane.reset();
    if (e.id) return;
    e.id = ids_->next_id();
    detail::check_event_id(op, *e.id, count > 1 ? &seen : nullptr, /*drawn=*/true);
  }

  std::shared_ptr<Clock> clock_;
  std::shared_ptr<IdSource> ids_;
  std::string backend_;
  ObserveOptions observe_;
  bool spin_counted_ = false;  // count_calls_for_spin_wait()
  std::atomic<bool> closed_{false};
};

}  // namespace a2
