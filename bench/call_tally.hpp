// SPDX-License-Identifier: MIT
#pragma once

// Where a benchmark's store time goes: an a2::Observer that counts the store's calls by
// operation and verdict ("claim_available busy") and adds up their durations (as the caller saw
// them: waits for a lock on the server included).
// Set it as a store's ObserveOptions::observer; thread-safe (one mutex per report).

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "a2/observe.hpp"

namespace a2::bench {

class CallTally : public a2::Observer {
 public:
  struct Totals {
    std::int64_t calls = 0;
    std::chrono::nanoseconds time{0};
  };

  void on_operation(const a2::OperationRecord& r) noexcept override {
    if (r.operation == "job") return;  // A worker's job record, not a store call.
    try {
      std::lock_guard lock(mutex_);
      std::string key(r.operation);
      if (r.outcome != "ok") key.append(" ").append(r.outcome);  // A verdict: "claimed", "busy".
      auto& t = totals_[key];
      ++t.calls;
      t.time += r.duration;
    } catch (...) {  // std::bad_alloc: the figure is lost, the call is not.
    }
  }

  // The totals since the last take, by operation and verdict; starts anew.
  std::map<std::string, Totals> take() {
    std::lock_guard lock(mutex_);
    return std::exchange(totals_, {});
  }

 private:
  std::mutex mutex_;
  std::map<std::string, Totals> totals_;
};

}  // namespace a2::bench
