// SPDX-License-Identifier: MIT
#pragma once

// The typed caller of a2_reclaim (sql/reclaim.sql, sql/schema.sql).

#include <cstdint>
#include <string>

#include "a2/embedded/sql_files.hpp"
#include "a2/results.hpp"
#include "postgres/executor.hpp"
#include "postgres/result.hpp"
#include "postgres/rows.hpp"

namespace a2::postgres::detail::calls {

struct Reclaim {
  static constexpr const a2::detail::EmbeddedText& kStatement = a2::detail::sql::kReclaim;
  using Reply = ReclaimResult;

  std::string session_id;
  std::int64_t batch_size = 0;

  Result exec(Executor& x) const { return x.exec(kStatement, session_id, batch_size); }

  // r_deleted, r_done.
  static Reply decode(const Result& rows) {
    expect_columns(rows, 0, {"r_deleted", "r_done"}, true);
    const auto& row = rows.at(0);
    return ReclaimResult{row[0].as<std::int64_t>(), row[1].as<bool>()};
  }
};

}  // namespace a2::postgres::detail::calls
