// SPDX-License-Identifier: MIT
#pragma once

// The typed caller of find_work.sql (a read of the work index a2_work, one round trip).

#include <cstdint>
#include <limits>
#include <string>

#include "a2/embedded/sql_files.hpp"
#include "a2/options.hpp"
#include "a2/results.hpp"
#include "postgres/executor.hpp"
#include "postgres/result.hpp"
#include "postgres/rows.hpp"

namespace a2::postgres::detail::calls {

struct FindWork {
  static constexpr const a2::detail::EmbeddedText& kStatement = a2::detail::sql::kFindWork;
  using Reply = WorkPage;

  std::int64_t after_at = -1;  // The exclusive cursor; (-1, "") is before every entry.
  std::string after_session{};
  std::int64_t due_by = std::numeric_limits<std::int64_t>::max();
  std::int64_t limit = 0;

  static FindWork of(const FindWorkRequest& request) {
    FindWork call;
    if (request.after) {
      call.after_at = request.after->at_ms;
      call.after_session = request.after->session_id;
    }
    if (request.due_by_ms) call.due_by = *request.due_by_ms;
    call.limit = request.limit;
    return call;
  }

  Result exec(Executor& x) const {
    return x.exec(kStatement, after_at, after_session, due_by, limit);
  }

  // session_id, next_at; `next` is the last entry when the page is full.
  Reply decode(const Result& rows) const {
    expect_columns(rows, 0, {"session_id", "next_at"}, true);
    WorkPage page;
    page.sessions.reserve(rows.size());
    for (const auto& row : rows)
      page.sessions.push_back({row[0].as<std::string>(), row[1].as<std::int64_t>()});
    if (static_cast<std::int64_t>(page.sessions.size()) == limit)
      page.next = WorkCursor{page.sessions.back().at_ms, page.sessions.back().session_id};
    return page;
  }
};

}  // namespace a2::postgres::detail::calls
