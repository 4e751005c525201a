// SPDX-License-Identifier: MIT
#pragma once

// Typed callers of lua/presence_patch.lua and lua/presence_read.lua
// (docs/semantics.md#patch_presence, docs/semantics.md#read_presence).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "a2/results.hpp"
#include "redis/scripts/script.hpp"

namespace a2::redis::detail::scripts {

// Presence entries written by this library carry this source tag
// (docs/redis-layout.md#presence).
inline constexpr std::string_view kPresenceSource = "a2-cpp";

// { participant, stateJson, ... } as a map.
PresenceMap presence_of(std::string_view op, const Reply& r);

struct PresencePatch {
  static constexpr std::string_view kKeys = "presence";
  static constexpr std::string_view kArgv = "now participant state expires_at source";
  static const a2::detail::EmbeddedText& script();

  std::string_view session;
  std::int64_t now = 0;
  std::string_view participant;
  std::optional<std::string> state_json;  // Absent: remove the participant.
  std::int64_t expires_at = 0;            // Ignored on removal.

  Call encode(const Keys& k) const {
    return {{k.presence(session)},
            {decimal(now), std::string(participant), state_json.value_or(""),
             state_json ? decimal(expires_at) : std::string(), std::string(kPresenceSource)}};
  }
  // Outcome-unknown when it cannot be decoded (the script wrote).
  static PresenceMap decode(std::string_view op, const Reply& r);
};

struct PresenceRead {
  static constexpr std::string_view kKeys = "presence";
  static constexpr std::string_view kArgv = "now";
  static const a2::detail::EmbeddedText& script();

  std::string_view session;
  std::int64_t now = 0;

  Call encode(const Keys& k) const { return {{k.presence(session)}, {decimal(now)}}; }
  static PresenceMap decode(std::string_view op, const Reply& r) { return presence_of(op, r); }
};

}  // namespace a2::redis::detail::scripts
