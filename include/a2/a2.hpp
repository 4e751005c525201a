// SPDX-License-Identifier: MIT
#pragma once

// The core API and the in-memory backend. Backends with servers have their own headers:
// a2/redis.hpp (component a2::redis) and a2/postgres.hpp (component a2::postgres).
#include "a2/clock.hpp"
#include "a2/errors.hpp"
#include "a2/feed.hpp"
#include "a2/work_watch.hpp"
#include "a2/memory.hpp"
#include "a2/options.hpp"
#include "a2/results.hpp"
#include "a2/store.hpp"
#include "a2/types.hpp"
#include "a2/version.hpp"
