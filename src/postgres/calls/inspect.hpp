// SPDX-License-Identifier: MIT
#pragma once

// The typed callers of the inspection reads, list_sessions.sql and inspect_session.sql (each one
// statement; the counts come from a2_session_counts of sql/schema.sql).

#include <algorithm>
#include <cstdint>
#include <string>

#include "a2/detail/json_text.hpp"
#include "a2/embedded/sql_files.hpp"
#include "a2/options.hpp"
#include "a2/results.hpp"
#include "postgres/executor.hpp"
#include "postgres/result.hpp"
#include "postgres/rows.hpp"

namespace a2::postgres::detail::calls {

// The summary columns head .. dead at `first`, of session `session_id`.
inline SessionSummary summary_of(const Result::Row& row, Result::size_type first,
                                 std::string session_id) {
  SessionSummary s;
  s.session_id = std::move(session_id);
  s.head = row[first].as<std::int64_t>();
  s.clear_index = row[first + 1].as<std::int64_t>();
  s.pending = row[first + 2].as<std::int64_t>();
  s.ready = row[first + 3].as<std::int64_t>();
  s.claimed = row[first + 4].as<std::int64_t>();
  s.dead = row[first + 5].as<std::int64_t>();
  return s;
}

struct ListSessions {
  static constexpr const a2::detail::EmbeddedText& kStatement = a2::detail::sql::kListSessions;
  using Reply = SessionPage;

  std::string cursor;
  std::int64_t limit = 0;
  std::int64_t now_ms = 0;

  Result exec(Executor& x) const { return x.exec(kStatement, cursor, limit, now_ms); }

  // session_id, head .. dead; at most limit + 1 rows: the extra one says a next page exists.
  Reply decode(const Result& rows) const {
    expect_columns(rows, 0,
                   {"session_id", "head", "clear_index", "pending", "ready", "claimed", "dead"},
                   true);
    SessionPage page;
    for (const auto& row : rows) {
      if (static_cast<std::int64_t>(page.sessions.size()) == limit) {
        page.next_cursor = page.sessions.back().session_id;
        break;
      }
      page.sessions.push_back(summary_of(row, 1, row[0].as<std::string>()));
    }
    return page;
  }
};

struct InspectSession {
  static constexpr const a2::detail::EmbeddedText& kStatement = a2::detail::sql::kInspectSession;
  using Reply = SessionInspection;

  std::string session_id;
  std::int64_t now_ms = 0;

  Result exec(Executor& x) const { return x.exec(kStatement, session_id, now_ms); }

  // head .. dead, lanes, claims, snapshots (JSON arrays of arrays).
  Reply decode(const Result& rows) const {
    expect_columns(rows, 0,
                   {"head", "clear_index", "pending", "ready", "claimed", "dead", "lanes", "claims",
                    "snapshots"},
                   true);
    const auto& row = rows.at(0);
    SessionInspection out;
    out.summary = summary_of(row, 0, session_id);
    for (const auto& l : Json::parse(row[6].as<std::string>()))
      out.lanes.push_back(
          {l[0].get<std::string>(), l[1].get<std::int64_t>(), l[2].get<std::int64_t>()});
    for (const auto& c : Json::parse(row[7].as<std::string>()))
      out.claims.push_back({c[0].get<std::int64_t>(), c[1].get<std::int64_t>(),
                            c[2].get<std::string>(), c[3].get<std::int64_t>()});
    for (const auto& s : Json::parse(row[8].as<std::string>()))
      out.snapshots.push_back(
          {s[0].get<std::string>(), s[1].get<std::int64_t>(), s[2].get<std::int64_t>()});
    // Byte order of the names, whatever the database's collation.
    std::sort(out.lanes.begin(), out.lanes.end(),
              [](const LaneState& a, const LaneState& b) { return a.lane < b.lane; });
    std::sort(out.snapshots.begin(), out.snapshots.end(),
              [](const SnapshotState& a, const SnapshotState& b) { return a.reducer < b.reducer; });
    return out;
  }
};

}  // namespace a2::postgres::detail::calls
