// SPDX-License-Identifier: MIT
#include "redis/scripts/complete_attempt.hpp"

#include <algorithm>

#include "a2/detail/json_text.hpp"
#include "redis/codec.hpp"
#include "redis/errors.hpp"

namespace a2::redis::detail::scripts {

Call CompleteAttempt::encode(const Keys& k) const {
  Call c;
  c.keys = {k.log(session),   k.count(session),       k.meta(session),       k.pending(session),
            k.ready(session), k.pins(session, index), k.pin_counts(session), k.meta_split(session)};
  c.keys.reserve(c.keys.size() + children.size());
  c.argv = {std::string(session), decimal(now), decimal(index), decimal(attempt),
            decimal(static_cast<std::int64_t>(children.size()))};
  c.argv.reserve(6 + children.size() * 6);
  for (const auto& child : children) {
    c.keys.push_back(k.id(*child.id));
    c.argv.push_back(*child.id);
    c.argv.push_back(child.type);
    c.argv.push_back(a2::detail::json_text(child.payload));
    c.argv.push_back(child.lane.value_or(""));
    c.argv.push_back(flag(child.settled));
    c.argv.push_back(delay(now, child.available_at_ms));
  }
  c.argv.push_back(k.notify(session));
  return c;
}

CompleteAttempt::Result CompleteAttempt::decode(std::string_view op, const Reply& r) {
  if (!r.is_array() || r.size() == 0) unexpected(op, "empty script reply");
  const std::string verdict = text(op, r[0]);
  Result result;
  if (verdict == "superseded") {
    result.verdict = Verdict::superseded;
  } else if (verdict == "missing") {
    result.verdict = Verdict::missing;
  } else if (verdict == "partial") {
    result.verdict = Verdict::partial;
    if (r.size() > 1) result.owned_id = text(op, r[1]);
  } else if (verdict == "ok") {
    result.verdict = Verdict::ok;
    result.first_index = after_write(op, [&] {
      if (r.size() < 2) unexpected(op, "short 'ok' reply");
      return number(op, r[1]);
    });
  } else if (verdict == "dup") {
    result.verdict = Verdict::dup;
    for (std::size_t i = 1; i < r.size(); ++i) {
      const auto v = number(op, r[i]);
      result.first_index = result.first_index ? std::min(*result.first_index, v) : v;
    }
  } else {
    unexpected(op, "unknown verdict '" + verdict + "'");
  }
  return result;
}

}  // namespace a2::redis::detail::scripts
