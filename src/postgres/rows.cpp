// SPDX-License-Identifier: MIT
#include "postgres/rows.hpp"

#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "a2/detail/json_text.hpp"

namespace a2::postgres::detail {
namespace {

// The cells of one row from column `first` on. Text is read with its length (no strlen),
// integers with from_chars.
class Cells {
 public:
  Cells(const Result::Row& row, Result::size_type first) : row_(row), first_(first) {}

  Result::Field operator[](Result::size_type k) const { return row_[first_ + k]; }
  bool null(Result::size_type k) const { return (*this)[k].is_null(); }
  std::string_view text(Result::size_type k) const { return (*this)[k].view(); }
  std::int64_t integer(Result::size_type k) const { return (*this)[k].as<std::int64_t>(); }

 private:
  Result::Row row_;
  Result::size_type first_;
};

// The same cells from one row of a write statement's r_rows (a2_events_json, schema.sql): a
// JSON array of the stored-event columns in order, text columns (the JSON ones as their text)
// as strings, integers as numbers, SQL null as null. Anything else throws std::logic_error.
class JsonCells {
 public:
  explicit JsonCells(const Json& row) : row_(row) {
    if (!row_.is_array() || row_.size() != kStoredColumns.size())
      throw std::logic_error("r_rows: a row is not an array of the " +
                             std::to_string(kStoredColumns.size()) + " stored-event columns");
  }

  bool null(Result::size_type k) const { return cell(k).is_null(); }
  std::string_view text(Result::size_type k) const {
    const Json& v = cell(k);
    if (!v.is_string()) throw std::logic_error(wrong(k, "a string"));
    return v.get_ref<const std::string&>();
  }
  std::int64_t integer(Result::size_type k) const {
    const Json& v = cell(k);
    if (!v.is_number_integer()) throw std::logic_error(wrong(k, "an integer"));
    return v.get<std::int64_t>();
  }

