// SPDX-License-Identifier: MIT
#include "postgres/rows.hpp"

#include <optional>
#include <stdexcept>
#include <string>

#include "a2/detail/json_text.hpp"

namespace a2::postgres::detail {
namespace {

std::optional<std::int64_t> opt_int(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return f.as<std::int64_t>();
}
std::optional<std::string> opt_string(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return std::string(f.c_str());
}
Json json_or_null(const pqxx::field& f) {
  return f.is_null() ? Json() : a2::detail::parse_stored_json(f.c_str());
}

}  // namespace

void expect_columns(const pqxx::result& rows, pqxx::row::size_type first,
                    const std::string_view* names, std::size_t count, bool exact) {
  const auto columns = static_cast<std::size_t>(rows.columns());
  if (columns < first + count || (exact && columns != first + count))
    throw std::logic_error("the statement returns " + std::to_string(columns) +
                           " columns; its decoder reads " + std::to_string(first + count));
  for (std::size_t i = 0; i < count; ++i) {
    const auto column = static_cast<pqxx::row::size_type>(first + i);
    if (names[i] != rows.column_name(column))
      throw std::logic_error("column " + std::to_string(column) + " of the statement is '" +
                             rows.column_name(column) + "'; its decoder reads '" +
                             std::string(names[i]) + "'");
  }
}

void expect_columns(const pqxx::result& rows, pqxx::row::size_type first,
                    std::initializer_list<std::string_view> names, bool exact) {
  expect_columns(rows, first, names.begin(), names.size(), exact);
}

void expect_event_columns(const pqxx::result& rows, pqxx::row::size_type first) {
  expect_columns(rows, first, kStoredColumns.data(), kEventColumnCount);
}

void expect_stored_columns(const pqxx::result& rows, pqxx::row::size_type first) {
  expect_columns(rows, first, kStoredColumns.data(), kStoredColumns.size(), true);
}

Event event_from_row(const pqxx::row& row, pqxx::row::size_type first) {
  Event e;
  e.session_id = row[first].c_str();
  e.index = row[first + 1].as<std::int64_t>();
  e.id = row[first + 2].c_str();
  e.type = row[first + 3].c_str();
  e.payload = json_or_null(row[first + 4]);
  e.created_at = row[first + 5].as<std::int64_t>();
  return e;
}

SerializedEvent serialized_from_row(const pqxx::row& row, pqxx::row::size_type first) {
  SerializedEvent e;
  e.session_id = row[first].c_str();
  e.index = row[first + 1].as<std::int64_t>();
  e.id = row[first + 2].c_str();
  e.type = row[first + 3].c_str();
  e.payload_json = row[first + 4].is_null() ? "null" : row[first + 4].c_str();
  e.created_at = row[first + 5].as<std::int64_t>();
  return e;
}

StoredEvent stored_from_row(const pqxx::row& row, pqxx::row::size_type first) {
  StoredEvent e;
  static_cast<Event&>(e) = event_from_row(row, first);
  auto at = [&](pqxx::row::size_type k) { return row[first + k]; };
  if (!at(6).is_null()) {
    const Json cause = a2::detail::parse_stored_json(at(6).c_str());
    e.cause =
        EventCause{cause.at("index").get<std::int64_t>(), cause.at("attempt").get<std::int64_t>()};
  }
  e.lane = opt_string(at(7));
  e.processed_at = opt_int(at(8));
  e.processed_by_attempt = opt_int(at(9));
  if (!at(10).is_null())
    e.returned_event_ids =
        a2::detail::parse_stored_json(at(10).c_str()).get<std::vector<std::string>>();
  e.first_claimed_at = opt_int(at(11));
  e.last_claimed_at = opt_int(at(12));
  e.attempt_count = at(13).as<std::int64_t>();
  e.claim_holder = opt_string(at(14));
  e.claim_expires_at = opt_int(at(15));
  e.failure_count = at(16).as<std::int64_t>();
  e.last_failed_at = opt_int(at(17));
  e.last_failed_attempt = opt_int(at(18));
  e.last_error = opt_string(at(19));
  e.failed_at = opt_int(at(20));
  e.available_at = opt_int(at(21));
  return e;
}

std::vector<Event> events_of(const pqxx::result& rows, pqxx::row::size_type first) {
  expect_event_columns(rows, first);
  std::vector<Event> out;
  out.reserve(rows.size());
  for (const auto& row : rows) out.push_back(event_from_row(row, first));
  return out;
}

std::vector<StoredEvent> stored_events_of(const pqxx::result& rows, pqxx::row::size_type first) {
  return stored_events_of(rows, first, 0, rows.size());
}

std::vector<StoredEvent> stored_events_of(const pqxx::result& rows, pqxx::row::size_type first,
                                          pqxx::result::size_type begin,
                                          pqxx::result::size_type end) {
  expect_stored_columns(rows, first);
  std::vector<StoredEvent> out;
  out.reserve(end - begin);
  for (auto r = begin; r < end; ++r) {
    const auto row = rows.at(r);
    if (!row[first + 1].is_null()) out.push_back(stored_from_row(row, first));
  }
  return out;
}

}  // namespace a2::postgres::detail
