// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <random>

// The worker's default retry delay after a handler failure (WorkerOptions::backoff).
namespace a2 {

// Exponential backoff with a cap and jitter: the n-th failure waits
// min(max, initial * multiplier^(n-1)), minus up to `jitter` of it at random (so workers that
// failed together do not retry together). Thread-safe.
class ExponentialBackoff {
 public:
  std::chrono::milliseconds initial{1000};
  double multiplier = 2.0;
  std::chrono::milliseconds max{300000};
  double jitter = 0.2;  // 0..1: the share of the delay that is random.

  // The delay after the failure_count-th failure (>= 1).
  std::chrono::milliseconds operator()(std::int64_t failure_count) const {
    double delay = static_cast<double>(initial.count());
    const double cap = static_cast<double>(max.count());
    for (std::int64_t i = 1; i < failure_count && delay < cap; ++i) delay *= multiplier;
    delay = std::min(delay, cap);
    const double j = std::clamp(jitter, 0.0, 1.0);
    if (j > 0) delay -= delay * j * unit_random();
    return std::chrono::milliseconds(static_cast<std::int64_t>(std::max(0.0, delay)));
  }

 private:
  static double unit_random() {
    static std::mutex mutex;
    static std::mt19937_64 engine{std::random_device{}()};
    std::lock_guard lock(mutex);
    return std::uniform_real_distribution<double>(0.0, 1.0)(engine);
  }
};

}  // namespace a2
