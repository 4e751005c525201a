// SPDX-License-Identifier: MIT
#include "redis/scripts/release_claims.hpp"

#include "redis/codec.hpp"
#include "redis/errors.hpp"

namespace a2::redis::detail::scripts {

Call ReleaseClaims::encode(const Keys& k) const {
  Call c;
  c.keys = {k.count(session), k.meta(session), k.meta_split(session), k.work()};
  c.argv = {std::string(holder), decimal(now), delay(now, available_at),
            decimal(static_cast<std::int64_t>(claims.size()))};
  for (const auto& claim : claims) {
    c.argv.push_back(decimal(claim.index));
    c.argv.push_back(decimal(claim.attempt));
  }
  return c;
}

ReleaseResult ReleaseClaims::decode(std::string_view op, const Reply& r) {
  return after_write(op, [&] {
    if (!r.is_array() || r.size() == 0) unexpected(op, "empty script reply");
    const auto released = number(op, r[0]);
    if (released < 0 || r.size() < 1 + static_cast<std::size_t>(released))
      unexpected(op, "short reply");
    ReleaseResult result;
    for (std::size_t i = 1; i < r.size(); ++i)
      (i <= static_cast<std::size_t>(released) ? result.released : result.not_held)
          .push_back(number(op, r[i]));
    return result;
  });
}

}  // namespace a2::redis::detail::scripts
