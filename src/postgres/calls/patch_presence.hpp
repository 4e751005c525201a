// SPDX-License-Identifier: MIT
#pragma once

// The typed caller of a2_patch_presence (sql/patch_presence.sql, sql/schema.sql).

#include <cstdint>
#include <optional>
#include <string>

#include "a2/detail/json_text.hpp"
#include "a2/embedded/sql_files.hpp"
#include "a2/results.hpp"
#include "a2/types.hpp"
#include "postgres/executor.hpp"
#include "postgres/result.hpp"
#include "postgres/rows.hpp"

namespace a2::postgres::detail::calls {

struct PatchPresence {
  static constexpr const a2::detail::EmbeddedText& kStatement = a2::detail::sql::kPatchPresence;
  using Reply = PresenceMap;

  std::string session_id;
  std::string participant;
  const Json* state = nullptr;  // JSON null removes the participant. Borrowed.
  std::int64_t ttl_ms = 0;
  std::int64_t now_ms = 0;
  std::optional<std::string> source;

  Result exec(Executor& x) const {
    return x.exec(kStatement, session_id, participant, a2::detail::json_text(*state), ttl_ms,
                  now_ms, source);
  }

  // r_presence: the live map as jsonb text.
  static Reply decode(const Result& rows) {
    expect_columns(rows, 0, {"r_presence"}, true);
    return a2::detail::parse_stored_json(rows.at(0)[0].c_str(), a2::detail::kEnvelopeLevels)
        .get<PresenceMap>();
  }
};

}  // namespace a2::postgres::detail::calls
