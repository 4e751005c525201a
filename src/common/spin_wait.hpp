// SPDX-License-Identifier: MIT
#pragma once

// The stores' spin wait (store option spin_wait, docs/semantics.md#spin-wait): a call waiting for
// its reply polls its socket without sleeping for a while before it sleeps in the usual wait,
// which saves the sleep and the wake-up (on the 2-core test machine about half of a round trip
// to a server on the same machine: bench/RESULTS.md). One thread of the process spins at a time;
// the others go straight to sleep, and none spins while calls of spinning stores overlap
// (a2/detail/spin_calls.hpp), so many calls in flight leave the cores to the server.
//
// Used by the backends' one wait for a reply each (src/redis/client.cpp read_one,
// src/postgres/executor.cpp wait). Thread-safe.

#include <poll.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "a2/detail/spin_calls.hpp"
#include "a2/errors.hpp"
#include "a2/observe.hpp"
#include "common/pool.hpp"

namespace a2::detail {

// The largest spin_wait a store accepts: longer than any round trip the option is for.
inline constexpr std::chrono::microseconds kMaxSpinWait{10000};

// A store's spin_wait, checked at open (`op` is "<backend> open"): 0 to kMaxSpinWait.
inline void check_spin_wait(std::string_view op, std::chrono::microseconds spin_wait) {
  if (spin_wait.count() < 0 || spin_wait > kMaxSpinWait)
    throw InvalidArgument("a2 " + std::string(op) + ": spin_wait must be between 0 and 10 ms");
}

// The process's spin counters, for tests and the benchmark.
struct SpinCounts {
  std::uint64_t spins = 0;     // Waits that spun.
  std::uint64_t answered = 0;  // Of those, the ones whose socket became readable while spinning.
  // Waits that did not spin: another call was in flight or another thread was spinning.
  std::uint64_t declined = 0;
};

namespace spin_state {
inline std::atomic<bool> spinning{false};  // A thread of the process is spinning.
inline std::atomic<std::uint64_t> spins{0};
inline std::atomic<std::uint64_t> answered{0};
inline std::atomic<std::uint64_t> declined{0};
}  // namespace spin_state

inline SpinCounts spin_counts() {
  return {spin_state::spins.load(std::memory_order_relaxed),
          spin_state::answered.load(std::memory_order_relaxed),
          spin_state::declined.load(std::memory_order_relaxed)};
}

// True while some thread of the process spins (tests wait for it).
inline bool spin_in_progress() { return spin_state::spinning.load(std::memory_order_acquire); }

// Polls `fd` for readability without sleeping, for at most `budget` and never past `deadline`,
// unless another call of a spinning store is in flight or another thread of the process is
// spinning (then returns false at once; a spin also stops when another call starts). True when
// the socket became readable (or reports an error or a hang-up, which the caller's read then
// finds); false when the budget or the deadline ran out first. A budget of 0 does nothing.
inline bool spin_until_readable(int fd, std::chrono::microseconds budget, SteadyTime deadline) {
  if (budget.count() <= 0) return false;
  // The calls of spinning stores in flight, the caller's own (if it is one) included.
  const auto alone = [] { return spin_calls_in_flight() <= 1; };
  if (!alone() || spin_state::spinning.exchange(true, std::memory_order_acquire)) {
    spin_state::declined.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  spin_state::spins.fetch_add(1, std::memory_order_relaxed);
  ++t_spins;  // a2/observe.hpp: the operation's record.
  const auto until = std::min(deadline, std::chrono::steady_clock::now() + budget);
  bool readable = false;
  for (;;) {
    pollfd pfd{fd, POLLIN, 0};
    const int rc = ::poll(&pfd, 1, 0);
    if (rc > 0) {
      readable = true;
      break;
    }
    if (rc < 0 && errno != EINTR) break;  // The caller's own wait reports it.
    if (std::chrono::steady_clock::now() >= until || !alone()) break;
  }
  spin_state::spinning.store(false, std::memory_order_release);
  if (readable) {
    spin_state::answered.fetch_add(1, std::memory_order_relaxed);
    ++t_spins_answered;
  }
  return readable;
}

}  // namespace a2::detail
