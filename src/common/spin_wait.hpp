// SPDX-License-Identifier: MIT
#pragma once

// The stores' spin wait (store option spin_wait, docs/semantics.md#spin-wait): a call waiting for
// its reply polls its socket without sleeping for a while before it sleeps in the usual wait,
// which saves the sleep and the wake-up (on the 2-core test machine about half of a round trip
// to a server on the same machine: bench/RESULTS.md). One thread of the process spins at a time;
// the others go straight to sleep, and none spins while calls of spinning stores overlap
// (a2/detail/spin_calls.hpp), so many calls in flight leave the cores to the server. Each store
// paces its own spins (SpinPacer): a store whose replies keep coming later than its spin_wait
// stops spinning for a while, so a server farther away than the option is for costs it no CPU.
//
// Used by the backends' one wait for a reply each (src/redis/client.cpp read_one,
// src/postgres/executor.cpp wait). Thread-safe.

#include <poll.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <memory>
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

// A store's pacing of its spins: after this many spins in a row ran out their budget without a
// reply, its waits sleep at once for spin_pause_for(budget). The first spin after a pause decides
// alone: no reply by its budget starts the next pause, a reply resumes spinning.
inline constexpr int kSpinMissesToPause = 8;

// The pause: kSpinPausePerBudget times the budget, at least kSpinPauseMin and at most
// kSpinPauseMax. A server that never answers within the budget then costs a store one budget of
// polling per pause: at most 0.2% of a core (1% at the largest spin_wait, 10 ms). Short pauses
// let a near server's store spin again soon after a slow moment (a burst of late replies).
inline constexpr int kSpinPausePerBudget = 500;
inline constexpr std::chrono::milliseconds kSpinPauseMin{100};
inline constexpr std::chrono::milliseconds kSpinPauseMax{1000};

inline std::chrono::nanoseconds spin_pause_for(std::chrono::microseconds budget) {
  return std::clamp<std::chrono::nanoseconds>(budget * kSpinPausePerBudget, kSpinPauseMin,
                                              kSpinPauseMax);
}

// One store's spin_wait and how its spins fared lately; shared by the store's connections.
// Thread-safe. Only the one spinning thread of the process records outcomes (the gate of
// spin_until_readable), so the counts change one spin at a time.
class SpinPacer {
 public:
  explicit SpinPacer(std::chrono::microseconds budget)
      : SpinPacer(budget, kSpinMissesToPause, spin_pause_for(budget)) {}
  // Another pace (tests).
  SpinPacer(std::chrono::microseconds budget, int misses_to_pause, std::chrono::nanoseconds pause)
      : budget_(budget), misses_to_pause_(std::max(misses_to_pause, 1)), pause_(pause) {}
  SpinPacer(const SpinPacer&) = delete;
  SpinPacer& operator=(const SpinPacer&) = delete;

  std::chrono::microseconds budget() const noexcept { return budget_; }
  bool paused(SteadyTime now) const noexcept {
    return now.time_since_epoch().count() < paused_until_.load(std::memory_order_relaxed);
  }
  // A reply came within the budget.
  void answered() noexcept { misses_.store(0, std::memory_order_relaxed); }
  // A spin ran out its budget without a reply.
  void missed(SteadyTime now) noexcept {
    if (misses_.fetch_add(1, std::memory_order_relaxed) + 1 < misses_to_pause_) return;
    paused_until_.store((now + pause_).time_since_epoch().count(), std::memory_order_relaxed);
    misses_.store(misses_to_pause_ - 1, std::memory_order_relaxed);  // The next spin decides.
  }

 private:
  const std::chrono::microseconds budget_;
  const int misses_to_pause_;
  const std::chrono::nanoseconds pause_;
  std::atomic<int> misses_{0};                    // Spins in a row without a reply.
  std::atomic<SteadyTime::rep> paused_until_{0};  // No spins before this time.
};

// A store's pacer, or none for spin_wait 0 (a store that never spins).
inline std::shared_ptr<SpinPacer> make_spin_pacer(std::chrono::microseconds spin_wait) {
  if (spin_wait.count() <= 0) return nullptr;
  return std::make_shared<SpinPacer>(spin_wait);
}

// The process's spin counters, for tests and the benchmark.
struct SpinCounts {
  std::uint64_t spins = 0;     // Waits that spun.
  std::uint64_t answered = 0;  // Of those, the ones whose socket became readable while spinning.
  // Waits that did not spin: another call was in flight or another thread was spinning.
  std::uint64_t declined = 0;
  // Waits that did not spin because their store's spins were paused (SpinPacer).
  std::uint64_t paused = 0;
};

namespace spin_state {
inline std::atomic<bool> spinning{false};  // A thread of the process is spinning.
inline std::atomic<std::uint64_t> spins{0};
inline std::atomic<std::uint64_t> answered{0};
inline std::atomic<std::uint64_t> declined{0};
inline std::atomic<std::uint64_t> paused{0};
}  // namespace spin_state

inline SpinCounts spin_counts() {
  return {spin_state::spins.load(std::memory_order_relaxed),
          spin_state::answered.load(std::memory_order_relaxed),
          spin_state::declined.load(std::memory_order_relaxed),
          spin_state::paused.load(std::memory_order_relaxed)};
}

// True while some thread of the process spins (tests wait for it).
inline bool spin_in_progress() { return spin_state::spinning.load(std::memory_order_acquire); }

// Polls `fd` for readability without sleeping, for at most the budget of `pacer` (its store's
// spin_wait) and never past `deadline`, unless the store's spins are paused, another call of a
// spinning store is in flight or another thread of the process is spinning (then returns false
// at once; a spin also stops when another call starts). True when the socket became readable
// (or reports an error or a hang-up, which the caller's read then finds); false when the budget
// or the deadline ran out first. The pacer learns whether a reply came within the budget (one
// already there at the first poll too: a near server) or not; a spin cut short by another call
// or by the deadline teaches it nothing.
inline bool spin_until_readable(int fd, SpinPacer& pacer, SteadyTime deadline) {
  const auto budget = pacer.budget();
  if (budget.count() <= 0) return false;
  const auto start = std::chrono::steady_clock::now();
  if (pacer.paused(start)) {
    spin_state::paused.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  // The calls of spinning stores in flight, the caller's own (if it is one) included.
  const auto alone = [] { return spin_calls_in_flight() <= 1; };
  if (!alone() || spin_state::spinning.exchange(true, std::memory_order_acquire)) {
    spin_state::declined.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  spin_state::spins.fetch_add(1, std::memory_order_relaxed);
  ++t_spins;  // a2/observe.hpp: the operation's record.
  const auto budget_end = start + budget;
  const auto until = std::min(deadline, budget_end);
  bool readable = false;
  for (;;) {
    pollfd pfd{fd, POLLIN, 0};
    const int rc = ::poll(&pfd, 1, 0);
    if (rc > 0) {
      readable = true;
      pacer.answered();
      break;
    }
    if (rc < 0 && errno != EINTR) break;  // The caller's own wait reports it.
    const auto now = std::chrono::steady_clock::now();
    if (now >= until) {
      if (now >= budget_end) pacer.missed(now);
      break;
    }
    if (!alone()) break;
  }
  spin_state::spinning.store(false, std::memory_order_release);
  if (readable) {
    spin_state::answered.fetch_add(1, std::memory_order_relaxed);
    ++t_spins_answered;
  }
  return readable;
}

}  // namespace a2::detail
