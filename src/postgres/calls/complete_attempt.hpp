// SPDX-License-Identifier: MIT
#pragma once

// The typed caller of a2_complete_attempt (sql/complete_attempt.sql, sql/schema.sql): the
// children as parallel arrays.

#include <cstdint>
#include <optional>
#include <stdexcept>
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

struct CompleteAttempt {
  static constexpr const a2::detail::EmbeddedText& kStatement = a2::detail::sql::kCompleteAttempt;
  static constexpr Result::size_type kWakeColumn = 1;  // r_wake (postgres/wake_sender.hpp).
  using Reply = CompleteResult;

  std::string session_id;
  std::int64_t index = 0;
  std::int64_t attempt = 0;
  std::int64_t now_ms = 0;
  std::vector<std::string> ids;
  std::vector<std::string> types;
  std::vector<const Json*> payloads;  // Borrowed from the request, which outlives the call.
  std::vector<std::optional<std::string>> lanes;
  std::vector<bool> settled;
  std::vector<std::optional<std::int64_t>> available_at;

  // Every child's id is set (the base class assigned missing ones).
  static CompleteAttempt of(const CompleteRequest& request, std::int64_t now_ms) {
    CompleteAttempt call{
        request.session_id, request.index, request.attempt, now_ms, {}, {}, {}, {}, {}, {}};
    for (const auto& c : request.events) {
      call.ids.push_back(*c.id);
      call.types.push_back(c.type);
      call.payloads.push_back(&c.payload);
      call.lanes.push_back(c.lane);
      call.settled.push_back(c.settled);
      call.available_at.push_back(c.available_at_ms);
    }
    return call;
  }

  Result exec(Executor& x) const {
    return x.exec(kStatement, session_id, index, attempt, now_ms, text_array(ids),
                  text_array(types), json_array(payloads), text_array(lanes), bool_array(settled),
                  int_array(available_at));
  }

  // r_verdict, r_wake, then the children's rows.
  static Reply decode(const Result& rows) {
    expect_columns(rows, kWakeColumn, {"r_wake"});
    return decode_part(rows, 0, 2, 0, rows.size());
  }

  // The completion's r_verdict at column `verdict_column`, its children's stored-event columns at
  // `events`, in the rows [begin, end) of `rows`: complete_attempt's reply, and one completion's
  // part of complete_attempts' (calls/complete_attempts.hpp).
  static Reply decode_part(const Result& rows, Result::size_type verdict_column,
                           Result::size_type events, Result::size_type begin,
                           Result::size_type end) {
    expect_columns(rows, verdict_column, {"r_verdict"});
    const std::string verdict = rows.at(begin)[verdict_column].c_str();
    if (verdict == "superseded") return CompleteResult{CompleteVerdict::superseded, {}, {}};
    if (verdict != "completed")
      throw std::logic_error("unknown completion verdict '" + verdict + "'");
    return CompleteResult{
        CompleteVerdict::completed, stored_events_of(rows, events, begin, end), {}};
  }
};

}  // namespace a2::postgres::detail::calls
