// SPDX-License-Identifier: MIT
#pragma once

// The typed caller of a2_redrive (sql/redrive.sql, sql/schema.sql).

#include <cstdint>
#include <pqxx/pqxx>
#include <string>

#include "a2/results.hpp"
#include "postgres/rows.hpp"

namespace a2::postgres::detail::calls {

struct Redrive {
  static constexpr const char* kStatement = "a2_redrive";
  static constexpr pqxx::row::size_type kWakeColumn = 2;  // r_wake (postgres/wake_sender.hpp).
  using Reply = RedriveResult;

  std::string session_id;
  std::int64_t index = 0;
  std::string action;  // The wire word: retry | skip.
  std::int64_t now_ms = 0;

  pqxx::result exec(pqxx::transaction_base& tx) const {
    return tx.exec_prepared(kStatement, session_id, index, action, now_ms);
  }

  // r_redriven, r_has_pending, r_wake.
  static Reply decode(const pqxx::result& rows) {
    expect_columns(rows, 0, {"r_redriven", "r_has_pending", "r_wake"}, true);
    const auto& row = rows.at(0);
    return RedriveResult{row[0].as<bool>(), row[1].as<bool>()};
  }
};

}  // namespace a2::postgres::detail::calls
