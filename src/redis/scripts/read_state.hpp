// SPDX-License-Identifier: MIT
#pragma once

// Typed caller of lua/read_state.lua (docs/semantics.md#read_state).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "a2/types.hpp"
#include "redis/scripts/script.hpp"

namespace a2::redis::detail::scripts {

struct ReadState {
  static constexpr std::string_view kKeys = "snap snap-history count";
  static constexpr std::string_view kArgv = "cap";
  static const a2::detail::EmbeddedText& script();

  std::string_view session;
  std::string_view reducer;
  std::optional<std::int64_t> cap;  // The newest checkpoint allowed.

  Call encode(const Keys& k) const {
    return {{k.snap(session, reducer), k.snap_history(session, reducer), k.count(session)},
            {cap ? decimal(*cap) : std::string()}};
  }

  struct Result {
    std::optional<std::int64_t> head_index;
    std::optional<Checkpoint> checkpoint;  // To fold from.
    std::int64_t count = 0;                // The log frontier.
    std::int64_t clear = 0;                // The clear boundary (0: never cleared).
  };
  static Result decode(std::string_view op, const std::string& session_id, const Reply& r);
};

}  // namespace a2::redis::detail::scripts
