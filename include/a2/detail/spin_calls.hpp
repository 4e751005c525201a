// SPDX-License-Identifier: MIT
#pragma once

// The calls in flight of the stores that spin while waiting for a reply (the store option
// spin_wait, docs/semantics.md#spin-wait), process-wide: a call polls for its reply only while
// it is the only one, so calls that overlap leave the machine's cores to the server and to each
// other. Store (a2/store.hpp) counts the public operations of the stores that ask for it
// (count_calls_for_spin_wait()); the backends' waits read the count (src/common/spin_wait.hpp).

#include <atomic>

namespace a2::detail {

inline std::atomic<int> g_spin_calls_in_flight{0};

// Counts one call for its lifetime when `counted` (a store with spin_wait); else nothing.
class SpinCallScope {
 public:
  explicit SpinCallScope(bool counted) noexcept : counted_(counted) {
    if (counted_) [[unlikely]]
      g_spin_calls_in_flight.fetch_add(1, std::memory_order_relaxed);
  }
  ~SpinCallScope() {
    if (counted_) [[unlikely]]
      g_spin_calls_in_flight.fetch_sub(1, std::memory_order_relaxed);
  }
  SpinCallScope(const SpinCallScope&) = delete;
  SpinCallScope& operator=(const SpinCallScope&) = delete;

 private:
  bool counted_;
};

inline int spin_calls_in_flight() noexcept {
  return g_spin_calls_in_flight.load(std::memory_order_relaxed);
}

}  // namespace a2::detail
