// SPDX-License-Identifier: MIT
#pragma once

// Typed caller of lua/inspect_session.lua: a session's counts, and with detail its lanes and
// recorded claims (docs/semantics.md#list_sessions, docs/semantics.md#inspect_session).

#include <cstdint>
#include <string>
#include <string_view>

#include "a2/results.hpp"
#include "redis/scripts/script.hpp"

namespace a2::redis::detail::scripts {

struct InspectSession {
  static constexpr std::string_view kKeys = "count meta pending meta-split";
  static constexpr std::string_view kArgv = "now detail";
  static const a2::detail::EmbeddedText& script();

  std::string_view session;
  std::int64_t now = 0;
  bool detail = false;

  Call encode(const Keys& k) const {
    return {{k.count(session), k.meta(session), k.pending(session), k.meta_split(session)},
            {decimal(now), flag(detail)}};
  }

  // The summary (session_id set), and with detail the lanes (by name) and claims (by index);
  // snapshots are not the script's.
  static SessionInspection decode(std::string_view op, const std::string& session_id,
                                  const Reply& r);
};

}  // namespace a2::redis::detail::scripts
