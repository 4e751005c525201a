// SPDX-License-Identifier: MIT
#pragma once

// The typed caller of a2_append (sql/append.sql, sql/schema.sql): the batch as parallel arrays.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "a2/embedded/sql_files.hpp"
#include "a2/results.hpp"
#include "a2/types.hpp"
#include "postgres/calls/params.hpp"
#include "postgres/executor.hpp"
#include "postgres/result.hpp"
#include "postgres/rows.hpp"

namespace a2::postgres::detail::calls {

struct Append {
  static constexpr const a2::detail::EmbeddedText& kStatement = a2::detail::sql::kAppend;
  static constexpr Result::size_type kWakeColumn = 1;  // r_wake (postgres/wake_sender.hpp).
  using Reply = AppendResult;

  std::string session_id;
  std::int64_t now_ms = 0;
  std::optional<std::int64_t> origin_index;
  std::vector<std::string> ids;
  std::vector<std::string> types;
  std::vector<const Json*> payloads;  // Borrowed from the request, which outlives the call.
  std::vector<std::optional<std::int64_t>> cause_indexes;
  std::vector<std::optional<std::int64_t>> cause_attempts;
  std::vector<std::optional<std::string>> lanes;
  std::vector<bool> settled;
  std::vector<std::optional<std::int64_t>> available_at;

  // Every event's id is set (the base class assigned missing ones).
  static Append of(const std::string& session_id, std::int64_t now_ms,
                   std::optional<std::int64_t> origin_index, const std::vector<NewEvent>& events) {
    Append call{session_id, now_ms, origin_index, {}, {}, {}, {}, {}, {}, {}, {}};
    for (const auto& e : events) {
      call.ids.push_back(*e.id);
      call.types.push_back(e.type);
      call.payloads.push_back(&e.payload);
      call.cause_indexes.push_back(e.cause ? std::optional(e.cause->index) : std::nullopt);
      call.cause_attempts.push_back(e.cause ? std::optional(e.cause->attempt) : std::nullopt);
      call.lanes.push_back(e.lane);
      call.settled.push_back(e.settled);
      call.available_at.push_back(e.available_at_ms);
    }
    return call;
  }

  Result exec(Executor& x) const {
    return x.exec(kStatement, session_id, now_ms, origin_index, text_array(ids), text_array(types),
                  json_array(payloads), int_array(cause_indexes), int_array(cause_attempts),
                  text_array(lanes), bool_array(settled), int_array(available_at));
  }

  // r_has_pending, r_wake, then the rows (new or replayed).
  static Reply decode(const Result& rows) {
    expect_columns(rows, 0, {"r_has_pending", "r_wake"});
    return AppendResult{stored_events_of(rows, 2), rows.at(0)[0].as<bool>()};
  }
};

}  // namespace a2::postgres::detail::calls
