// SPDX-License-Identifier: MIT
#pragma once

// Typed caller of lua/release_claims.lua (docs/semantics.md#release_claims).

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "a2/options.hpp"
#include "a2/results.hpp"
#include "redis/scripts/script.hpp"

namespace a2::redis::detail::scripts {

struct ReleaseClaims {
  static constexpr std::string_view kKeys = "count meta meta-split work";
  static constexpr std::string_view kArgv = "holder now available_at n {index attempt}*n";
  static const a2::detail::EmbeddedText& script();

  std::string_view session;
  std::string_view holder;
  std::int64_t now = 0;
  std::span<const ClaimRef> claims;
  std::optional<std::int64_t> available_at = std::nullopt;  // Stored as `av` only when after now.

  Call encode(const Keys& k) const;
  // The reply { releasedCount, released..., notHeld... }; numbers as integers or text.
  // Outcome-unknown when it cannot be decoded (the script may have released).
  static ReleaseResult decode(std::string_view op, const Reply& r);
};

}  // namespace a2::redis::detail::scripts
