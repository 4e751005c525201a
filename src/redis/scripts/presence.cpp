// SPDX-License-Identifier: MIT
#include "redis/scripts/presence.hpp"

#include "a2/detail/json_text.hpp"
#include "redis/codec.hpp"
#include "redis/errors.hpp"

namespace a2::redis::detail::scripts {

PresenceMap presence_of(std::string_view op, const Reply& r) {
  if (!r.is_array()) unexpected(op, "expected an array");
  PresenceMap out;
  for (std::size_t i = 0; i + 1 < r.size(); i += 2) {
    try {
      out[text(op, r[i])] = a2::detail::parse_stored_json(text(op, r[i + 1]));
    } catch (const Json::exception&) {
      unexpected(op, "a presence state is not JSON");
    }
  }
  return out;
}

PresenceMap PresencePatch::decode(std::string_view op, const Reply& r) {
  return after_write(op, [&] { return presence_of(op, r); });
}

}  // namespace a2::redis::detail::scripts
