// SPDX-License-Identifier: MIT
#pragma once

// The store's clock as its operations read it (docs/semantics.md#input-limits).

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "a2/clock.hpp"
#include "a2/errors.hpp"
#include "a2/types.hpp"

namespace a2::detail {

// Wraps the clock of a store's options: a reading outside 0..2^53-1 (the times every backend
// stores exactly) is InvalidArgument, thrown to the call that read it. Every operation reads the
// clock before it changes anything, so such a call changes nothing. Thread-safe when the wrapped
// clock is (Clock's contract).
class CheckedClock final : public Clock {
 public:
  explicit CheckedClock(std::shared_ptr<Clock> inner) : inner_(std::move(inner)) {}

  std::int64_t now_ms() override {
    const std::int64_t ms = inner_->now_ms();
    if (ms < 0 || ms > kMaxSafeInteger)
      throw InvalidArgument("a2: the store's clock read " + std::to_string(ms) +
                            " ms since the Unix epoch; a2 takes times of 0..2^53-1");
    return ms;
  }

 private:
  std::shared_ptr<Clock> inner_;
};

// `now + ms` for a duration that check_integer accepted (1..2^53-1) after a CheckedClock reading
// (0..2^53-1), so the sum cannot overflow: a lease end or presence expiry beyond 2^53-1 is
// 2^53-1 (some 285,000 years after the epoch), not a time the backends would round.
inline std::int64_t time_after(std::int64_t now, std::int64_t ms) {
  return ms > kMaxSafeInteger - now ? kMaxSafeInteger : now + ms;
}

}  // namespace a2::detail
