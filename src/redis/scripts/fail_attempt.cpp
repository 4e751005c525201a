// SPDX-License-Identifier: MIT
#include "redis/scripts/fail_attempt.hpp"

#include <utility>

#include "redis/codec.hpp"
#include "redis/errors.hpp"

namespace a2::redis::detail::scripts {

Call FailAttempt::encode(const Keys& k) const {
  Call c;
  c.keys = {k.count(session),       k.meta(session),       k.pending(session),    k.ready(session),
            k.pins(session, index), k.pin_counts(session), k.meta_split(session), k.work()};
  c.argv = {decimal(index),        decimal(attempt), std::string(error),
            decimal(max_failures), decimal(now),     delay(now, retry_at)};
  return c;
}

FailAttempt::Result FailAttempt::decode(std::string_view op, const Reply& r) {
  const auto [verdict, failures] = after_write(op, [&] {
    if (!r.is_array() || r.size() < 2) unexpected(op, "short script reply");
    return std::pair{text(op, r[0]), number(op, r[1])};
  });
  Result result{Verdict::cleared, failures};
  if (verdict == "cleared")
    result.verdict = Verdict::cleared;
  else if (verdict == "missing")
    result.verdict = Verdict::missing;
  else if (verdict == "superseded")
    result.verdict = Verdict::superseded;
  else if (verdict == "dead_lettered")
    result.verdict = Verdict::dead_lettered;
  else if (verdict == "failed")
    result.verdict = Verdict::failed;
  else
    unexpected(op, "unknown verdict '" + verdict + "'");
  return result;
}

}  // namespace a2::redis::detail::scripts
