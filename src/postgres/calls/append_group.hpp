// SPDX-License-Identifier: MIT
#pragma once

// The typed caller of a2_append_group (sql/append_group.sql, sql/schema.sql): the requests of
// several callers of a2_append_one in one call (postgres/write_groups.hpp).

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "a2/embedded/sql_files.hpp"
#include "postgres/calls/append_one.hpp"
#include "postgres/calls/group_rows.hpp"
#include "postgres/calls/params.hpp"
#include "postgres/executor.hpp"
#include "postgres/result.hpp"
#include "postgres/rows.hpp"
#include "postgres/wake_sender.hpp"

namespace a2::postgres::detail::calls {

struct AppendGroup {
  static constexpr const a2::detail::EmbeddedText& kStatement = a2::detail::sql::kAppendGroup;
  static constexpr Result::size_type kWakeColumn = 3;  // r_wake, per request's row.
  using One = AppendOne;
  // Appends take the session lock and no event row: a group may hold a session twice.
  static constexpr bool kOnePerSession = false;

  std::vector<const AppendOne*> requests;  // Borrowed from their callers, waiting for the reply.

  using Part = GroupPart<AppendOne::Reply>;
  using Reply = std::vector<Part>;  // In request order.

  Result exec(Executor& x) const {
    std::vector<std::string> sessions, ids, types;
    std::vector<std::int64_t> nows;
    std::vector<const Json*> payloads;
    sessions.reserve(requests.size());
    nows.reserve(requests.size());
    ids.reserve(requests.size());
    types.reserve(requests.size());
    payloads.reserve(requests.size());
    bool check_ids = false;  // Some request's id was not drawn by the store: the guard runs.
    for (const AppendOne* r : requests) {
      check_ids = check_ids || !r->id_drawn;
      sessions.push_back(r->session_id);
      nows.push_back(r->now_ms);
      ids.push_back(r->id);
      types.push_back(r->type);
      payloads.push_back(r->payload);
    }
    return x.exec(kStatement, text_array(sessions), int_array(nows), text_array(ids),
                  text_array(types), json_array(payloads), check_ids);
  }

  // One row per request: k, then r_index, r_has_pending, r_wake and r_rows as append_one's.
  // Throws std::logic_error unless every request has exactly one row.
  Reply decode(const Result& rows) const {
    expect_columns(rows, 0, {"k", "r_index", "r_has_pending", "r_wake", "r_rows"}, true);
    if (static_cast<std::size_t>(rows.size()) != requests.size())
      throw std::logic_error("append_group: " + std::to_string(rows.size()) + " reply rows for " +
                             std::to_string(requests.size()) + " requests");
    Reply out(requests.size());
    std::vector<bool> seen(requests.size(), false);
    for (Result::size_type row = 0; row < rows.size(); ++row) {
      const auto k = rows[row][0].as<std::int64_t>();
      if (k < 1 || k > static_cast<std::int64_t>(requests.size()) ||
          seen[static_cast<std::size_t>(k - 1)])
        throw std::logic_error("append_group: a reply row for request " + std::to_string(k) +
                               " of " + std::to_string(requests.size()));
      seen[static_cast<std::size_t>(k - 1)] = true;
      Part& part = out[static_cast<std::size_t>(k - 1)];
      part.wake = wake_flags(rows, kWakeColumn, row);
      part.reply = AppendOne::decode_row(rows[row], 1);
    }
    return out;
  }
};

}  // namespace a2::postgres::detail::calls
