// SPDX-License-Identifier: MIT
#include "redis/test_hooks.hpp"

#include <atomic>
#include <memory>
#include <mutex>

namespace a2::redis::detail {
namespace {
std::atomic<bool> g_installed{false};
std::mutex g_mutex;
std::shared_ptr<const TestHook> g_hook;
}  // namespace

void set_test_hook(TestHook hook) {
  std::lock_guard lock(g_mutex);
  g_hook = hook ? std::make_shared<const TestHook>(std::move(hook)) : nullptr;
  g_installed.store(g_hook != nullptr);
}

void run_test_hook(std::string_view stage, const std::string& session_id) {
  if (!g_installed.load(std::memory_order_relaxed)) return;
  std::shared_ptr<const TestHook> hook;
  {
    std::lock_guard lock(g_mutex);
    hook = g_hook;
  }
  if (hook) (*hook)(stage, session_id);
}

}  // namespace a2::redis::detail
