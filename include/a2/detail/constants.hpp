// SPDX-License-Identifier: MIT
#pragma once

// Page sizes and batch sizes of every backend, defined once. The C++ code uses these constants;
// the embedded Lua and SQL use them through the embedding step: cmake/a2_embed_file.cmake reads
// every line `inline constexpr std::int64_t kName = <value>;` of this file (and the limits of
// a2/types.hpp) and replaces `@A2_NAME@` (kReadPageSize -> @A2_READ_PAGE_SIZE@) in the text of
// lua/ and sql/ by the value. A value is an integer or an arithmetic expression of integers and
// constants defined before it.

#include <cstdint>

#include "a2/types.hpp"

namespace a2::detail {

// Events per page of read_tail and read_events (READ_PAGE_SIZE).
inline constexpr std::int64_t kReadPageSize = 256;
// Rows read_tail fetches: one more than a page, so the caller can tell that a range does not fit.
inline constexpr std::int64_t kReadTailRows = kReadPageSize + 1;
// Events per page of read_feed_page and of a live feed's catch-up (FEED_PAGE_SIZE).
inline constexpr std::int64_t kFeedPageSize = 1000;
// Sessions per page of find_work: the default and the largest limit (FIND_WORK_PAGE_SIZE,
// FIND_WORK_MAX_LIMIT).
inline constexpr std::int64_t kFindWorkPageSize = 256;
inline constexpr std::int64_t kFindWorkMaxLimit = 1000;
// Sessions per page of list_sessions: the largest limit (LIST_SESSIONS_MAX_LIMIT).
inline constexpr std::int64_t kListSessionsMaxLimit = 1000;
// Keys per SCAN step of the Redis work sweep (docs/redis-layout.md#work-index).
inline constexpr std::int64_t kSweepScanCount = 1000;
// Old events deleted per reclaim call.
inline constexpr std::int64_t kReclaimBatchSize = 256;
// Redis layout: consecutive indexes per metadata hash p:S:meta:<floor((I - 1) / size)>
// (docs/redis-layout.md). Part of the stored layout: never change it.
inline constexpr std::int64_t kMetaChunkSize = 1000;
// Arguments per variadic Redis command a Lua script sends in one call (Lua's unpack limit).
inline constexpr std::int64_t kLuaArgumentSlice = 1000;
// Postgres: a released id's tombstone starts with this many chr(1), longer than any caller id.
inline constexpr std::int64_t kTombstoneIdPrefixBytes = kMaxEventIdBytes + 1;

}  // namespace a2::detail
