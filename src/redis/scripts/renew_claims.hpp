// SPDX-License-Identifier: MIT
#pragma once

// Typed caller of lua/renew_claims.lua (docs/semantics.md#renew_claims).

#include <cstdint>
#include <span>
#include <string_view>

#include "a2/options.hpp"
#include "a2/results.hpp"
#include "redis/scripts/script.hpp"

namespace a2::redis::detail {

// The reply { renewedCount, renewedIndex..., supersededIndex... }; numbers as integers or text.
RenewResult renew_result(std::string_view op, const Reply& r);

namespace scripts {

struct RenewClaims {
  static constexpr std::string_view kKeys = "count meta meta-split work";
  static constexpr std::string_view kArgv = "holder now expires_at n {index attempt}*n";
  static const a2::detail::EmbeddedText& script();

  std::string_view session;
  std::string_view holder;
  std::int64_t now = 0;
  std::int64_t expires_at = 0;
  std::span<const ClaimRef> claims;

  Call encode(const Keys& k) const;
  // Outcome-unknown when it cannot be decoded (the script may have renewed).
  static RenewResult decode(std::string_view op, const Reply& r);
};

}  // namespace scripts
}  // namespace a2::redis::detail
