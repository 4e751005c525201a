// SPDX-License-Identifier: MIT
#pragma once

// Typed caller of lua/put_snapshots.lua (docs/semantics.md#put_snapshots).

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "a2/detail/json_text.hpp"
#include "a2/types.hpp"
#include "redis/scripts/script.hpp"

namespace a2::redis::detail::scripts {

struct PutSnapshots {
  static constexpr std::string_view kKeys =
      "snap snap-history count meta snapshot-pin-counts meta-split";
  static constexpr std::string_view kArgv =
      "now pin_prefix n {index checkpoint pins {pin}*pins}*n reducer";
  static const a2::detail::EmbeddedText& script();

  std::string_view session;
  std::string_view reducer;
  std::int64_t now = 0;
  std::span<const SnapshotWrite> writes;  // Ascending, one per index.

  Call encode(const Keys& k) const {
    Call c;
    c.keys = {k.snap(session, reducer), k.snap_history(session, reducer),
              k.count(session),         k.meta(session),
              k.pin_counts(session),    k.meta_split(session)};
    c.argv = {decimal(now), k.pins_prefix(session),
              decimal(static_cast<std::int64_t>(writes.size()))};
    for (const auto& w : writes) {
      c.argv.push_back(decimal(w.index));
      // JSON.stringify's key order, as the original writes it; r: the reducer is registered.
      c.argv.push_back("{\"index\":" + decimal(w.index) +
                       ",\"state\":" + a2::detail::json_text(w.state) +
                       ",\"updatedAt\":" + decimal(now) + ",\"r\":1}");
      c.argv.push_back(decimal(static_cast<std::int64_t>(w.pin_event_indexes.size())));
      for (auto p : w.pin_event_indexes) c.argv.push_back(decimal(p));
    }
    c.argv.emplace_back(reducer);
    return c;
  }
  // The reply (1) carries nothing.
};

}  // namespace a2::redis::detail::scripts
