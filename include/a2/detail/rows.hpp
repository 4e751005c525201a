// SPDX-License-Identifier: MIT
#pragma once

// The row every backend makes of an event it writes, so a write's result is built the same
// way everywhere (memory, and Redis and Postgres when the row is known without reading it).

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "a2/types.hpp"

namespace a2::detail {

// A new row: not claimed, not failed; a settled event is processed at `now`.
inline StoredEvent new_row(std::string session_id, std::int64_t index, std::string id,
                           std::string type, Json payload, std::optional<EventCause> cause,
                           std::optional<std::string> lane, bool settled, std::int64_t now) {
  StoredEvent row;
  row.session_id = std::move(session_id);
  row.index = index;
  row.id = std::move(id);
  row.type = std::move(type);
  row.payload = std::move(payload);
  row.created_at = now;
  row.cause = cause;
  row.lane = std::move(lane);
  if (settled) row.processed_at = now;
  return row;
}

}  // namespace a2::detail
