// SPDX-License-Identifier: MIT
// The writes of the Redis store that add to or cut the log: append, complete_attempt and
// complete_attempts (with the replay of a retried call and claim_next), put_snapshots, clear and
// reclaim. Each is one script through its typed caller (src/redis/scripts/); the verdicts become
// results or the contract's errors here.

#include "a2/detail/rows.hpp"
#include "redis/codec.hpp"
#include "redis/scripts/append.hpp"
#include "redis/scripts/clear.hpp"
#include "redis/scripts/complete_attempt.hpp"
#include "redis/scripts/put_snapshots.hpp"
#include "redis/scripts/reclaim.hpp"
#include "redis/store.hpp"

namespace a2::redis::detail {

using a2::detail::throw_attempt_superseded;
using a2::detail::throw_child_id_taken;
using a2::detail::throw_id_owned_elsewhere;
using a2::detail::throw_marker_id_taken;
using a2::detail::throw_no_event;
using a2::detail::throw_replay_mismatch;
using a2::detail::throw_scheduled_work_cleared;
using a2::detail::throw_some_ids_stored;

void RedisStore::match_replay(std::string_view op, const std::string& s,
                              const std::vector<Requested>& wanted,
                              const std::vector<StoredEvent>& rows) {
  bool ok = rows.size() == wanted.size();
  for (std::size_t i = 0; ok && i < rows.size(); ++i) {
    const auto& r = rows[i];
    const auto& w = wanted[i];
    ok = r.id == w.id && r.type == w.type && r.lane == w.lane && r.cause == w.cause &&
         (i == 0 || r.index == rows[i - 1].index + 1);
  }
  if (!ok) throw_replay_mismatch(site(op), s);
}

// ── Append ─────────────────────────────────────────────────────────────────────────────────

AppendResult RedisStore::do_append(const std::string& s, std::vector<NewEvent> events,
                                   const AppendOptions& options, AppendIds /*ids*/) {
  constexpr std::string_view op = "append";
  return guard(op, [&] {
    using V = scripts::Append::Verdict;
    const std::int64_t now = clock().now_ms();
    auto reply =
        scripts::AppendOne::one_event(now, events, options.origin_index)
            ? scripts::AppendOne::decode(op, s, script(op, scripts::AppendOne{s, now, events[0]}))
            : scripts::Append::decode(
                  op, s, script(op, scripts::Append{s, now, events, options.origin_index}));
    switch (reply.verdict) {
      case V::empty:
        return AppendResult{{}, reply.has_pending};
      case V::ok: {
        AppendResult result{{}, reply.has_pending};
        result.events.reserve(events.size());
        for (std::size_t i = 0; i < events.size(); ++i) {
          auto& e = events[i];
          result.events.push_back(a2::detail::new_row(
              s, reply.first_index + static_cast<std::int64_t>(i), *e.id, std::move(e.type),
              std::move(e.payload), e.cause, std::move(e.lane), e.settled, now));
          result.events.back().available_at = scripts::delayed_until(now, e.available_at_ms);
        }
        return result;
      }
      case V::replay: {
        // The rows as the script read them: a valid retry occupies consecutive indexes.
        std::vector<Requested> wanted;
        for (const auto& e : events) wanted.push_back({*e.id, e.type, e.lane, e.cause});
        match_replay(op, s, wanted, reply.rows);
        return AppendResult{std::move(reply.rows), reply.has_pending};
      }
      case V::partial:
        throw_some_ids_stored(site(op), s, static_cast<std::size_t>(reply.stored_count),
                              events.size());
      case V::foreign:
        throw_id_owned_elsewhere(site(op), reply.id);
      case V::no_parent:
        throw_no_event(site(op), s, reply.index);
      case V::superseded: {
        std::int64_t attempt = 0;
        for (const auto& e : events)
          if (e.cause && e.cause->index == reply.index) {
            attempt = e.cause->attempt;
            break;
          }
        throw_attempt_superseded(site(op), s, reply.index, attempt);
      }
      case V::cleared:
        throw_scheduled_work_cleared(site(op), s, reply.index);
    }
    unexpected(op, "unknown verdict");
  });
}

// ── Completion ─────────────────────────────────────────────────────────────────────────────

namespace {

std::optional<scripts::NextClaim> next_claim(const std::optional<ClaimNext>& next,
                                             std::int64_t now) {
  if (!next) return std::nullopt;
  return scripts::NextClaim{next->holder,
                            a2::detail::lease_expires_at(now, next->ttl_ms, next->expires_at_ms),
                            next->max_events};
}

}  // namespace

CompleteResult RedisStore::completion_result(std::string_view op, const std::string& s,
                                             std::int64_t index, std::int64_t attempt,
                                             const std::vector<ChildEvent>& events,
                                             const scripts::CompleteAttempt::Result& reply,
                                             std::int64_t now) {
  using V = scripts::CompleteAttempt::Verdict;
  const EventCause cause{index, attempt};
  switch (reply.verdict) {
    case V::superseded:
      return CompleteResult{CompleteVerdict::superseded, {}, {}};
    case V::missing:
      throw_no_event(site(op), s, index);
    case V::partial:
      if (reply.owned_id) throw_child_id_taken(site(op), s, index, *reply.owned_id);
      throw_completion_mismatch(site(op), s, index, attempt);
    case V::ok: {
      CompleteResult result{CompleteVerdict::completed, {}, {}};
      result.events.reserve(events.size());
      for (std::size_t i = 0; i < events.size(); ++i) {
        const auto& c = events[i];
        result.events.push_back(
            a2::detail::new_row(s, *reply.first_index + static_cast<std::int64_t>(i), *c.id, c.type,
                                c.payload, cause, c.lane, c.settled, now));
        result.events.back().available_at = scripts::delayed_until(now, c.available_at_ms);
      }
      return result;
    }
    case V::replay:
      // The children as the script read them, before its claim_next (which may claim one). The
      // script recognised the retry by its child ids and their causes alone (docs/semantics.md#Q3,
      // S250): a child's type, lane or payload in the retry is not compared.
      if (reply.rows.size() != events.size())
        unexpected(op, std::to_string(reply.rows.size()) + " replayed children for " +
                           std::to_string(events.size()));
      return CompleteResult{CompleteVerdict::completed, reply.rows, {}};
  }
  unexpected(op, "unknown verdict");
}

CompleteResult RedisStore::do_complete_attempt(const CompleteRequest& q) {
  constexpr std::string_view op = "complete_attempt";
  return guard(op, [&] {
    const std::int64_t now = clock().now_ms();
    const auto& s = q.session_id;
    auto reply = scripts::CompleteAttempt::decode(
        op, s,
        script(op, scripts::CompleteAttempt{s, now, q.index, q.attempt, q.events,
                                            next_claim(q.claim_next, now)}));
    if (!reply.next) return completion_result(op, s, q.index, q.attempt, q.events, reply, now);
    // The claim wrote: a replay's rows that do not decode after it are outcome-unknown.
    return after_write(op, [&] {
      auto result = completion_result(op, s, q.index, q.attempt, q.events, reply, now);
      result.next = std::move(reply.next);
      return result;
    });
  });
}

CompleteManyResult RedisStore::do_complete_attempts(const CompleteManyRequest& q) {
  constexpr std::string_view op = "complete_attempts";
  return guard(op, [&] {
    const std::int64_t now = clock().now_ms();
    const Reply reply = script(op, scripts::CompleteAttempts{q.session_id, now, q.completions,
                                                             next_claim(q.claim_next, now)});
    return many_result(op, q, reply, now);
  });
}

// docs/redis-layout.md#complete_in_sessions: every request's complete_attempts.lua call in one
// pipelined write on a pooled connection; each reply is judged as its request's own call.
std::vector<CompleteManyOutcome> RedisStore::do_complete_in_sessions(
    const std::vector<CompleteManyRequest>& qs) {
  constexpr std::string_view op = "complete_in_sessions";
  return guard(op, [&] {
    const std::int64_t now = clock().now_ms();
    std::vector<scripts::Call> calls;
    calls.reserve(qs.size());
    for (const auto& q : qs)
      calls.push_back(
          scripts::CompleteAttempts{q.session_id, now, q.completions, next_claim(q.claim_next, now)}
              .encode(k()));
    const auto replies = [&] {
      auto lease = core_->acquire(op);
      return scripts::run_script_each(*lease, op, scripts::CompleteAttempts::script(), calls);
    }();
    std::vector<CompleteManyOutcome> out(qs.size());
    for (std::size_t i = 0; i < qs.size(); ++i) {
      try {
        guarded(op, [&] {
          if (replies[i].is_error())
            fail(op, "script " + std::string(scripts::CompleteAttempts::script().name) +
                         " failed: " + replies[i].str);
          out[i].result = many_result(op, qs[i], replies[i], now);
          return 0;
        });
      } catch (const Error&) {
        out[i].error = std::current_exception();
      }
    }
    return out;
  });
}

CompleteManyResult RedisStore::many_result(std::string_view op, const CompleteManyRequest& q,
                                           const Reply& raw, std::int64_t now) {
  using V = scripts::CompleteAttempts::Verdict;
  const auto& s = q.session_id;
  auto reply = scripts::CompleteAttempts::decode(op, s, raw);
  if (reply.verdict != V::done) {
    if (reply.failed >= q.completions.size()) unexpected(op, "failing completion out of range");
    const auto& c = q.completions[reply.failed];
    if (reply.verdict == V::missing) throw_no_event(site(op), s, c.index);
    if (reply.owned_id) throw_child_id_taken(site(op), s, c.index, *reply.owned_id);
    throw_completion_mismatch(site(op), s, c.index, c.attempt);
  }
  if (reply.results.size() != q.completions.size())
    unexpected(op, std::to_string(reply.results.size()) + " results for " +
                       std::to_string(q.completions.size()) + " completions");
  bool wrote = reply.next.has_value();
  for (const auto& one : reply.results)
    wrote = wrote || one.verdict == scripts::CompleteAttempt::Verdict::ok;
  const auto finish = [&] {
    CompleteManyResult result;
    result.results.reserve(q.completions.size());
    for (std::size_t i = 0; i < q.completions.size(); ++i) {
      const auto& c = q.completions[i];
      result.results.push_back(
          completion_result(op, s, c.index, c.attempt, c.events, reply.results[i], now));
    }
    result.next = std::move(reply.next);
    return result;
  };
  // Once something was written, a replay's rows that do not decode are outcome-unknown.
  if (wrote) return after_write(op, finish);
  return finish();
}

// ── Snapshots ──────────────────────────────────────────────────────────────────────────────

void RedisStore::do_put_snapshots(const std::string& s, const std::string& reducer,
                                  std::vector<SnapshotWrite> writes) {
  constexpr std::string_view op = "put_snapshots";
  guard(op, [&] {
    script(op, scripts::PutSnapshots{s, reducer, clock().now_ms(), writes});
    return 0;
  });
}

// ── Clear and reclaim ──────────────────────────────────────────────────────────────────────

ClearResult RedisStore::do_clear(const ClearRequest& q) {
  constexpr std::string_view op = "clear";
  return guard(op, [&] {
    using V = scripts::Clear::Verdict;
    const auto& s = q.session_id;
    const std::int64_t now = clock().now_ms();
    const std::string marker = draw_marker_id(op);
    const auto reply = scripts::Clear::decode(
        op, script(op, scripts::Clear{s, now, q.if_last_index, q.cause, marker,
                                      core_->options.clear_event_type}));
    switch (reply.verdict) {
      case V::superseded:
        throw_attempt_superseded(site(op), s, q.cause ? q.cause->index : 0,
                                 q.cause ? q.cause->attempt : 0);
      case V::no_parent:
        throw_no_event(site(op), s, reply.cause_index.value_or(q.cause ? q.cause->index : 0));
      case V::foreign:
        throw_marker_id_taken(site(op), marker);
      case V::ok:
        return ClearResult{reply.cleared, reply.head, reply.boundary};
    }
    unexpected(op, "unknown verdict");
  });
}

ReclaimResult RedisStore::do_reclaim(const std::string& s) {
  constexpr std::string_view op = "reclaim";
  return guard(op, [&] {
    auto lease = core_->acquire(op);
    const auto batch = scripts::ReclaimBatch::decode(
        op, scripts::run(*lease, op, k(), scripts::ReclaimBatch{s, a2::detail::kReclaimBatchSize}));
    if (!batch.moved_log) return ReclaimResult{0, true};
    const auto reply = scripts::Reclaim::decode(
        op, scripts::run(*lease, op, k(), scripts::Reclaim{s, *batch.moved_log, &batch.entries}));
    return ReclaimResult{reply.removed, reply.done};
  });
}

}  // namespace a2::redis::detail
