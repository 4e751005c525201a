// SPDX-License-Identifier: MIT
#pragma once

// The one decoding of event rows. Every statement that returns events (the reads of sql/, and
// the write statements, which unnest the a2_events[] their function returns) selects the
// columns below in this order, payload, cause and returned_event_ids as JSON text; the public
// event columns are the first six of the stored ones. The one-event appends (append_one,
// append_group), whose rows come back only for a replay, return them as one JSON cell
// (`r_rows`) of the same columns instead: stored_events_of_json. Decoders check the column
// names, so a statement and its decoder that disagree fail every test that runs them.

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <vector>

#include "a2/types.hpp"
#include "postgres/result.hpp"

namespace a2::postgres::detail {

// session_id, idx, event_id, event_type, payload, created_at.
inline constexpr Result::size_type kEventColumnCount = 6;
// The public columns, then the rest of a2_events but lane_ready (available_at: schema version 2).
inline constexpr std::array<std::string_view, 22> kStoredColumns = {"session_id",
                                                                    "idx",
                                                                    "event_id",
                                                                    "event_type",
                                                                    "payload",
                                                                    "created_at",
                                                                    "cause",
                                                                    "lane",
                                                                    "processed_at",
                                                                    "processed_by_attempt",
                                                                    "returned_event_ids",
                                                                    "first_claimed_at",
                                                                    "last_claimed_at",
                                                                    "attempt_count",
                                                                    "claim_holder",
                                                                    "claim_expires_at",
                                                                    "failure_count",
                                                                    "last_failed_at",
                                                                    "last_failed_attempt",
                                                                    "last_error",
                                                                    "failed_at",
                                                                    "available_at"};

// Throws std::logic_error unless columns first.. of `rows` are named `names` (and, with
// `exact`, no other column follows).
void expect_columns(const Result& rows, Result::size_type first, const std::string_view* names,
                    std::size_t count, bool exact = false);
void expect_columns(const Result& rows, Result::size_type first,
                    std::initializer_list<std::string_view> names, bool exact = false);
// The public event columns at `first`.
void expect_event_columns(const Result& rows, Result::size_type first);
// The stored event columns at `first`, and nothing after them.
void expect_stored_columns(const Result& rows, Result::size_type first);

// A public event from the event columns starting at `first`.
Event event_from_row(const Result::Row& row, Result::size_type first = 0);
// The same columns with the payload left as its stored JSON text.
SerializedEvent serialized_from_row(const Result::Row& row, Result::size_type first = 0);
// A stored event from the stored columns starting at `first`.
StoredEvent stored_from_row(const Result::Row& row, Result::size_type first = 0);

// Every row's public events (a read statement's whole result), checking the columns.
std::vector<Event> events_of(const Result& rows, Result::size_type first = 0);
// Every row's stored event, skipping rows whose event columns are null (a write statement's
// "no rows" row), checking the columns.
std::vector<StoredEvent> stored_events_of(const Result& rows, Result::size_type first = 0);
// The same for the rows [begin, end) of `rows` (one part of a reply that has several).
std::vector<StoredEvent> stored_events_of(const Result& rows, Result::size_type first,
                                          Result::size_type begin, Result::size_type end);

// The stored events of a write statement's `r_rows` cell (a2_events_json, sql/schema.sql): a
// JSON array of rows, each an array of the stored-event columns in the order above, the JSON
// columns as their text. SQL null is no rows. The same decoding of each row as the columns'.
std::vector<StoredEvent> stored_events_of_json(const Result::Field& rows);

// Event rows decoded into T, from column `first` on: Event reads the public columns,
// StoredEvent the stored ones and skips rows whose event columns are null (a write statement's
// "no rows" row). The columns are checked at the first add(). The one decoding loop of event
// rows: events_of() and stored_events_of() run it on a whole result, and a streamed read
// (Executor::stream, one-row Results as they arrive) runs it once per row.
template <class T>
class EventRows {
 public:
  explicit EventRows(Result::size_type first = 0) : first_(first) {}
  // Rows [begin, end) of `rows`.
  void add(const Result& rows, Result::size_type begin, Result::size_type end);
  void operator()(const Result& rows) { add(rows, 0, rows.size()); }
  void reserve(std::size_t n) { out_.reserve(n); }
  std::vector<T> take() { return std::move(out_); }

 private:
  Result::size_type first_;
  bool checked_ = false;
  std::vector<T> out_;
};

extern template class EventRows<Event>;
extern template class EventRows<StoredEvent>;

using EventCollector = EventRows<Event>;
using StoredEventCollector = EventRows<StoredEvent>;

}  // namespace a2::postgres::detail