 private:
  const Json& cell(Result::size_type k) const { return row_[static_cast<std::size_t>(k)]; }
  static std::string wrong(Result::size_type k, const char* what) {
    return "r_rows: column '" + std::string(kStoredColumns[static_cast<std::size_t>(k)]) +
           "' is not " + what;
  }
  const Json& row_;
};

// What both cell sources read alike.
template <class C>
std::optional<std::int64_t> opt_integer(const C& c, Result::size_type k) {
  if (c.null(k)) return std::nullopt;
  return c.integer(k);
}
template <class C>
void assign_opt(const C& c, Result::size_type k, std::optional<std::string>& to) {
  if (c.null(k))
    to.reset();
  else
    to.emplace(c.text(k));
}
// Parsed once, straight from the cell's text; SQL null is JSON null.
template <class C>
Json json(const C& c, Result::size_type k) {
  if (c.null(k)) return Json();
  return a2::detail::parse_stored_json(c.text(k));
}

template <class C>
void fill_event(const C& c, Event& e) {
  e.session_id.assign(c.text(0));
  e.index = c.integer(1);
  e.id.assign(c.text(2));
  e.type.assign(c.text(3));
  e.payload = json(c, 4);
  e.created_at = c.integer(5);
}

}  // namespace

void expect_columns(const Result& rows, Result::size_type first, const std::string_view* names,
                    std::size_t count, bool exact) {
  const auto columns = static_cast<std::size_t>(rows.columns());
  if (columns < first + count || (exact && columns != first + count))
    throw std::logic_error("the statement returns " + std::to_string(columns) +
                           " columns; its decoder reads " + std::to_string(first + count));
  for (std::size_t i = 0; i < count; ++i) {
    const auto column = static_cast<Result::size_type>(first + i);
    if (names[i] != rows.column_name(column))
      throw std::logic_error("column " + std::to_string(column) + " of the statement is '" +
                             rows.column_name(column) + "'; its decoder reads '" +
                             std::string(names[i]) + "'");
  }
}

void expect_columns(const Result& rows, Result::size_type first,
                    std::initializer_list<std::string_view> names, bool exact) {
  expect_columns(rows, first, names.begin(), names.size(), exact);
}

void expect_event_columns(const Result& rows, Result::size_type first) {
  expect_columns(rows, first, kStoredColumns.data(), kEventColumnCount);
}

void expect_stored_columns(const Result& rows, Result::size_type first) {
  expect_columns(rows, first, kStoredColumns.data(), kStoredColumns.size(), true);
}

Event event_from_row(const Result::Row& row, Result::size_type first) {
  Cells c(row, first);
  Event e;
  fill_event(c, e);
  return e;
}

SerializedEvent serialized_from_row(const Result::Row& row, Result::size_type first) {
  Cells c(row, first);
  SerializedEvent e;
  e.session_id.assign(c.text(0));
  e.index = c.integer(1);
  e.id.assign(c.text(2));
  e.type.assign(c.text(3));
  e.payload_json.assign(c.null(4) ? std::string_view("null") : c.text(4));
  e.created_at = c.integer(5);
  return e;
}

namespace {

// Fills a fresh StoredEvent in place (the caller's vector slot: no move of the whole event).
template <class C>
void fill_stored(const C& c, StoredEvent& e) {
  fill_event(c, e);
  if (!c.null(6)) {
    const Json cause = a2::detail::parse_stored_json(c.text(6));
    e.cause =
        EventCause{cause.at("index").get<std::int64_t>(), cause.at("attempt").get<std::int64_t>()};
  }
  assign_opt(c, 7, e.lane);
  e.processed_at = opt_integer(c, 8);
  e.processed_by_attempt = opt_integer(c, 9);
  if (!c.null(10)) {
    const Json ids = a2::detail::parse_stored_json(c.text(10));
    e.returned_event_ids = ids.get<std::vector<std::string>>();
  }
  e.first_claimed_at = opt_integer(c, 11);
  e.last_claimed_at = opt_integer(c, 12);
  e.attempt_count = c.integer(13);
  assign_opt(c, 14, e.claim_holder);
  e.claim_expires_at = opt_integer(c, 15);
  e.failure_count = c.integer(16);
  e.last_failed_at = opt_integer(c, 17);
  e.last_failed_attempt = opt_integer(c, 18);
  assign_opt(c, 19, e.last_error);
  e.failed_at = opt_integer(c, 20);
  e.available_at = opt_integer(c, 21);
}

}  // namespace

StoredEvent stored_from_row(const Result::Row& row, Result::size_type first) {
  Cells c(row, first);
  StoredEvent e;
  fill_stored(c, e);
  return e;
}

template <class T>
void EventRows<T>::add(const Result& rows, Result::size_type begin, Result::size_type end) {
  constexpr bool kStored = std::is_same_v<T, StoredEvent>;
  if (!checked_) {
    if constexpr (kStored)
      expect_stored_columns(rows, first_);
    else
      expect_event_columns(rows, first_);
    checked_ = true;
  }
  for (auto r = begin; r < end; ++r) {
    Cells c(rows.at(r), first_);
    if constexpr (kStored) {
      if (!c.null(1)) fill_stored(c, out_.emplace_back());
    } else {
      fill_event(c, out_.emplace_back());
    }
  }
}

template class EventRows<Event>;
template class EventRows<StoredEvent>;

std::vector<Event> events_of(const Result& rows, Result::size_type first) {
  EventRows<Event> out(first);
  out.reserve(static_cast<std::size_t>(rows.size()));
  out(rows);
  return out.take();
}

std::vector<StoredEvent> stored_events_of(const Result& rows, Result::size_type first) {
  return stored_events_of(rows, first, 0, rows.size());
}

std::vector<StoredEvent> stored_events_of(const Result& rows, Result::size_type first,
                                          Result::size_type begin, Result::size_type end) {
  EventRows<StoredEvent> out(first);
  out.reserve(static_cast<std::size_t>(end - begin));
  out.add(rows, begin, end);
  return out.take();
}

std::vector<StoredEvent> stored_events_of_json(const Result::Field& rows) {
  std::vector<StoredEvent> out;
  if (rows.is_null()) return out;
  const Json all = a2::detail::parse_stored_json(rows.view());
  if (!all.is_array()) throw std::logic_error("r_rows is not a JSON array");
  out.reserve(all.size());
  for (const Json& row : all) fill_stored(JsonCells(row), out.emplace_back());
  return out;
}

}  // namespace a2::postgres::detail
