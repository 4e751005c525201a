// SPDX-License-Identifier: MIT
#pragma once

// The typed caller of a2_sweep_work (sql/sweep_work.sql, sql/schema.sql).

#include <cstdint>
#include <string>

#include "a2/embedded/sql_files.hpp"
#include "a2/results.hpp"
#include "postgres/executor.hpp"
#include "postgres/result.hpp"
#include "postgres/rows.hpp"

namespace a2::postgres::detail::calls {

struct SweepWork {
  static constexpr const a2::detail::EmbeddedText& kStatement = a2::detail::sql::kSweepWork;
  using Reply = SweepResult;

  std::int64_t now_ms = 0;

  Result exec(Executor& x) const { return x.exec(kStatement, now_ms); }

  // r_session_id, r_at: one row per entry the sweep added or moved earlier.
  static Reply decode(const Result& rows) {
    expect_columns(rows, 0, {"r_session_id", "r_at"}, true);
    SweepResult result;
    result.indexed.reserve(rows.size());
    for (const auto& row : rows)
      result.indexed.push_back({row[0].as<std::string>(), row[1].as<std::int64_t>()});
    return result;
  }
};

}  // namespace a2::postgres::detail::calls
