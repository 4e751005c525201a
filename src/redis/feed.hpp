// SPDX-License-Identifier: MIT
#pragma once

// The live feed of the Redis store (docs/redis-layout.md#live-feeds): SUBSCRIBE to the
// session's notify channel, wake-ups applied when they continue the cursor, XRANGE catch-up
// otherwise and at the safety poll.

#include <cstdint>
#include <memory>
#include <string>

#include "a2/feed.hpp"
#include "redis/core.hpp"

namespace a2::redis::detail {

// Subscribes before returning, so no wake-up published after the first catch-up read is missed.
std::unique_ptr<Feed> make_feed(std::shared_ptr<Core> core, std::string session_id,
                                std::int64_t after);

}  // namespace a2::redis::detail
