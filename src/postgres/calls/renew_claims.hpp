// SPDX-License-Identifier: MIT
#pragma once

// The typed caller of a2_renew_claims (sql/renew_claims.sql, sql/schema.sql).

#include <cstdint>
#include <string>
#include <vector>

#include "a2/embedded/sql_files.hpp"
#include "a2/results.hpp"
#include "postgres/calls/params.hpp"
#include "postgres/executor.hpp"
#include "postgres/result.hpp"
#include "postgres/rows.hpp"

namespace a2::postgres::detail::calls {

struct RenewClaims {
  static constexpr const a2::detail::EmbeddedText& kStatement = a2::detail::sql::kRenewClaims;
  static constexpr Result::size_type kWakeColumn = 2;  // r_wake (postgres/wake_sender.hpp).
  using Reply = RenewResult;

  std::string session_id;
  std::string holder;
  std::int64_t now_ms = 0;
  std::int64_t expires_at_ms = 0;
  std::vector<std::int64_t> indexes;  // Parallel to attempts.
  std::vector<std::int64_t> attempts;

  Result exec(Executor& x) const {
    return x.exec(kStatement, session_id, holder, now_ms, expires_at_ms, int_array(indexes),
                  int_array(attempts));
  }

  // r_renewed, r_superseded (bigint[] text), r_wake.
  static Reply decode(const Result& rows) {
    expect_columns(rows, 0, {"r_renewed", "r_superseded", "r_wake"}, true);
    const auto& row = rows.at(0);
    return RenewResult{parse_int_array(row[0].c_str()), parse_int_array(row[1].c_str())};
  }
};

}  // namespace a2::postgres::detail::calls
