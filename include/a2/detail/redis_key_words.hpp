// SPDX-License-Identifier: MIT
#pragma once

// The words that end a session's Redis keys, "<prefix>:<session>:<word>...", kept identical to
// experimental-a2 0.18 (docs/redis-layout.md#keys). Defined once: the Redis backend builds its keys
// from them (src/redis/keys.hpp; the Lua scripts derive the same names from the count key), and
// the validator, which every backend runs, refuses them as a session id segment after the first
// so that no session id can spell another session's key.

#include <string_view>

namespace a2::detail::redis_key_words {

inline constexpr std::string_view kLog = "log";
inline constexpr std::string_view kCount = "count";
inline constexpr std::string_view kMeta = "meta";
inline constexpr std::string_view kMetaSplit = "meta-split";
inline constexpr std::string_view kPending = "pending";
inline constexpr std::string_view kReady = "ready";
inline constexpr std::string_view kSnap = "snap";
inline constexpr std::string_view kSnapHistory = "snap-history";
inline constexpr std::string_view kSnapshotPins = "snapshot-pins";
inline constexpr std::string_view kSnapshotPinCounts = "snapshot-pin-counts";
inline constexpr std::string_view kClear = "clear";
inline constexpr std::string_view kCleared = "cleared";  // Written by the Lua scripts only.
inline constexpr std::string_view kSnapReducers = "snap-reducers";  // Lua scripts only.
inline constexpr std::string_view kPresence = "presence";
inline constexpr std::string_view kNotify = "notify";

// Every word above.
inline constexpr std::string_view kAll[] = {
    kLog,   kCount,   kMeta,         kMetaSplit,    kPending,
    kReady, kSnap,    kSnapHistory,  kSnapshotPins, kSnapshotPinCounts,
    kClear, kCleared, kSnapReducers, kPresence,     kNotify};

}  // namespace a2::detail::redis_key_words
