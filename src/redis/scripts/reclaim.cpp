// SPDX-License-Identifier: MIT
#include "redis/scripts/reclaim.hpp"

#include "redis/codec.hpp"
#include "redis/errors.hpp"

namespace a2::redis::detail::scripts {

ReclaimBatch::Result ReclaimBatch::decode(std::string_view op, const Reply& r) {
  if (!r.is_array()) unexpected(op, "expected an array");
  Result result;
  if (r.size() == 0) return result;
  // { movedLogKey, index1, id1, index2, id2, ... }
  result.moved_log = text(op, r[0]);
  for (std::size_t i = 1; i + 1 < r.size(); i += 2)
    result.entries.push_back({text(op, r[i]), text(op, r[i + 1])});
  return result;
}

Call Reclaim::encode(const Keys& k) const {
  Call c;
  c.keys = {std::string(moved_log), k.count(session), k.meta(session), k.meta_split(session)};
  c.argv = {std::string(session), k.pins_prefix(session),
            decimal(static_cast<std::int64_t>(entries ? entries->size() : 0))};
  if (entries)
    for (const auto& e : *entries) {
      // Id keys are built here, like append's: cjson does not reproduce JSON.stringify.
      c.keys.push_back(k.id(e.id));
      c.argv.push_back(e.index);
      c.argv.push_back(e.id);
    }
  return c;
}

Reclaim::Result Reclaim::decode(std::string_view op, const Reply& r) {
  return after_write(op, [&] {
    if (!r.is_array() || r.size() < 2) unexpected(op, "short script reply");
    return Result{number(op, r[0]), number(op, r[1]) == 1};
  });
}

}  // namespace a2::redis::detail::scripts
