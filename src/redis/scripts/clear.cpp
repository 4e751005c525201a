// SPDX-License-Identifier: MIT
#include "redis/scripts/clear.hpp"

#include "redis/codec.hpp"
#include "redis/errors.hpp"

namespace a2::redis::detail::scripts {

Clear::Result Clear::decode(std::string_view op, const Reply& r) {
  if (!r.is_array() || r.size() == 0) unexpected(op, "empty script reply");
  const std::string verdict = text(op, r[0]);
  Result result;
  if (verdict == "superseded") {
    result.verdict = Verdict::superseded;
  } else if (verdict == "no_parent") {
    result.verdict = Verdict::no_parent;
    if (r.size() > 1) result.cause_index = number(op, r[1]);
  } else if (verdict == "foreign") {
    result.verdict = Verdict::foreign;
  } else if (verdict == "ok" && r.size() >= 4) {
    result.verdict = Verdict::ok;
    after_write(op, [&] {
      result.cleared = text(op, r[1]) == "1";
      result.head = number(op, r[2]);
      result.boundary = number(op, r[3]);
    });
  } else {
    unexpected(op, "unknown verdict '" + verdict + "'");
  }
  return result;
}

}  // namespace a2::redis::detail::scripts
