// SPDX-License-Identifier: MIT
#pragma once

// Typed caller of lua/complete_attempt.lua (docs/semantics.md#complete_attempt).

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "a2/types.hpp"
#include "redis/scripts/script.hpp"

namespace a2::redis::detail::scripts {

struct CompleteAttempt {
  static constexpr std::string_view kKeys =
      "log count meta pending ready pins snapshot-pin-counts meta-split id*n";
  static constexpr std::string_view kArgv =
      "session now index attempt n {id type payload lane settled available_at}*n notify";
  static const a2::detail::EmbeddedText& script();

  std::string_view session;
  std::int64_t now = 0;
  std::int64_t index = 0;
  std::int64_t attempt = 0;
  std::span<const ChildEvent> children;  // Every id set.

  Call encode(const Keys& k) const;

  enum class Verdict { superseded, missing, partial, dup, ok };
  struct Result {
    Verdict verdict = Verdict::superseded;
    std::optional<std::string> owned_id;      // partial: the child id already owned, if named
                                              // (absent: a replay that does not match).
    std::optional<std::int64_t> first_index;  // ok: the first child; dup: the lowest stored
                                              // child (absent when none is listed).
  };
  // A reply after the script wrote ('ok') that cannot be decoded is outcome-unknown.
  static Result decode(std::string_view op, const Reply& r);
};

}  // namespace a2::redis::detail::scripts
