// SPDX-License-Identifier: MIT
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "a2/types.hpp"

// Request and option structs of the Store operations. Plain values; field order is API
// (designated initializers).
namespace a2 {

struct AppendOptions {
  // Index of the event that scheduled this append (a timer fired by event N). If that event is
  // at or below the clear boundary the append is refused with SessionCleared.
  std::optional<std::int64_t> origin_index{};
};

struct ReadOptions {
  std::int64_t after_index = 0;               // Exclusive lower bound, >= 0.
  std::optional<std::int64_t> through_index{};  // Inclusive upper bound, >= 0; default the head.
};

struct ClaimRequest {
  std::string session_id{};
  std::string holder{};                        // The worker's id.
  std::optional<std::int64_t> ttl_ms{};        // Lease length, > 0. Used when expires_at_ms is unset.
  std::optional<std::int64_t> expires_at_ms{}; // Absolute lease end; wins over ttl_ms.
  std::vector<std::int64_t> exclude_indexes{}; // Ignored entirely: neither claimed nor busy.
  // Claim at most this many events (>= 1), lowest index first; unset: every available event.
  std::optional<std::int64_t> max_events{};
};

// One held claim: the event index and the attempt its claim returned.
struct ClaimRef {
  std::int64_t index = 0;
  std::int64_t attempt = 0;
};

// One claim as the store holds it: index, attempt and lease end (held_claims).
struct HeldClaim {
  std::int64_t index = 0;
  std::int64_t attempt = 0;
  std::int64_t expires_at = 0;  // The lease end (ms).
};

// Ends leases early without counting a failure (docs/semantics.md#release_claims).
struct ReleaseRequest {
  std::string session_id{};
  std::string holder{};
  std::vector<ClaimRef> claims{};
  // The released events are not claimable before this time (ms): a snooze, "run it again
  // later" without counting a failure. Unset or not after now: available again at once.
  std::optional<std::int64_t> available_at_ms{};
};

// A position in the work index (find_work): the last session of a page, exclusive.
struct WorkCursor {
  std::int64_t at_ms = 0;
  std::string session_id{};
};

// One page of the sessions that may have claimable work (docs/semantics.md#find_work).
struct FindWorkRequest {
  std::optional<WorkCursor> after{};        // Start after this entry; unset: from the first.
  std::optional<std::int64_t> due_by_ms{};  // Only entries with at_ms <= due_by_ms; unset: all.
  std::int64_t limit = 256;                 // 1..1000 sessions per page.
};

// One page of the sessions under the store's prefix / schema (docs/semantics.md#list_sessions).
struct ListSessionsRequest {
  std::string cursor{};      // "" = from the start; else the next_cursor of the previous page.
  std::int64_t limit = 100;  // 1..1000: the page holds at most this many sessions.
};

// The live work signal (docs/semantics.md#watch_work).
struct WatchWorkOptions {
  // How often the watch runs the safety sweep (sweep_work) for work written by the original
  // package, which does not keep the work index. 0: never (every writer is a2).
  std::chrono::milliseconds sweep_interval{1000};
};

struct RenewRequest {
  std::string session_id{};
  std::string holder{};
  std::vector<ClaimRef> claims{};
  std::optional<std::int64_t> ttl_ms{};
  std::optional<std::int64_t> expires_at_ms{};
};

// Claims the session's next work for `holder` in the same atomic call as a completion, as
// claim_available({session, holder, lease, max_events}) would after it
// (docs/semantics.md#claim_next).
struct ClaimNext {
  std::string holder{};
  std::optional<std::int64_t> ttl_ms{};        // Lease length, > 0. Used when expires_at_ms is unset.
  std::optional<std::int64_t> expires_at_ms{}; // Absolute lease end; wins over ttl_ms.
  std::int64_t max_events = 1;                 // Claim at most this many (>= 1).
};

struct CompleteRequest {
  std::string session_id{};
  std::int64_t index = 0;
  std::int64_t attempt = 0;
  std::vector<ChildEvent> events{};  // Children, appended atomically with the completion.
  std::optional<ClaimNext> claim_next{};
};

// One completion of a batched complete_attempts call.
struct Completion {
  std::int64_t index = 0;
  std::int64_t attempt = 0;
  std::vector<ChildEvent> events{};
};

// Completes many attempts of one session atomically (docs/semantics.md#complete_attempts).
struct CompleteManyRequest {
  std::string session_id{};
  std::vector<Completion> completions{};  // Distinct indexes; applied in this order.
  std::optional<ClaimNext> claim_next{};
};

struct FailRequest {
  std::string session_id{};
  std::int64_t index = 0;
  std::int64_t attempt = 0;
  std::string error{};                // Recorded as last_error.
  std::int64_t max_failures = 3;    // Dead-letter at this many failures (<= 1: the first).
  // Not claimable before this time (ms); unset or not after now: at once. A dead letter
  // ignores it.
  std::optional<std::int64_t> retry_at_ms{};
};

enum class RedriveAction { retry, skip };

struct RedriveRequest {
  std::string session_id{};
  std::int64_t index = 0;
  RedriveAction action = RedriveAction::retry;
};

struct StateOptions {
  std::optional<std::int64_t> through_index{};           // Fold up to here (default the head).
  std::optional<std::int64_t> snapshot_through_index{};  // Newest checkpoint allowed.
};

// One session of a batched read_states call.
struct StateRequest {
  std::string session_id{};
  std::optional<std::int64_t> through_index{};
  std::optional<std::int64_t> snapshot_through_index{};
};

struct ClearRequest {
  std::string session_id{};
  // Clear only if the head is this index. Makes a retry idempotent: a repeat after success
  // reports cleared = true.
  std::optional<std::int64_t> if_last_index{};
  // A handler clearing its own session: refused with SupersededAttempt if the attempt is stale.
  std::optional<EventCause> cause{};
};

// Upserts (state not null) or removes (state null) one participant of a session's presence.
struct PresencePatch {
  std::string participant{};
  Json state{};                 // JSON null removes the participant.
  std::int64_t ttl_ms = 0;    // > 0: the entry expires ttl_ms after now.
};

}  // namespace a2

namespace a2 {
constexpr std::string_view to_string(RedriveAction a) {
  return a == RedriveAction::retry ? "retry" : "skip";
}
}  // namespace a2
