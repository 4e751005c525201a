// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "a2/detail/json_object.hpp"

// Value types of the event log. All are plain values: safe to copy, and safe to share between
// threads as long as nobody mutates a shared instance.
namespace a2 {

// JSON values keep their members in insertion order, as JavaScript objects do; written as
// JSON.stringify writes them (a2/detail/json_text.hpp).
using Json = detail::OrderedJson;

// The default type of the marker event a clear appends: each backend's
// Options::clear_event_type. Reserved: the runtime should not append events of that type itself
// (the store does not stop it, as in the original). It is the one setting that must match the
// TypeScript services sharing the database (docs/semantics.md#Q1).
inline constexpr const char* kClearEventType = "a2.clear";

// Documented input limits, enforced by the shared validator (include/a2/detail/validate.hpp)
// before any I/O. Limits are in bytes of UTF-8.
inline constexpr std::size_t kMaxSessionIdBytes = 200;
inline constexpr std::size_t kMaxEventIdBytes = 256;
inline constexpr std::size_t kMaxEventTypeBytes = 256;
inline constexpr std::size_t kMaxLaneBytes = 256;
inline constexpr std::size_t kMaxHolderBytes = 256;
inline constexpr std::size_t kMaxReducerBytes = 128;
inline constexpr std::size_t kMaxParticipantBytes = 256;
inline constexpr std::size_t kMaxErrorTextBytes = 64 * 1024;
// Serialized JSON text of a payload, checkpoint state or presence state, each number counted at
// the length of its plain decimal form (1e308 counts 309 bytes: Postgres jsonb prints it so).
inline constexpr std::size_t kMaxPayloadBytes = 4 * 1024 * 1024;
// Nesting depth of such a JSON value (arrays and objects; `[]` is 1, `[[1]]` is 2).
inline constexpr std::size_t kMaxJsonDepth = 512;
inline constexpr std::size_t kMaxBatchEvents = 10000;  // Events per append or completion.
inline constexpr std::size_t kMaxListedIndexes = 10000;  // Renewals, exclusions, pins, requests.
inline constexpr std::size_t kMaxCompletedSessions = 32;  // Requests per complete_in_sessions.
// Indexes, attempts and times must fit a double exactly (Redis Lua numbers are doubles).
inline constexpr std::int64_t kMaxSafeInteger = 9007199254740991;  // 2^53 - 1

// Links an event to the handler attempt that produced it.
struct EventCause {
  std::int64_t index = 0;
  std::int64_t attempt = 0;
  friend bool operator==(const EventCause&, const EventCause&) = default;
};

// A public event: what reads, feeds and reducers see.
struct Event {
  std::string session_id;
  std::int64_t index = 0;
  std::string id;
  std::string type;
  Json payload;  // JSON null when the caller gave none. Compare as JSON values.
  std::int64_t created_at = 0;  // Milliseconds since the Unix epoch.
};

// An event with its work metadata (docs/semantics.md#storedevent). Absent values are std::nullopt.
struct StoredEvent : Event {
  std::optional<EventCause> cause;
  std::optional<std::string> lane;
  std::optional<std::int64_t> processed_at;
  std::optional<std::int64_t> processed_by_attempt;
  std::optional<std::vector<std::string>> returned_event_ids;
  std::optional<std::int64_t> first_claimed_at;
  std::optional<std::int64_t> last_claimed_at;
  std::int64_t attempt_count = 0;
  std::optional<std::string> claim_holder;
  std::optional<std::int64_t> claim_expires_at;
  std::int64_t failure_count = 0;
  std::optional<std::int64_t> last_failed_at;
  std::optional<std::int64_t> last_failed_attempt;
  std::optional<std::string> last_error;
  std::optional<std::int64_t> failed_at;
  // Not claimable before this time (a delayed retry or scheduled work); an a2 extension.
  std::optional<std::int64_t> available_at;
  // Set only on events returned by claim_available, and only when the boundary is > 0.
  std::optional<std::int64_t> clear_index;
};

// A feed row with the payload left as the stored JSON text (docs/semantics.md#serializedevent).
struct SerializedEvent {
  std::string id;
  std::string type;
  std::string payload_json;
  std::int64_t index = 0;
  std::string session_id;
  std::int64_t created_at = 0;
};

// Input of append. An event without id gets one from the store's IdSource.
struct NewEvent {
  std::optional<std::string> id;
  std::string type;
  Json payload;  // Default JSON null.
  std::optional<EventCause> cause;
  std::optional<std::string> lane;  // "" means no lane.
  bool settled = false;             // Stored already processed: a fact, not work.
  // Scheduled work: appended now, claimable from this time (ms). Not with settled.
  std::optional<std::int64_t> available_at_ms{};
};

// A child event written by complete_attempt; its cause is set by the store to
// {parent index, attempt}. Supply ids: only then is a lost-acknowledgement retry recognised.
struct ChildEvent {
  std::optional<std::string> id;
  std::string type;
  Json payload;
  std::optional<std::string> lane;
  bool settled = false;
  std::optional<std::int64_t> available_at_ms{};  // As NewEvent::available_at_ms.
};

// A reducer checkpoint: the state after folding events up to `index`.
struct Checkpoint {
  std::int64_t index = 0;
  Json state;
};

// One checkpoint write of put_snapshots, optionally pinned to unfinished events that will need it.
struct SnapshotWrite {
  std::int64_t index = 0;
  Json state;
  std::set<std::int64_t> pin_event_indexes;
};

}  // namespace a2
