// SPDX-License-Identifier: MIT
#include "redis/scripts/find_work.hpp"

#include <string>

#include "redis/codec.hpp"
#include "redis/errors.hpp"

namespace a2::redis::detail::scripts {

Call FindWork::encode(const Keys& k) const {
  Call c;
  c.keys = {k.work()};
  c.argv = {request.due_by_ms ? decimal(*request.due_by_ms) : std::string(),
            request.after ? decimal(request.after->at_ms) : std::string(),
            request.after ? request.after->session_id : std::string(), decimal(request.limit)};
  return c;
}

WorkPage FindWork::decode(std::string_view op, const Reply& r) const {
  if (!r.is_array() || r.size() % 2 != 0) unexpected(op, "the work page is not member/score pairs");
  WorkPage page;
  page.sessions.reserve(r.size() / 2);
  for (std::size_t i = 0; i < r.size(); i += 2)
    page.sessions.push_back(SessionWork{text(op, r[i]), number(op, r[i + 1])});
  if (static_cast<std::int64_t>(page.sessions.size()) == request.limit)
    page.next = WorkCursor{page.sessions.back().at_ms, page.sessions.back().session_id};
  return page;
}

}  // namespace a2::redis::detail::scripts
