// SPDX-License-Identifier: MIT
#pragma once

// Typed callers of lua/reclaim_batch.lua and lua/reclaim.lua (docs/semantics.md#reclaim): the
// next batch of a moved log, then its deletion.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "redis/scripts/script.hpp"

namespace a2::redis::detail::scripts {

struct ReclaimBatch {
  static constexpr std::string_view kKeys = "count";
  static constexpr std::string_view kArgv = "page_size";
  static const a2::detail::EmbeddedText& script();

  std::string_view session;
  std::int64_t page_size = 0;

  Call encode(const Keys& k) const { return {{k.count(session)}, {decimal(page_size)}}; }

  struct Entry {
    std::string index;  // As stored: passed back to reclaim.lua unchanged.
    std::string id;
  };
  struct Result {
    std::optional<std::string> moved_log;  // Absent: nothing left (the sweep ran).
    std::vector<Entry> entries;
  };
  static Result decode(std::string_view op, const Reply& r);
};

struct Reclaim {
  static constexpr std::string_view kKeys = "moved-log count meta meta-split id*n";
  static constexpr std::string_view kArgv = "session pin_prefix n {index id}*n";
  static const a2::detail::EmbeddedText& script();

  std::string_view session;
  std::string_view moved_log;
  const std::vector<ReclaimBatch::Entry>* entries = nullptr;

  Call encode(const Keys& k) const;

  struct Result {
    std::int64_t removed = 0;
    bool done = false;
  };
  // Outcome-unknown when it cannot be decoded (the script may have deleted).
  static Result decode(std::string_view op, const Reply& r);
};

}  // namespace a2::redis::detail::scripts
