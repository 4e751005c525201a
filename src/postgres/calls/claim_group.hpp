// SPDX-License-Identifier: MIT
#pragma once

// The typed caller of a2_claim_group (sql/claim_group.sql, sql/schema.sql): the claims of
// several callers without exclusions in one call (postgres/write_groups.hpp).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "a2/embedded/sql_files.hpp"
#include "postgres/calls/claim_available.hpp"
#include "postgres/calls/group_rows.hpp"
#include "postgres/calls/params.hpp"
#include "postgres/executor.hpp"
#include "postgres/result.hpp"

namespace a2::postgres::detail::calls {

struct ClaimGroup {
  static constexpr const a2::detail::EmbeddedText& kStatement = a2::detail::sql::kClaimGroup;
  using One = ClaimAvailable;
  // A claim locks event rows before the session lock (postgres/write_groups.hpp).
  static constexpr bool kOnePerSession = true;

  std::vector<const ClaimAvailable*> requests;  // Borrowed from their callers; no exclusions.

  using Part = GroupPart<ClaimAvailable::Reply>;  // A claim owes no wake-up (wake 0).
  using Reply = std::vector<Part>;  // In request order.

  Result exec(Executor& x) const {
    std::vector<std::string> sessions, holders;
    std::vector<std::int64_t> nows, expiries;
    std::vector<std::optional<std::int64_t>> limits;
    for (const ClaimAvailable* r : requests) {
      if (!r->exclude_indexes.empty())
        throw std::logic_error("claim_group: a claim with exclusions");
      sessions.push_back(r->session_id);
      holders.push_back(r->holder);
      nows.push_back(r->now_ms);
      expiries.push_back(r->expires_at_ms);
      limits.push_back(r->max_events);
    }
    return x.exec(kStatement, text_array(sessions), text_array(holders), int_array(nows),
                  int_array(expiries), int_array(limits));
  }

  // k, then claim_available's columns; each request's rows together. Throws std::logic_error
  // unless every request has its rows, together, once.
  Reply decode(const Result& rows) const {
    Reply out(requests.size());
    for_each_request_rows("claim_group", rows, requests.size(),
                          [&](std::size_t i, Result::size_type begin, Result::size_type end) {
                            out[i].reply = ClaimAvailable::decode_part(rows, 1, begin, end);
                          });
    return out;
  }
};

}  // namespace a2::postgres::detail::calls
