// SPDX-License-Identifier: MIT
#pragma once

// Test-only hooks of the Redis backend: the store calls the installed hook at named stages so a
// test can interleave another operation exactly there (scenario docs/semantics.md#S40).
// Internal: not installed, only tests include it. No hook is installed in production, where a stage
// costs one relaxed atomic load.
//
// Stages (the session id is passed along):
//   "read_bounds"      right after the bounds MGET of read, read_range, read_history and the
//                      reads of stored rows (before the first page).

#include <functional>
#include <string>
#include <string_view>

namespace a2::redis::detail {

using TestHook = std::function<void(std::string_view stage, const std::string& session_id)>;

// Installs (or, with an empty function, removes) the process-wide hook. Thread-safe. The hook
// runs on the thread of the operation, which holds one pooled connection meanwhile.
void set_test_hook(TestHook hook);

// Calls the hook, if any. Thread-safe.
void run_test_hook(std::string_view stage, const std::string& session_id);

}  // namespace a2::redis::detail
