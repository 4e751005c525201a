// SPDX-License-Identifier: MIT
#pragma once

// Work discovery of the Redis store (docs/redis-layout.md#work-index): the safety sweep, shared
// by sweep_work and the work watch, and the key names it scans for.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "a2/clock.hpp"
#include "a2/results.hpp"
#include "redis/core.hpp"

namespace a2::redis::detail {

// `text` with the glob characters of Redis patterns (* ? [ ] \) escaped by a backslash.
std::string glob_escape(std::string_view text);

// The session id in the key or channel `<prefix>:<S>:<word>`, or nullopt when `name` has another
// shape or S is not a valid session id (another key that happens to match the pattern, such as a
// reducer named `ready`: `p:S:snap:ready` gives `S:snap`, which the validator refuses).
std::optional<std::string> session_of(const Keys& keys, std::string_view name,
                                      std::string_view word);

// One full pass of the safety sweep (docs/semantics.md#sweep_work): SCAN MATCH
// `<prefix>:*:ready` COUNT kSweepScanCount, and per SCAN step one pipelined round trip of
// lua/index_session.lua for the sessions found, each with `now` of `clock` at that step. Each
// round trip has its own deadline (command_timeout). Throws Unavailable (outcome unknown when a
// step's scripts may have run).
SweepResult sweep(Core& core, Clock& clock);

}  // namespace a2::redis::detail
