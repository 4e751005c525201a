// SPDX-License-Identifier: MIT
#pragma once

// The typed caller of a2_complete_attempts_group (sql/complete_attempts_group.sql,
// sql/schema.sql): the complete_attempts calls (and completions with claim_next) of several
// callers in one call (postgres/write_groups.hpp).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "a2/embedded/sql_files.hpp"
#include "postgres/calls/complete_attempts.hpp"
#include "postgres/calls/group_rows.hpp"
#include "postgres/calls/params.hpp"
#include "postgres/executor.hpp"
#include "postgres/result.hpp"
#include "postgres/wake_sender.hpp"

namespace a2::postgres::detail::calls {

struct CompleteAttemptsGroup {
  static constexpr const a2::detail::EmbeddedText& kStatement =
      a2::detail::sql::kCompleteAttemptsGroup;
  using One = CompleteAttempts;
  // a2_complete_attempts locks parent rows before the session lock (postgres/write_groups.hpp).
  static constexpr bool kOnePerSession = true;

  std::vector<const CompleteAttempts*> requests;  // Borrowed from their callers.

  using Part = GroupPart<CompleteAttempts::Reply>;
  using Reply = std::vector<Part>;  // In request order.

  Result exec(Executor& x) const {
    std::vector<std::string> sessions, ids, types;
    std::vector<std::int64_t> nows, completion_counts, indexes, attempts, child_counts;
    std::vector<std::optional<std::string>> lanes, holders;
    std::vector<bool> settled;
    std::vector<std::optional<std::int64_t>> available_at, expiries, limits;
    std::string payloads = "[";
    const auto append = [](auto& to, const auto& from) {
      to.insert(to.end(), from.begin(), from.end());
    };
    for (const CompleteAttempts* r : requests) {
      sessions.push_back(r->session_id);
      nows.push_back(r->now_ms);
      completion_counts.push_back(static_cast<std::int64_t>(r->indexes.size()));
      append(indexes, r->indexes);
      append(attempts, r->attempts);
      append(child_counts, r->child_counts);
      append(ids, r->ids);
      append(types, r->types);
      append(lanes, r->lanes);
      append(settled, r->settled);
      append(available_at, r->available_at);
      holders.push_back(r->holder);
      expiries.push_back(r->expires_at_ms);
      limits.push_back(r->max_events);
      if (payloads.size() > 1) payloads += ',';
      payloads += r->payloads;
    }
    payloads += ']';
    return x.exec(kStatement, text_array(sessions), int_array(nows), int_array(completion_counts),
                  int_array(indexes), int_array(attempts), int_array(child_counts),
                  text_array(ids), text_array(types), payloads, text_array(lanes),
                  bool_array(settled), int_array(available_at), text_array(holders),
                  int_array(expiries), int_array(limits));
  }

  // k, then complete_attempts' columns; each request's rows together. Throws std::logic_error
  // unless every request has its rows, together, once.
  Reply decode(const Result& rows) const {
    Reply out(requests.size());
    for_each_request_rows("complete_attempts_group", rows, requests.size(),
                          [&](std::size_t i, Result::size_type begin, Result::size_type end) {
                            out[i].wake = wake_flags(rows, 1, begin);
                            out[i].reply = CompleteAttempts::decode_part(rows, 1, begin, end);
                          });
    return out;
  }
};

}  // namespace a2::postgres::detail::calls
