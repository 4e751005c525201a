// SPDX-License-Identifier: MIT
#pragma once

// The typed caller of a2_put_snapshots (sql/put_snapshots.sql, sql/schema.sql): the writes as
// parallel arrays, the pins as (checkpoint, event) pairs.

#include <cstdint>
#include <string>
#include <vector>

#include "a2/embedded/sql_files.hpp"
#include "a2/types.hpp"
#include "postgres/calls/params.hpp"
#include "postgres/executor.hpp"
#include "postgres/result.hpp"
#include "postgres/rows.hpp"

namespace a2::postgres::detail::calls {

struct PutSnapshots {
  static constexpr const a2::detail::EmbeddedText& kStatement = a2::detail::sql::kPutSnapshots;
  struct Reply {};

  std::string session_id;
  std::string reducer;
  std::int64_t now_ms = 0;
  std::vector<std::int64_t> indexes;
  std::vector<const Json*> states;            // Borrowed from the request, which outlives the call.
  std::vector<std::int64_t> pin_checkpoints;  // Parallel to pin_events.
  std::vector<std::int64_t> pin_events;

  static PutSnapshots of(const std::string& session_id, const std::string& reducer,
                         std::int64_t now_ms, const std::vector<SnapshotWrite>& writes) {
    PutSnapshots call{session_id, reducer, now_ms, {}, {}, {}, {}};
    for (const auto& w : writes) {
      call.indexes.push_back(w.index);
      call.states.push_back(&w.state);
      for (auto pin : w.pin_event_indexes) {
        call.pin_checkpoints.push_back(w.index);
        call.pin_events.push_back(pin);
      }
    }
    return call;
  }

  Result exec(Executor& x) const {
    return x.exec(kStatement, session_id, reducer, now_ms, int_array(indexes), json_array(states),
                  int_array(pin_checkpoints), int_array(pin_events));
  }

  static Reply decode(const Result& rows) {
    expect_columns(rows, 0, {"r_done"}, true);
    return Reply{};
  }
};

}  // namespace a2::postgres::detail::calls
