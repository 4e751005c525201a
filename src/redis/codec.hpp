// SPDX-License-Identifier: MIT
#pragma once

// Decoding of Redis replies into the backend's values (docs/redis-layout.md#per-event-metadata,
// docs/redis-layout.md#value-encodings): stream entries, metadata columns, integers that arrive
// as integers or strings. Every malformed value throws Unavailable: stored data the store cannot
// read is a store failure, not bad input.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "a2/errors.hpp"
#include "a2/results.hpp"
#include "a2/types.hpp"
#include "redis/client.hpp"

namespace a2::redis::detail {

// The 14 exposed metadata suffixes: the original package's 13, in its
// STORED_EVENT_META_SUFFIXES order, then a2's `av` (available_at, docs/semantics.md#delayed-work).
inline constexpr std::array<const char*, 14> kMetaSuffixes = {
    "p", "pa", "ri", "ch", "ce", "f", "fc", "lc", "lf", "lfa", "d", "a", "e", "av"};

[[noreturn]] void unexpected(std::string_view op, const std::string& what);

// A reply that must be a string, status or integer, as text; nil is "".
std::string text(std::string_view op, const Reply& r);
// A number that arrives as an integer or as text in the JSON number grammar ("12", "1e+15",
// "1700000060000.3333": the original package stores fractional milliseconds as they come),
// truncated toward zero. Throws Unavailable for anything else, or beyond +-(2^53 - 1).
std::int64_t number(std::string_view op, const Reply& r);
std::optional<std::int64_t> optional_number(std::string_view op, const Reply& r);
// Strict: an integral value only ("7", "1e+15"); counts, splits, boundaries and entry ids.
std::optional<std::int64_t> parse_integer(std::string_view s);
// Lenient: any number of the JSON grammar, truncated toward zero; times and counters.
std::optional<std::int64_t> parse_number(std::string_view s);
// Text of the JSON number grammar as a finite double; no spaces, no hex, no inf/nan.
std::optional<double> parse_double(std::string_view s);

// "<I>-0" -> I.
std::int64_t entry_index(std::string_view op, const std::string& entry_id);

// A stream entry [id, [field, value, ...]] as a public event / a stored event without metadata.
// Those taking the entry by rvalue move its strings out instead of copying them.
Event to_event(std::string_view op, const std::string& session_id, Reply&& entry);
StoredEvent to_stored_event(std::string_view op, const std::string& session_id, const Reply& entry);
// The same from an entry's id and the values of its six fields in the order a2 and the original
// package write them (id, type, payload, created_at, cause, lane), as a claim's reply carries
// such an entry (lua/lib/entries.lua put_entry).
inline constexpr std::size_t kEntryValues = 7;
StoredEvent stored_event_of_values(std::string_view op, const std::string& session_id,
                                   std::span<const Reply, kEntryValues> values);
// Fills `e` (a fresh StoredEvent, e.g. one just placed in the caller's vector) in place.
void fill_stored_event(std::string_view op, const std::string& session_id, Reply&& entry,
                       StoredEvent& e);
SerializedEvent to_serialized_event(std::string_view op, const std::string& session_id,
                                    Reply&& entry);

// Applies the metadata columns (kMetaSuffixes order; nil = absent) to a stored event.
void apply_columns(std::string_view op, StoredEvent& e,
                   const std::array<const Reply*, kMetaSuffixes.size()>& columns);

// Pairs (stream entry, metadata columns in kMetaSuffixes order, possibly cut short: Lua drops
// trailing nils) from r[from] on, as stored rows (dead_letters.lua, a completion replay's 'rows').
std::vector<StoredEvent> entry_rows(std::string_view op, const std::string& session_id,
                                    const Reply& r, std::size_t from = 0);

// The cause field: '' = none, else JSON {"index":I,"attempt":A} (key order free).
std::optional<EventCause> parse_cause(std::string_view op, const std::string& raw);
// The cause text an append stores, as JSON.stringify writes it: {"index":I,"attempt":A}.
std::string cause_json(const EventCause& c);

}  // namespace a2::redis::detail
