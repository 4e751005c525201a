// SPDX-License-Identifier: MIT
#pragma once

// The typed caller of a2_clear (sql/clear.sql, sql/schema.sql).

#include <cstdint>
#include <optional>
#include <string>

#include "a2/embedded/sql_files.hpp"
#include "a2/results.hpp"
#include "postgres/executor.hpp"
#include "postgres/result.hpp"
#include "postgres/rows.hpp"

namespace a2::postgres::detail::calls {

struct Clear {
  static constexpr const a2::detail::EmbeddedText& kStatement = a2::detail::sql::kClear;
  static constexpr Result::size_type kWakeColumn = 3;  // r_wake (postgres/wake_sender.hpp).
  using Reply = ClearResult;

  std::string session_id;
  std::int64_t now_ms = 0;
  std::optional<std::int64_t> if_last_index;
  std::optional<std::int64_t> cause_index;  // Both set or both empty.
  std::optional<std::int64_t> cause_attempt;
  std::string marker_id;
  std::string marker_type;

  Result exec(Executor& x) const {
    return x.exec(kStatement, session_id, now_ms, if_last_index, cause_index, cause_attempt,
                  marker_id, marker_type);
  }

  // r_cleared, r_index, r_clear_index, r_wake.
  static Reply decode(const Result& rows) {
    expect_columns(rows, 0, {"r_cleared", "r_index", "r_clear_index", "r_wake"}, true);
    const auto& row = rows.at(0);
    return ClearResult{row[0].as<bool>(), row[1].as<std::int64_t>(), row[2].as<std::int64_t>()};
  }
};

}  // namespace a2::postgres::detail::calls
