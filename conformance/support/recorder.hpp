// SPDX-License-Identifier: MIT
#pragma once

// An Observer that keeps copies of everything reported, for the hooks' tests (docs/observe.md).

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "a2/observe.hpp"

namespace a2::conformance {

struct SeenOperation {
  std::string operation, backend, outcome, session_id;
  std::optional<ErrorCode> error;
  bool outcome_unknown = false;
  std::int64_t round_trips = 0;
  std::chrono::nanoseconds duration{};
  std::int64_t spins = 0, spins_answered = 0;
};
struct SeenWork {
  WorkTransition transition;
  std::string backend, session_id;
  std::int64_t index = 0, attempt = 0;
};
struct SeenLog {
  LogLevel level;
  std::string backend, event, message;
};

class Recorder final : public Observer {
 public:
  void on_operation(const OperationRecord& r) noexcept override {
    std::lock_guard lock(mutex_);
    operations_.push_back({std::string(r.operation), std::string(r.backend), std::string(r.outcome),
                           std::string(r.session_id), r.error, r.outcome_unknown, r.round_trips,
                           r.duration, r.spins, r.spins_answered});
  }
  void on_work(const WorkRecord& r) noexcept override {
    std::lock_guard lock(mutex_);
    work_.push_back(
        {r.transition, std::string(r.backend), std::string(r.session_id), r.index, r.attempt});
  }
  void on_log(const LogRecord& r) noexcept override {
    std::lock_guard lock(mutex_);
    logs_.push_back({r.level, std::string(r.backend), std::string(r.event), r.message});
  }

  std::vector<SeenOperation> operations() const {
    std::lock_guard lock(mutex_);
    return operations_;
  }
  std::vector<SeenWork> work() const {
    std::lock_guard lock(mutex_);
    return work_;
  }
  std::vector<SeenLog> logs() const {
    std::lock_guard lock(mutex_);
    return logs_;
  }
  // The last operation reported; REQUIREs one.
  SeenOperation last() const {
    std::lock_guard lock(mutex_);
    if (operations_.empty()) throw std::logic_error("no operation was reported");
    return operations_.back();
  }
  void clear() {
    std::lock_guard lock(mutex_);
    operations_.clear();
    work_.clear();
    logs_.clear();
  }

 private:
  mutable std::mutex mutex_;
  std::vector<SeenOperation> operations_;
  std::vector<SeenWork> work_;
  std::vector<SeenLog> logs_;
};

}  // namespace a2::conformance
