// SPDX-License-Identifier: MIT
#pragma once

// Typed caller of lua/fail_attempt.lua (docs/semantics.md#fail_attempt).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "redis/scripts/script.hpp"

namespace a2::redis::detail::scripts {

struct FailAttempt {
  static constexpr std::string_view kKeys =
      "count meta pending ready pins snapshot-pin-counts meta-split work";
  static constexpr std::string_view kArgv = "index attempt error max_failures now retry_at";
  static const a2::detail::EmbeddedText& script();

  std::string_view session;
  std::int64_t index = 0;
  std::int64_t attempt = 0;
  std::string_view error;
  std::int64_t max_failures = 0;
  std::int64_t now = 0;
  std::optional<std::int64_t> retry_at = std::nullopt;  // Stored as `av` only when after now.

  Call encode(const Keys& k) const;

  enum class Verdict { cleared, missing, superseded, dead_lettered, failed };
  struct Result {
    Verdict verdict = Verdict::cleared;
    std::int64_t failures = 0;
  };
  // Outcome-unknown when it cannot be decoded (the script may have recorded the failure).
  static Result decode(std::string_view op, const Reply& r);
};

}  // namespace a2::redis::detail::scripts
