// SPDX-License-Identifier: MIT
#pragma once

// Typed caller of lua/clear.lua (docs/semantics.md#clear).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "a2/types.hpp"
#include "redis/scripts/script.hpp"

namespace a2::redis::detail::scripts {

struct Clear {
  static constexpr std::string_view kKeys =
      "log count meta meta-split marker-id pending ready work";
  static constexpr std::string_view kArgv =
      "session now if_last_index cause_index cause_attempt marker notify marker_type";
  static const a2::detail::EmbeddedText& script();

  std::string_view session;
  std::int64_t now = 0;
  std::optional<std::int64_t> if_last_index;
  std::optional<EventCause> cause;
  std::string_view marker_id;
  std::string_view marker_type;  // The store's clear_event_type.

  Call encode(const Keys& k) const {
    return {{k.log(session), k.count(session), k.meta(session), k.meta_split(session),
             k.id(marker_id), k.pending(session), k.ready(session), k.work()},
            {std::string(session), decimal(now),
             if_last_index ? decimal(*if_last_index) : std::string(),
             cause ? decimal(cause->index) : std::string(),
             cause ? decimal(cause->attempt) : std::string(), std::string(marker_id),
             k.notify(session), std::string(marker_type)}};
  }

  enum class Verdict { ok, no_parent, superseded, foreign };
  struct Result {
    Verdict verdict = Verdict::ok;
    std::optional<std::int64_t> cause_index;  // no_parent, when the reply names it.
    bool cleared = false;                     // ok.
    std::int64_t head = 0;                    // ok.
    std::int64_t boundary = 0;                // ok.
  };
  // An 'ok' reply that cannot be decoded is outcome-unknown.
  static Result decode(std::string_view op, const Reply& r);
};

}  // namespace a2::redis::detail::scripts
