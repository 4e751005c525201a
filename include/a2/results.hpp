// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <exception>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "a2/options.hpp"
#include "a2/types.hpp"

// Results of the Store operations. Expected outcomes are verdict enums spelled like the
// contract's wire words; failures are exceptions (errors.hpp). Plain values.
namespace a2 {

// Not [[nodiscard]]: an append is commonly called for its effect alone.
struct AppendResult {
  std::vector<StoredEvent> events;  // The new rows (or, on a replay, the stored rows).
  bool has_pending = false;         // Some unfinished event of the current lifetime exists.
};

enum class ClaimVerdict { claimed, busy, settled };

struct [[nodiscard]] ClaimResult {
  ClaimVerdict verdict = ClaimVerdict::settled;
  std::vector<StoredEvent> events;  // claimed: every claimed row, ascending.
  // busy: the earliest time something becomes claimable: a live lease's end or a delayed
  // event's available_at (ms).
  std::int64_t retry_at = 0;
};

struct [[nodiscard]] ReleaseResult {
  std::vector<std::int64_t> released;  // Leases ended: available again at once.
  std::vector<std::int64_t> not_held;  // Not a live lease of this holder at this attempt.
};

// One entry of the work index: the session may have claimable work from at_ms on (an event
// became ready at that time, a lease ends, a delayed event comes due). Conservative: the
// session may turn out to have none (a claim then reports settled or busy and corrects it).
struct SessionWork {
  std::string session_id{};
  std::int64_t at_ms = 0;
};

struct [[nodiscard]] WorkPage {
  std::vector<SessionWork> sessions;  // Ascending by (at_ms, session_id bytewise).
  // Where the next page starts: the last entry, set when the page is full (limit entries).
  std::optional<WorkCursor> next;
};

// The sessions whose work index entry a sweep added or moved earlier (sweep_work()).
struct [[nodiscard]] SweepResult {
  std::vector<SessionWork> indexed;
};

// The session's head and clear boundary (head()).
struct [[nodiscard]] HeadResult {
  std::int64_t head_index = 0;   // The highest index; 0 for a new session.
  std::int64_t clear_index = 0;  // The boundary; 0 if never cleared.
};

struct [[nodiscard]] RenewResult {
  std::vector<std::int64_t> renewed;     // Leases extended.
  std::vector<std::int64_t> superseded;  // Cleared or re-claimed: the attempt is over.
};

enum class CompleteVerdict { completed, superseded };

struct [[nodiscard]] CompleteResult {
  CompleteVerdict verdict = CompleteVerdict::superseded;
  std::vector<StoredEvent> events;  // completed: the child rows, ascending.
  std::optional<ClaimResult> next;  // The claim_next result, when the request asked for one.
};

struct [[nodiscard]] CompleteManyResult {
  std::vector<CompleteResult> results;  // results[i] answers completions[i] (no `next` there).
  std::optional<ClaimResult> next;      // The claim_next result, when the request asked for one.
};

// One request's answer in complete_in_sessions (docs/semantics.md#complete_in_sessions): the
// result complete_attempts would have returned for it alone, or the error it would have thrown.
struct [[nodiscard]] CompleteManyOutcome {
  std::optional<CompleteManyResult> result;  // Set when the request was answered.
  std::exception_ptr error;                  // Set otherwise: an a2::Error (errors.hpp).
  bool ok() const noexcept { return result.has_value(); }
  // The result; rethrows the error.
  CompleteManyResult& value() {
    if (!result) std::rethrow_exception(error);
    return *result;
  }
};

enum class FailVerdict { failed, dead_lettered, superseded };

struct [[nodiscard]] FailResult {
  FailVerdict verdict = FailVerdict::superseded;
  std::int64_t failure_count = 0;
};

struct [[nodiscard]] RedriveResult {
  bool redriven = false;
  bool has_pending = false;
};

struct [[nodiscard]] StateResult {
  std::optional<std::int64_t> head_index;  // The reducer's newest checkpoint, if any.
  std::optional<Checkpoint> snapshot;      // Where the fold starts (null: at the lifetime start).
  std::vector<Event> events;               // The events to fold after the snapshot.
  std::optional<std::int64_t> clear_index; // Present only when the session was cleared.
};

// Not [[nodiscard]]: a clear is commonly called for its effect alone.
struct ClearResult {
  bool cleared = false;
  std::int64_t index = 0;        // The head after the call.
  std::int64_t clear_index = 0;  // The boundary after the call.
};

struct [[nodiscard]] ReclaimResult {
  std::int64_t deleted = 0;  // Old events this call removed.
  bool done = false;         // Nothing below the boundary remains; loop until true.
};

// A session's counts (docs/semantics.md#session-counts). Read without locks: each count is
// exact at some moment during the call, not all at one moment.
struct SessionSummary {
  std::string session_id{};
  std::int64_t head = 0;         // The highest index ever assigned.
  std::int64_t clear_index = 0;  // The boundary (latest clear marker), 0 if never cleared.
  std::int64_t pending = 0;      // Unfinished work of the current lifetime, dead letters excluded
                                 // (ready + claimed + delayed + lane-blocked).
  std::int64_t ready = 0;        // Pending events a claim_available would take now: not held by an
                                 // unexpired lease, not delayed (available_at <= now), first
                                 // pending event of its lane (or no lane).
  std::int64_t claimed = 0;      // Pending events held by an unexpired lease.
  std::int64_t dead = 0;         // Dead letters of the current lifetime.
};

// One page of list_sessions (docs/semantics.md#list_sessions).
struct [[nodiscard]] SessionPage {
  std::vector<SessionSummary> sessions{};
  std::string next_cursor{};  // "" when there is no further page.
};

// One lane with unfinished work (docs/semantics.md#inspect_session).
struct LaneState {
  std::string lane{};
  std::int64_t head_index = 0;  // The lane's first pending event (the only one that may be ready).
  std::int64_t pending = 0;     // Pending events of the lane (dead letters excluded).
};

// One pending event with a claim holder recorded.
struct ClaimState {
  std::int64_t index = 0;
  std::int64_t attempt = 0;  // attempt_count
  std::string holder{};
  std::int64_t expires_at = 0;  // ms; may be in the past (an expired lease, claimable again)
};

// One reducer's newest checkpoint of the current lifetime.
struct SnapshotState {
  std::string reducer{};
  std::int64_t index = 0;
  std::int64_t history = 0;  // Older checkpoints kept (history entries below `index`).
};

// What an operator sees of one session (docs/semantics.md#inspect_session).
struct [[nodiscard]] SessionInspection {
  SessionSummary summary{};
  std::vector<LaneState> lanes{};          // By lane name (byte order).
  std::vector<ClaimState> claims{};        // By index.
  std::vector<SnapshotState> snapshots{};  // By reducer name (byte order).
};

// Live presence: participant -> state.
using PresenceMap = std::map<std::string, Json>;

constexpr std::string_view to_string(ClaimVerdict v) {
  switch (v) {
    case ClaimVerdict::claimed: return "claimed";
    case ClaimVerdict::busy: return "busy";
    case ClaimVerdict::settled: return "settled";
  }
  return "unknown";
}
constexpr std::string_view to_string(CompleteVerdict v) {
  return v == CompleteVerdict::completed ? "completed" : "superseded";
}
constexpr std::string_view to_string(FailVerdict v) {
  switch (v) {
    case FailVerdict::failed: return "failed";
    case FailVerdict::dead_lettered: return "dead_lettered";
    case FailVerdict::superseded: return "superseded";
  }
  return "unknown";
}

// Verdicts print as their wire words (test failure messages, logs).
inline std::ostream& operator<<(std::ostream& out, ClaimVerdict v) { return out << to_string(v); }
inline std::ostream& operator<<(std::ostream& out, CompleteVerdict v) {
  return out << to_string(v);
}
inline std::ostream& operator<<(std::ostream& out, FailVerdict v) { return out << to_string(v); }

}  // namespace a2
