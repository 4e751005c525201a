// SPDX-License-Identifier: MIT
#pragma once

// The typed caller of a2_fail_attempt (sql/fail_attempt.sql, sql/schema.sql).

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "a2/embedded/sql_files.hpp"
#include "a2/results.hpp"
#include "postgres/executor.hpp"
#include "postgres/result.hpp"
#include "postgres/rows.hpp"

namespace a2::postgres::detail::calls {

struct FailAttempt {
  static constexpr const a2::detail::EmbeddedText& kStatement = a2::detail::sql::kFailAttempt;
  static constexpr Result::size_type kWakeColumn = 2;  // r_wake (postgres/wake_sender.hpp).
  using Reply = FailResult;

  std::string session_id;
  std::int64_t index = 0;
  std::int64_t attempt = 0;
  std::string error;
  std::int64_t max_failures = 0;
  std::int64_t now_ms = 0;
  std::optional<std::int64_t> retry_at_ms;  // Unset or not after now_ms: claimable at once.

  Result exec(Executor& x) const {
    return x.exec(kStatement, session_id, index, attempt, error, max_failures, now_ms, retry_at_ms);
  }

  // r_verdict, r_failure_count, r_wake.
  static Reply decode(const Result& rows) {
    expect_columns(rows, 0, {"r_verdict", "r_failure_count", "r_wake"}, true);
    const auto& row = rows.at(0);
    const std::string verdict = row[0].c_str();
    FailResult out;
    if (verdict == "failed")
      out.verdict = FailVerdict::failed;
    else if (verdict == "dead_lettered")
      out.verdict = FailVerdict::dead_lettered;
    else if (verdict == "superseded")
      out.verdict = FailVerdict::superseded;
    else
      throw std::logic_error("unknown failure verdict '" + verdict + "'");
    out.failure_count = row[1].as<std::int64_t>();
    return out;
  }
};

}  // namespace a2::postgres::detail::calls
