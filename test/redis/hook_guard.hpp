// SPDX-License-Identifier: MIT
#pragma once

// Installs the Redis backend's test hook (src/redis/test_hooks.hpp) for one test and removes it
// on scope exit.

#include <utility>

#include "redis/test_hooks.hpp"

namespace a2::redis_test {

struct HookGuard {
  explicit HookGuard(a2::redis::detail::TestHook hook) {
    a2::redis::detail::set_test_hook(std::move(hook));
  }
  ~HookGuard() { a2::redis::detail::set_test_hook({}); }
  HookGuard(const HookGuard&) = delete;
  HookGuard& operator=(const HookGuard&) = delete;
};

}  // namespace a2::redis_test
