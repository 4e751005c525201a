// SPDX-License-Identifier: MIT
#pragma once

// The typed caller of the claim (sql/claim_available.sql: a2_claim of sql/schema.sql).

#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "a2/embedded/sql_files.hpp"
#include "a2/results.hpp"
#include "postgres/calls/params.hpp"
#include "postgres/executor.hpp"
#include "postgres/result.hpp"
#include "postgres/rows.hpp"

namespace a2::postgres::detail::calls {

struct ClaimAvailable {
  static constexpr const a2::detail::EmbeddedText& kStatement = a2::detail::sql::kClaimAvailable;
  using Reply = ClaimResult;

  std::string session_id;
  std::string holder;
  std::int64_t now_ms = 0;
  std::int64_t expires_at_ms = 0;
  std::vector<std::int64_t> exclude_indexes;
  std::optional<std::int64_t> max_events;  // Unset: every available event.

  Result exec(Executor& x) const {
    return x.exec(kStatement, session_id, holder, now_ms, expires_at_ms, int_array(exclude_indexes),
                  max_events);
  }

  // r_verdict, r_retry_at, r_clear_index, then the claimed rows (in the order the claim's update
  // met them: decode_part sorts them).
  static Reply decode(const Result& rows) { return decode_part(rows, 0, 0, rows.size()); }

  // The claim's columns r_verdict, r_retry_at, r_clear_index at `first`, the claimed rows'
  // stored-event columns after them, in the rows [begin, end) of `rows`: claim_available's reply,
  // and the claim_next part of complete_attempts' (calls/complete_attempts.hpp). The events come
  // out in index order, whatever the rows' order.
  static Reply decode_part(const Result& rows, Result::size_type first, Result::size_type begin,
                           Result::size_type end) {
    expect_columns(rows, first, {"r_verdict", "r_retry_at", "r_clear_index"});
    const auto row = rows.at(begin);
    const std::string verdict = row[first].c_str();
    ClaimResult out;
    if (verdict == "claimed") {
      out.verdict = ClaimVerdict::claimed;
      out.events = stored_events_of(rows, first + 3, begin, end);
      const auto by_index = [](const StoredEvent& a, const StoredEvent& b) {
        return a.index < b.index;
      };
      if (!std::is_sorted(out.events.begin(), out.events.end(), by_index))
        std::sort(out.events.begin(), out.events.end(), by_index);
      const auto clear_index = row[first + 2].as<std::int64_t>();
      if (clear_index > 0)
        for (auto& e : out.events) e.clear_index = clear_index;
    } else if (verdict == "busy") {
      out.verdict = ClaimVerdict::busy;
      out.retry_at = row[first + 1].as<std::int64_t>();
    } else if (verdict == "settled") {
      out.verdict = ClaimVerdict::settled;
    } else {
      throw std::logic_error("unknown claim verdict '" + verdict + "'");
    }
    return out;
  }
};

}  // namespace a2::postgres::detail::calls
