// SPDX-License-Identifier: MIT
#include "redis/scripts/held_claims.hpp"

#include "redis/codec.hpp"

namespace a2::redis::detail::scripts {

Call HeldClaims::encode(const Keys& k) const {
  Call c;
  c.keys = {k.count(session), k.meta(session), k.ready(session), k.meta_split(session)};
  c.argv = {std::string(holder), decimal(now)};
  return c;
}

std::vector<HeldClaim> HeldClaims::decode(std::string_view op, const Reply& r) {
  if (!r.is_array() || r.size() % 3 != 0)
    unexpected(op, "expected (index, attempt, expiry) triples");
  std::vector<HeldClaim> out;
  out.reserve(r.size() / 3);
  for (std::size_t i = 0; i < r.size(); i += 3)
    out.push_back(HeldClaim{number(op, r[i]), number(op, r[i + 1]), number(op, r[i + 2])});
  return out;
}

}  // namespace a2::redis::detail::scripts
