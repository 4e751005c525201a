// SPDX-License-Identifier: MIT
#pragma once

// The typed caller of a2_complete_group (sql/complete_group.sql, sql/schema.sql): the
// completions of several callers without claim_next in one call (postgres/write_groups.hpp).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "a2/embedded/sql_files.hpp"
#include "postgres/calls/complete_attempt.hpp"
#include "postgres/calls/group_rows.hpp"
#include "postgres/calls/params.hpp"
#include "postgres/executor.hpp"
#include "postgres/result.hpp"
#include "postgres/wake_sender.hpp"

namespace a2::postgres::detail::calls {

struct CompleteGroup {
  static constexpr const a2::detail::EmbeddedText& kStatement = a2::detail::sql::kCompleteGroup;
  using One = CompleteAttempt;
  // A completion locks its parent row before the session lock (postgres/write_groups.hpp).
  static constexpr bool kOnePerSession = true;

  std::vector<const CompleteAttempt*> requests;  // Borrowed from their callers.

  using Part = GroupPart<CompleteAttempt::Reply>;
  using Reply = std::vector<Part>;  // In request order.

  Result exec(Executor& x) const {
    std::vector<std::string> sessions, ids, types;
    std::vector<std::int64_t> indexes, attempts, nows, child_counts;
    std::vector<std::optional<std::string>> lanes;
    std::vector<bool> settled;
    std::vector<std::optional<std::int64_t>> available_at;
    std::string payloads = "[";
    for (const CompleteAttempt* r : requests) {
      sessions.push_back(r->session_id);
      indexes.push_back(r->index);
      attempts.push_back(r->attempt);
      nows.push_back(r->now_ms);
      child_counts.push_back(static_cast<std::int64_t>(r->ids.size()));
      ids.insert(ids.end(), r->ids.begin(), r->ids.end());
      types.insert(types.end(), r->types.begin(), r->types.end());
      lanes.insert(lanes.end(), r->lanes.begin(), r->lanes.end());
      settled.insert(settled.end(), r->settled.begin(), r->settled.end());
      available_at.insert(available_at.end(), r->available_at.begin(), r->available_at.end());
      if (payloads.size() > 1) payloads += ',';
      payloads += json_array(r->payloads);
    }
    payloads += ']';
    return x.exec(kStatement, text_array(sessions), int_array(indexes), int_array(attempts),
                  int_array(nows), int_array(child_counts), text_array(ids), text_array(types),
                  payloads, text_array(lanes), bool_array(settled), int_array(available_at));
  }

  // k, r_verdict, r_wake, then the children's rows; each request's rows together. Throws
  // std::logic_error unless every request has its rows, together, once.
  Reply decode(const Result& rows) const {
    constexpr Result::size_type kWakeColumn = 2;
    expect_columns(rows, 0, {"k", "r_verdict", "r_wake"});
    Reply out(requests.size());
    for_each_request_rows("complete_group", rows, requests.size(),
                          [&](std::size_t i, Result::size_type begin, Result::size_type end) {
                            out[i].wake = wake_flags(rows, kWakeColumn, begin);
                            out[i].reply = CompleteAttempt::decode_part(rows, 1, 3, begin, end);
                          });
    return out;
  }
};

}  // namespace a2::postgres::detail::calls
