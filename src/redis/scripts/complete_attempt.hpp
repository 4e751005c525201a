// SPDX-License-Identifier: MIT
#pragma once

// Typed callers of lua/complete_attempt.lua (docs/semantics.md#complete_attempt) and
// lua/complete_attempts.lua (docs/semantics.md#complete_attempts), both with claim_next
// (docs/semantics.md#claim_next). The completion rules are lua/lib/complete.lua's.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "a2/options.hpp"
#include "a2/results.hpp"
#include "a2/types.hpp"
#include "redis/scripts/claim_available.hpp"
#include "redis/scripts/script.hpp"

namespace a2::redis::detail::scripts {

struct CompleteAttempt {
  static constexpr std::string_view kKeys =
      "log count meta pending ready pins snapshot-pin-counts meta-split id*n work";
  static constexpr std::string_view kArgv =
      "session now index attempt n {id type payload lane settled available_at}*n notify holder "
      "expires_at max_events";
  static const a2::detail::EmbeddedText& script();

  std::string_view session;
  std::int64_t now = 0;
  std::int64_t index = 0;
  std::int64_t attempt = 0;
  std::span<const ChildEvent> children;  // Every id set.
  std::optional<NextClaim> next = std::nullopt;

  Call encode(const Keys& k) const;

  enum class Verdict { superseded, missing, partial, replay, ok };
  struct Result {
    Verdict verdict = Verdict::superseded;
    std::optional<std::string> owned_id;      // partial: the child id already owned, if named
                                              // (absent: a replay that does not match).
    std::optional<std::int64_t> first_index;  // ok: the first child.
    std::vector<StoredEvent> rows;    // replay: the children as the script read them, before any
                                      // claim_next (docs/semantics.md#S137).
    std::optional<ClaimResult> next;  // The claim_next result, when asked for.
  };
  // A reply after the script wrote ('ok', or any claim_next result) that cannot be decoded is
  // outcome-unknown.
  static Result decode(std::string_view op, const std::string& session_id, const Reply& r);
  // One completion's reply C (also an element of complete_attempts.lua's reply).
  static Result verdict(std::string_view op, const std::string& session_id, const Reply& r);
};

struct CompleteAttempts {
  static constexpr std::string_view kKeys =
      "log count meta pending ready snapshot-pin-counts meta-split pins*m id*children work";
  static constexpr std::string_view kArgv =
      "session now m children {index attempt n {id type payload lane settled available_at}*n}*m "
      "notify holder expires_at max_events";
  static const a2::detail::EmbeddedText& script();

  std::string_view session;
  std::int64_t now = 0;
  std::span<const Completion> completions;  // Every child id set.
  std::optional<NextClaim> next = std::nullopt;

  Call encode(const Keys& k) const;

  enum class Verdict { done, missing, partial };
  struct Result {
    Verdict verdict = Verdict::done;
    std::size_t failed = 0;               // missing / partial: the failing completion (0-based).
    std::optional<std::string> owned_id;  // partial: the child id already owned, if named.
    std::vector<CompleteAttempt::Result> results;  // done: one per completion, in order.
    std::optional<ClaimResult> next;               // done: the claim_next result, when asked for.
  };
  // A 'done' reply that cannot be decoded is outcome-unknown.
  static Result decode(std::string_view op, const std::string& session_id, const Reply& r);
};

}  // namespace a2::redis::detail::scripts
