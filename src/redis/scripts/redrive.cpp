// SPDX-License-Identifier: MIT
#include "redis/scripts/redrive.hpp"

#include "redis/codec.hpp"
#include "redis/errors.hpp"

namespace a2::redis::detail::scripts {

Redrive::Result Redrive::decode(std::string_view op, const Reply& r) {
  return after_write(op, [&] {
    if (!r.is_array() || r.size() < 2) unexpected(op, "short script reply");
    return Result{text(op, r[0]) == "1", text(op, r[1]) == "1"};
  });
}

}  // namespace a2::redis::detail::scripts
