// SPDX-License-Identifier: MIT
#pragma once

// Typed caller of lua/held_claims.lua (docs/semantics.md#held_claims), a read-only script.

#include <cstdint>
#include <string_view>
#include <vector>

#include "a2/options.hpp"
#include "redis/scripts/script.hpp"

namespace a2::redis::detail::scripts {

struct HeldClaims {
  static constexpr std::string_view kKeys = "count meta ready meta-split";
  static constexpr std::string_view kArgv = "holder now";
  static const a2::detail::EmbeddedText& script();

  std::string_view session;
  std::string_view holder;
  std::int64_t now = 0;

  Call encode(const Keys& k) const;
  // The reply { (index, attempt, expiresAt) x k }; numbers as integers or text, fractional
  // times (the original package's) truncated.
  static std::vector<HeldClaim> decode(std::string_view op, const Reply& r);
};

}  // namespace a2::redis::detail::scripts
