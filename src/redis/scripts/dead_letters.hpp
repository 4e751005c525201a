// SPDX-License-Identifier: MIT
#pragma once

// Typed caller of lua/dead_letters.lua (docs/semantics.md#dead_letters).

#include <string>
#include <string_view>
#include <vector>

#include "a2/types.hpp"
#include "redis/scripts/script.hpp"

namespace a2::redis::detail::scripts {

struct DeadLetters {
  static constexpr std::string_view kKeys = "log count meta pending meta-split";
  static constexpr std::string_view kArgv = "";
  static const a2::detail::EmbeddedText& script();

  std::string_view session;

  Call encode(const Keys& k) const {
    return {{k.log(session), k.count(session), k.meta(session), k.pending(session),
             k.meta_split(session)},
            {}};
  }

  // The dead letters with their metadata columns, oldest first.
  static std::vector<StoredEvent> decode(std::string_view op, const std::string& session_id,
                                         const Reply& r);
};

}  // namespace a2::redis::detail::scripts
