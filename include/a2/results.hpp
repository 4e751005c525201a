// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
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
