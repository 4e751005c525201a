// SPDX-License-Identifier: MIT
#include "redis/scripts/inspect_session.hpp"

#include <algorithm>

#include "redis/codec.hpp"

namespace a2::redis::detail::scripts {
namespace {

// A count or index the script computed or read strictly: a non-negative integer.
std::int64_t index_of(std::string_view op, const Reply& r, const char* what) {
  std::optional<std::int64_t> v;
  if (r.type == Reply::Type::integer)
    v = r.integer;
  else if (r.is_string())
    v = parse_integer(r.str);
  if (!v || *v < 0) unexpected(op, std::string("inspect_session.lua: bad ") + what);
  return *v;
}

}  // namespace

SessionInspection InspectSession::decode(std::string_view op, const std::string& session_id,
                                         const Reply& r) {
  if (!r.is_array() || (r.size() != 6 && r.size() != 8))
    unexpected(op, "inspect_session.lua: bad reply");
  SessionInspection out;
  SessionSummary& s = out.summary;
  s.session_id = session_id;
  s.head = index_of(op, r[0], "count");
  s.clear_index = index_of(op, r[1], "boundary");
  s.pending = index_of(op, r[2], "pending");
  s.ready = index_of(op, r[3], "ready");
  s.claimed = index_of(op, r[4], "claimed");
  s.dead = index_of(op, r[5], "dead");
  if (r.size() == 6) return out;
  const Reply& lanes = r[6];
  const Reply& claims = r[7];
  if (!lanes.is_array() || lanes.size() % 3 != 0 || !claims.is_array() || claims.size() % 4 != 0)
    unexpected(op, "inspect_session.lua: bad lanes or claims");
  for (std::size_t i = 0; i < lanes.size(); i += 3)
    out.lanes.push_back({text(op, lanes[i]), index_of(op, lanes[i + 1], "lane head"),
                         index_of(op, lanes[i + 2], "lane pending")});
  std::sort(out.lanes.begin(), out.lanes.end(),
            [](const LaneState& a, const LaneState& b) { return a.lane < b.lane; });
  for (std::size_t i = 0; i < claims.size(); i += 4)
    out.claims.push_back({index_of(op, claims[i], "claim index"), number(op, claims[i + 1]),
                          text(op, claims[i + 2]), number(op, claims[i + 3])});
  return out;
}

}  // namespace a2::redis::detail::scripts
