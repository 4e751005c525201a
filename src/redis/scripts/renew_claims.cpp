// SPDX-License-Identifier: MIT
#include "redis/scripts/renew_claims.hpp"

#include "redis/codec.hpp"
#include "redis/errors.hpp"

namespace a2::redis::detail {

RenewResult renew_result(std::string_view op, const Reply& r) {
  if (!r.is_array() || r.size() == 0) unexpected(op, "empty script reply");
  const auto renewed = number(op, r[0]);
  if (renewed < 0 || r.size() < 1 + static_cast<std::size_t>(renewed))
    unexpected(op, "short reply");
  RenewResult result;
  for (std::size_t i = 1; i < r.size(); ++i)
    (i <= static_cast<std::size_t>(renewed) ? result.renewed : result.superseded)
        .push_back(number(op, r[i]));
  return result;
}

namespace scripts {

Call RenewClaims::encode(const Keys& k) const {
  Call c;
  c.keys = {k.count(session), k.meta(session), k.meta_split(session), k.work()};
  c.argv = {std::string(holder), decimal(now), decimal(expires_at),
            decimal(static_cast<std::int64_t>(claims.size()))};
  for (const auto& claim : claims) {
    c.argv.push_back(decimal(claim.index));
    c.argv.push_back(decimal(claim.attempt));
  }
  return c;
}

RenewResult RenewClaims::decode(std::string_view op, const Reply& r) {
  return after_write(op, [&] { return renew_result(op, r); });
}

}  // namespace scripts
}  // namespace a2::redis::detail
