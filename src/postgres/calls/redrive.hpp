// SPDX-License-Identifier: MIT
#pragma once

// The typed caller of a2_redrive (sql/redrive.sql, sql/schema.sql).

#include <cstdint>
#include <string>

#include "a2/embedded/sql_files.hpp"
#include "a2/results.hpp"
#include "postgres/executor.hpp"
#include "postgres/result.hpp"
#include "postgres/rows.hpp"

namespace a2::postgres::detail::calls {

struct Redrive {
  static constexpr const a2::detail::EmbeddedText& kStatement = a2::detail::sql::kRedrive;
  static constexpr Result::size_type kWakeColumn = 2;  // r_wake (postgres/wake_sender.hpp).
  using Reply = RedriveResult;

  std::string session_id;
  std::int64_t index = 0;
  std::string action;  // The wire word: retry | skip.
  std::int64_t now_ms = 0;

  Result exec(Executor& x) const { return x.exec(kStatement, session_id, index, action, now_ms); }

  // r_redriven, r_has_pending, r_wake.
  static Reply decode(const Result& rows) {
    expect_columns(rows, 0, {"r_redriven", "r_has_pending", "r_wake"}, true);
    const auto& row = rows.at(0);
    return RedriveResult{row[0].as<bool>(), row[1].as<bool>()};
  }
};

}  // namespace a2::postgres::detail::calls
