// SPDX-License-Identifier: MIT
#include "redis/scripts/dead_letters.hpp"

#include "redis/codec.hpp"

namespace a2::redis::detail::scripts {

std::vector<StoredEvent> DeadLetters::decode(std::string_view op, const std::string& session_id,
                                             const Reply& r) {
  return entry_rows(op, session_id, r);
}

}  // namespace a2::redis::detail::scripts
