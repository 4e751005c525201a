// SPDX-License-Identifier: MIT
#include "redis/scripts/append.hpp"

#include <algorithm>

#include "a2/detail/json_text.hpp"
#include "redis/codec.hpp"
#include "redis/errors.hpp"

namespace a2::redis::detail::scripts {

Call Append::encode(const Keys& k) const {
  Call c;
  // Built in place (an initializer list would copy every key once more).
  c.keys.reserve(7 + events.size());
  c.keys.push_back(k.log(session));
  c.keys.push_back(k.count(session));
  c.keys.push_back(k.meta(session));
  c.keys.push_back(k.pending(session));
  c.keys.push_back(k.ready(session));
  c.keys.push_back(k.meta_split(session));
  c.argv.reserve(5 + events.size() * 7);
  c.argv.emplace_back(session);
  c.argv.push_back(decimal(now));
  c.argv.push_back(decimal(static_cast<std::int64_t>(events.size())));
  for (const auto& e : events) {
    c.keys.push_back(k.id(*e.id));
    c.argv.push_back(*e.id);
    c.argv.push_back(e.type);
    c.argv.push_back(a2::detail::json_text(e.payload));
    c.argv.push_back(e.cause ? cause_json(*e.cause) : std::string());
    c.argv.push_back(e.lane.value_or(""));
    c.argv.push_back(flag(e.settled));
    c.argv.push_back(delay(now, e.available_at_ms));
  }
  c.keys.push_back(k.work());
  c.argv.push_back(k.notify(session));
  c.argv.push_back(origin_index ? decimal(*origin_index) : std::string());
  return c;
}

Append::Result Append::decode(std::string_view op, const Reply& r) {
  if (!r.is_array() || r.size() == 0) unexpected(op, "empty script reply");
  const std::string verdict = text(op, r[0]);
  auto at = [&](std::size_t i) -> const Reply& {
    if (i >= r.size()) unexpected(op, "short '" + verdict + "' reply");
    return r[i];
  };
  Result result;
  if (verdict == "empty") {
    result.verdict = Verdict::empty;
    result.has_pending = text(op, at(1)) == "1";
  } else if (verdict == "ok") {
    result.verdict = Verdict::ok;
    after_write(op, [&] {
      result.first_index = number(op, at(1));
      result.has_pending = text(op, at(2)) == "1";
    });
  } else if (verdict == "dup") {
    result.verdict = Verdict::dup;
    result.has_pending = text(op, at(1)) == "1";
    if (r.size() < 3) unexpected(op, "short 'dup' reply");
    result.first_index = kMaxSafeInteger;
    for (std::size_t i = 2; i < r.size(); ++i)
      result.first_index = std::min(result.first_index, number(op, r[i]));
  } else if (verdict == "partial") {
    result.verdict = Verdict::partial;
    result.stored_count = number(op, at(1));
  } else if (verdict == "foreign") {
    result.verdict = Verdict::foreign;
    result.id = text(op, at(1));
  } else if (verdict == "no_parent" || verdict == "superseded" || verdict == "cleared") {
    result.verdict = verdict == "no_parent"    ? Verdict::no_parent
                     : verdict == "superseded" ? Verdict::superseded
                                               : Verdict::cleared;
    result.index = number(op, at(1));
  } else {
    unexpected(op, "unknown verdict '" + verdict + "'");
  }
  return result;
}

}  // namespace a2::redis::detail::scripts
