// SPDX-License-Identifier: MIT
#pragma once

// Typed caller of lua/claim_available.lua (docs/semantics.md#claim_available).

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "a2/results.hpp"
#include "redis/scripts/script.hpp"

namespace a2::redis::detail {

// The reply of lua/claim_available.lua other than 'missing'. Total over what the original
// package's data gives: numbers as integers or text, fractional times (truncated), nil optional
// columns, payloads with lone surrogates.
ClaimResult claim_result(std::string_view op, const std::string& session_id, const Reply& r);

namespace scripts {

// claim_next of the completion scripts (docs/semantics.md#claim_next): the claim of
// lua/lib/claim.lua after the completion(s), in the same script call.
struct NextClaim {
  std::string_view holder;
  std::int64_t expires_at = 0;  // The lease end (a2::detail::lease_expires_at).
  std::int64_t max_events = 1;
};
// Appends the ARGV `holder expires_at max_events` (all '' without a claim_next).
void encode_next_claim(Args& argv, const std::optional<NextClaim>& next);
// Decodes the claim part of a completion script's reply with claim_result. The completion has
// written by then, so every failure, 'missing' (a ready event without its stream entry) included,
// is outcome-unknown.
ClaimResult next_claim_result(std::string_view op, const std::string& session_id, const Reply& r);

}  // namespace scripts

namespace scripts {

struct ClaimAvailable {
  static constexpr std::string_view kKeys = "log count meta pending ready meta-split work";
  static constexpr std::string_view kArgv =
      "holder now expires_at max_events excluded {index}*excluded";
  static const a2::detail::EmbeddedText& script();

  std::string_view session;
  std::string_view holder;
  std::int64_t now = 0;
  std::int64_t expires_at = 0;
  std::span<const std::int64_t> exclude;
  std::optional<std::int64_t> max_events = std::nullopt;  // Unset: no limit.

  Call encode(const Keys& k) const;
  // 'missing' (a ready event without its stream entry; nothing changed) is a store failure;
  // any other reply that cannot be decoded is outcome-unknown.
  static ClaimResult decode(std::string_view op, const std::string& session_id, const Reply& r);
};

}  // namespace scripts
}  // namespace a2::redis::detail
