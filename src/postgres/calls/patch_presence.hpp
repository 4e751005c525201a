// SPDX-License-Identifier: MIT
#pragma once

// The typed caller of a2_patch_presence (sql/patch_presence.sql, sql/schema.sql).

#include <cstdint>
#include <optional>
#include <pqxx/pqxx>
#include <string>

#include "a2/detail/json_text.hpp"
#include "a2/results.hpp"
#include "a2/types.hpp"
#include "postgres/rows.hpp"

namespace a2::postgres::detail::calls {

struct PatchPresence {
  static constexpr const char* kStatement = "a2_patch_presence";
  using Reply = PresenceMap;

  std::string session_id;
  std::string participant;
  const Json* state = nullptr;  // JSON null removes the participant. Borrowed.
  std::int64_t ttl_ms = 0;
  std::int64_t now_ms = 0;
  std::optional<std::string> source;

  pqxx::result exec(pqxx::transaction_base& tx) const {
    return tx.exec_prepared(kStatement, session_id, participant, a2::detail::json_text(*state),
                            ttl_ms, now_ms, source);
  }

  // r_presence: the live map as jsonb text.
  static Reply decode(const pqxx::result& rows) {
    expect_columns(rows, 0, {"r_presence"}, true);
    return a2::detail::parse_stored_json(rows.at(0)[0].c_str(), a2::detail::kEnvelopeLevels)
        .get<PresenceMap>();
  }
};

}  // namespace a2::postgres::detail::calls
