// SPDX-License-Identifier: MIT
#pragma once

// The typed caller of a2_release_claims (sql/release_claims.sql, sql/schema.sql).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "a2/embedded/sql_files.hpp"
#include "a2/options.hpp"
#include "a2/results.hpp"
#include "postgres/calls/params.hpp"
#include "postgres/executor.hpp"
#include "postgres/result.hpp"
#include "postgres/rows.hpp"

namespace a2::postgres::detail::calls {

struct ReleaseClaims {
  static constexpr const a2::detail::EmbeddedText& kStatement = a2::detail::sql::kReleaseClaims;
  static constexpr Result::size_type kWakeColumn = 2;  // r_wake (postgres/wake_sender.hpp).
  using Reply = ReleaseResult;

  std::string session_id;
  std::string holder;
  std::int64_t now_ms = 0;
  std::vector<std::int64_t> indexes;  // Parallel to attempts.
  std::vector<std::int64_t> attempts;
  std::optional<std::int64_t> available_at_ms;  // Unset or not after now_ms: claimable at once.

  static ReleaseClaims of(const ReleaseRequest& request, std::int64_t now_ms) {
    ReleaseClaims call{request.session_id, request.holder, now_ms, {}, {}, request.available_at_ms};
    for (const auto& c : request.claims) {
      call.indexes.push_back(c.index);
      call.attempts.push_back(c.attempt);
    }
    return call;
  }

  Result exec(Executor& x) const {
    return x.exec(kStatement, session_id, holder, now_ms, int_array(indexes), int_array(attempts),
                  available_at_ms);
  }

  // r_released, r_not_held (bigint[] text), r_wake.
  static Reply decode(const Result& rows) {
    expect_columns(rows, 0, {"r_released", "r_not_held", "r_wake"}, true);
    const auto& row = rows.at(0);
    return ReleaseResult{parse_int_array(row[0].c_str()), parse_int_array(row[1].c_str())};
  }
};

}  // namespace a2::postgres::detail::calls
