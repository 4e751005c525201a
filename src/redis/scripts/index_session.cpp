// SPDX-License-Identifier: MIT
#include "redis/scripts/index_session.hpp"

#include "redis/codec.hpp"
#include "redis/errors.hpp"

namespace a2::redis::detail::scripts {

Call IndexSession::encode(const Keys& k) const {
  Call c;
  c.keys = {k.count(session), k.meta(session), k.ready(session), k.meta_split(session), k.work()};
  c.argv = {decimal(now)};
  return c;
}

std::optional<std::int64_t> IndexSession::decode(std::string_view op, const Reply& r) {
  return after_write(op, [&]() -> std::optional<std::int64_t> {
    if (r.is_nil()) return std::nullopt;
    return number(op, r);
  });
}

}  // namespace a2::redis::detail::scripts
