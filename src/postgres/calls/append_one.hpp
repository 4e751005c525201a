// SPDX-License-Identifier: MIT
#pragma once

// The typed caller of a2_append_one (sql/append_one.sql, sql/schema.sql): append of one
// unsettled event without cause, lane or origin.

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "a2/detail/json_text.hpp"
#include "a2/embedded/sql_files.hpp"
#include "a2/observe.hpp"
#include "a2/results.hpp"
#include "a2/types.hpp"
#include "postgres/executor.hpp"
#include "postgres/result.hpp"
#include "postgres/rows.hpp"
#include "postgres/statement_error.hpp"

namespace a2::postgres::detail::calls {

struct AppendOne {
  static constexpr const a2::detail::EmbeddedText& kStatement = a2::detail::sql::kAppendOne;
  static constexpr Result::size_type kWakeColumn = 2;  // r_wake (postgres/wake_sender.hpp).

  std::string session_id;
  std::int64_t now_ms = 0;
  std::string id;
  std::string type;
  const Json* payload = nullptr;  // Borrowed from the request, which outlives the call.
  // The store drew the id from its IdSource (Store::AppendIds::drawn): the first call skips
  // the function's probe of the id index (check_id false, sql/schema.sql).
  bool id_drawn = false;

  // The new event's index, or (the id was taken) the result a2_append gives for the request.
  struct Reply {
    std::optional<std::int64_t> index;
    AppendResult replayed;
  };

  // The function probes the id index before its insert (sql/schema.sql a2_append_one_by_reply),
  // unless the store drew the id. When a row holding the id is committed by another transaction
  // between that probe and the insert, or already was and the probe was skipped (the IdSource
  // repeated an id), the insert fails and the call rolls back; called once more with the probe,
  // the function sees the row and answers as a2_append does (a replay, or the foreign id's
  // error). A second such failure leaves as the translation's partial_duplicate_batch
  // (postgres/errors.cpp).
  Result exec(Executor& x) const {
    try {
      return x.exec(kStatement, session_id, now_ms, id, type, a2::detail::json_text(*payload),
                    !id_drawn);
    } catch (const StatementError& e) {
      if (!e.event_id_taken()) throw;
    }
    ++a2::detail::t_round_trips;  // A second statement (a2/observe.hpp).
    return x.exec(kStatement, session_id, now_ms, id, type, a2::detail::json_text(*payload), true);
  }

  // One row: r_index, r_has_pending, r_wake, r_rows (the replayed rows when r_index is null).
  static Reply decode(const Result& rows) {
    expect_columns(rows, 0, {"r_index", "r_has_pending", "r_wake", "r_rows"}, true);
    if (rows.size() != 1)
      throw std::logic_error("append_one: " + std::to_string(rows.size()) + " reply rows");
    return decode_row(rows.at(0), 0);
  }

  // r_index, r_has_pending and r_rows from column `first` of `row` (r_wake between them, read
  // by the store): one request's part of append_one's or append_group's reply.
  static Reply decode_row(const Result::Row& row, Result::size_type first) {
    if (!row[first].is_null()) return Reply{row[first].as<std::int64_t>(), {}};
    return Reply{std::nullopt,
                 AppendResult{stored_events_of_json(row[first + 3]), row[first + 1].as<bool>()}};
  }
};

}  // namespace a2::postgres::detail::calls
