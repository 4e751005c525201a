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
  std::string_view text(Result::size_type k) const { return (*this)[k].view(); }
  std::string string(Result::size_type k) const { return std::string(text(k)); }
  void assign(Result::size_type k, std::string& to) const { to.assign(text(k)); }
  std::int64_t integer(Result::size_type k) const { return (*this)[k].as<std::int64_t>(); }
  std::optional<std::int64_t> opt_integer(Result::size_type k) const {
    if ((*this)[k].is_null()) return std::nullopt;
    return integer(k);
  }
  void assign_opt(Result::size_type k, std::optional<std::string>& to) const {
    if ((*this)[k].is_null())
      to.reset();
    else
      to.emplace(text(k));
  }
  // Parsed once, straight from the cell's text; SQL null is JSON null.
  Json json(Result::size_type k) const {
    if ((*this)[k].is_null()) return Json();
    return a2::detail::parse_stored_json(text(k));
  }

 private:
  Result::Row row_;
  Result::size_type first_;
};

void fill_event(Cells& c, Event& e) {
  c.assign(0, e.session_id);
  e.index = c.integer(1);
  c.assign(2, e.id);
  c.assign(3, e.type);
  e.payload = c.json(4);
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
  e.session_id = c.string(0);
  e.index = c.integer(1);
  e.id = c.string(2);
  e.type = c.string(3);
  e.payload_json = c[4].is_null() ? "null" : c.string(4);
  e.created_at = c.integer(5);
  return e;
}

namespace {

// Fills a fresh StoredEvent in place (the caller's vector slot: no move of the whole event).
void fill_stored(Cells& c, StoredEvent& e) {
  fill_event(c, e);
  if (!c[6].is_null()) {
    const Json cause = a2::detail::parse_stored_json(c.text(6));
    e.cause =
        EventCause{cause.at("index").get<std::int64_t>(), cause.at("attempt").get<std::int64_t>()};
  }
  c.assign_opt(7, e.lane);
  e.processed_at = c.opt_integer(8);
  e.processed_by_attempt = c.opt_integer(9);
  if (!c[10].is_null())
    e.returned_event_ids =
        a2::detail::parse_stored_json(c.text(10)).get<std::vector<std::string>>();
  e.first_claimed_at = c.opt_integer(11);
  e.last_claimed_at = c.opt_integer(12);
  e.attempt_count = c.integer(13);
  c.assign_opt(14, e.claim_holder);
  e.claim_expires_at = c.opt_integer(15);
  e.failure_count = c.integer(16);
  e.last_failed_at = c.opt_integer(17);
  e.last_failed_attempt = c.opt_integer(18);
  c.assign_opt(19, e.last_error);
  e.failed_at = c.opt_integer(20);
  e.available_at = c.opt_integer(21);
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
      if (!c[1].is_null()) fill_stored(c, out_.emplace_back());
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

}  // namespace a2::postgres::detail
