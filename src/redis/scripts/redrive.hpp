// SPDX-License-Identifier: MIT
#pragma once

// Typed caller of lua/redrive.lua (docs/semantics.md#redrive).

#include <cstdint>
#include <string_view>

#include "a2/options.hpp"
#include "redis/scripts/script.hpp"

namespace a2::redis::detail::scripts {

struct Redrive {
  static constexpr std::string_view kKeys = "count meta pending ready meta-split work";
  static constexpr std::string_view kArgv = "index action now";
  static const a2::detail::EmbeddedText& script();

  std::string_view session;
  std::int64_t index = 0;
  RedriveAction action = RedriveAction::retry;
  std::int64_t now = 0;

  Call encode(const Keys& k) const {
    return {{k.count(session), k.meta(session), k.pending(session), k.ready(session),
             k.meta_split(session), k.work()},
            {decimal(index), std::string(to_string(action)), decimal(now)}};
  }

  struct Result {
    bool redriven = false;
    bool has_pending = false;
  };
  // Outcome-unknown when it cannot be decoded (the script may have redriven).
  static Result decode(std::string_view op, const Reply& r);
};

}  // namespace a2::redis::detail::scripts
