// SPDX-License-Identifier: MIT
#pragma once

// Typed caller of lua/append.lua (docs/semantics.md#append).

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "a2/types.hpp"
#include "redis/scripts/script.hpp"

namespace a2::redis::detail::scripts {

struct Append {
  static constexpr std::string_view kKeys = "log count meta pending ready meta-split id*n work";
  static constexpr std::string_view kArgv =
      "session now n {id type payload cause lane settled available_at}*n notify origin";
  static const a2::detail::EmbeddedText& script();

  std::string_view session;
  std::int64_t now = 0;
  std::span<const NewEvent> events;  // Every id set.
  std::optional<std::int64_t> origin_index;

  Call encode(const Keys& k) const;

  enum class Verdict { empty, ok, replay, partial, foreign, no_parent, superseded, cleared };
  struct Result {
    Verdict verdict = Verdict::empty;
    bool has_pending = false;       // empty, ok, replay.
    std::int64_t first_index = 0;   // ok: the first new index.
    std::vector<StoredEvent> rows;  // replay: the stored rows of the ids, in batch order, as the
                                    // script read them (docs/semantics.md#S136).
    std::int64_t stored_count = 0;  // partial: how many of the ids are stored.
    std::string id;                 // foreign: the id owned by another session.
    std::int64_t index = 0;         // no_parent, superseded: the cause; cleared: the origin.
  };
  // A reply after the script wrote ('ok') that cannot be decoded is outcome-unknown.
  static Result decode(std::string_view op, const std::string& session_id, const Reply& r);
};

// Typed caller of lua/append_one.lua: append.lua's call for one unsettled event without cause,
// lane, available_at or origin (one_event()), in fewer arguments. Same replies as Append.
struct AppendOne {
  static constexpr std::string_view kKeys = "log count meta pending ready meta-split id work";
  static constexpr std::string_view kArgv = "session now id type payload notify";
  static const a2::detail::EmbeddedText& script();

  // Whether an append of `events` with `origin_index` is one AppendOne takes.
  static bool one_event(std::int64_t now, std::span<const NewEvent> events,
                        const std::optional<std::int64_t>& origin_index);

  std::string_view session;
  std::int64_t now = 0;
  const NewEvent& event;  // Its id set.

  Call encode(const Keys& k) const;
  using Result = Append::Result;
  static Result decode(std::string_view op, const std::string& session_id, const Reply& r) {
    return Append::decode(op, session_id, r);
  }
};

}  // namespace a2::redis::detail::scripts
