// SPDX-License-Identifier: MIT
#pragma once

// Typed caller of lua/find_work.lua (docs/semantics.md#find_work).

#include <cstdint>
#include <optional>
#include <string_view>

#include "a2/options.hpp"
#include "a2/results.hpp"
#include "redis/scripts/script.hpp"

namespace a2::redis::detail::scripts {

struct FindWork {
  static constexpr std::string_view kKeys = "work";
  static constexpr std::string_view kArgv = "due_by after_at after_session limit";
  static const a2::detail::EmbeddedText& script();

  const FindWorkRequest& request;

  Call encode(const Keys& k) const;
  // The reply { member, score, ... } as a page; `next` is the last entry of a full page. Read-only,
  // so an undecodable reply is a plain store failure.
  WorkPage decode(std::string_view op, const Reply& r) const;
};

}  // namespace a2::redis::detail::scripts
