// SPDX-License-Identifier: MIT
#pragma once

// Typed caller of lua/index_session.lua, one session of the safety sweep
// (docs/semantics.md#sweep_work, docs/redis-layout.md#work-index).

#include <cstdint>
#include <optional>
#include <string_view>

#include "redis/scripts/script.hpp"

namespace a2::redis::detail::scripts {

struct IndexSession {
  static constexpr std::string_view kKeys = "count meta ready meta-split work";
  static constexpr std::string_view kArgv = "now";
  static const a2::detail::EmbeddedText& script();

  std::string_view session;
  std::int64_t now = 0;

  Call encode(const Keys& k) const;
  // The new entry time when the script added the entry or moved it earlier, else nullopt.
  // Outcome-unknown when it cannot be decoded (the script may have written the entry).
  static std::optional<std::int64_t> decode(std::string_view op, const Reply& r);
};

}  // namespace a2::redis::detail::scripts
