// SPDX-License-Identifier: MIT
#pragma once

// The live work signal of the Redis store (docs/semantics.md#watch_work,
// docs/redis-layout.md#work-index): PSUBSCRIBE to every session's notify channel of the prefix
// on a connection of its own, plus the safety sweep every sweep_interval.

#include <chrono>
#include <memory>

#include "a2/clock.hpp"
#include "a2/work_watch.hpp"
#include "redis/core.hpp"

namespace a2::redis::detail {

// Subscribes before returning (throws Unavailable when it cannot), so every signal published
// after watch_work() returned is seen while the connection holds. `clock` (the store's) must
// outlive the watch, as the store must.
std::unique_ptr<WorkWatch> make_work_watch(std::shared_ptr<Core> core, Clock& clock,
                                           std::chrono::milliseconds sweep_interval);

}  // namespace a2::redis::detail
