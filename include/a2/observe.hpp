// SPDX-License-Identifier: MIT
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "a2/errors.hpp"

// Hooks: what a store (and a Worker on it) reports about its own behaviour to an Observer set in
// the backend's Options::observe. docs/observe.md is the contract (rules O1..); the Prometheus
// exporter (a2/prometheus.hpp, target a2::prometheus) is one Observer.
namespace a2 {

// One Store operation (or one Worker job, operation "job"), reported when it ends. The views
// are valid during the callback only.
struct OperationRecord {
  std::string_view operation;  // "append", "claim_available", ..., "job".
  std::string_view backend;    // "memory", "redis", "postgres".
  std::chrono::system_clock::time_point started_at;
  std::chrono::nanoseconds duration;
  // "ok", a verdict word ("claimed", "busy", "settled", "completed", "superseded", "failed",
  // "dead_lettered", "redriven", "not_redriven", "cleared", "not_cleared"), or the error
  // code's word when it threw ("invalid_argument", "store_unavailable", ...).
  std::string_view outcome;
  std::optional<ErrorCode> error;  // Set when the operation threw an a2::Error.
  bool outcome_unknown;         // Unavailable with outcome_unknown (the write may have happened).
  std::int64_t round_trips;     // Network round trips the call made (0 on memory).
  std::string_view session_id;  // "" for operations of no one session.
  // Waits for a reply that polled the socket first (the store option spin_wait,
  // docs/semantics.md#spin-wait; 0 without it), and of those the ones whose reply came while
  // polling (docs/observe.md#O13).
  std::int64_t spins;
  std::int64_t spins_answered;
};

enum class WorkTransition {
  claimed,
  completed,
  failed,
  dead_lettered,
  redriven,
  released,
  lease_lost
};

constexpr std::string_view to_string(WorkTransition t) {
  switch (t) {
    case WorkTransition::claimed:
      return "claimed";
    case WorkTransition::completed:
      return "completed";
    case WorkTransition::failed:
      return "failed";
    case WorkTransition::dead_lettered:
      return "dead_lettered";
    case WorkTransition::redriven:
      return "redriven";
    case WorkTransition::released:
      return "released";
    case WorkTransition::lease_lost:
      return "lease_lost";
  }
  return "unknown";
}

// One event's work transition, derived from an operation's result.
struct WorkRecord {
  WorkTransition transition;
  std::string_view backend;
  std::string_view session_id;
  std::int64_t index;
  std::int64_t attempt;  // The attempt concerned; 0 for redriven (a redrive has no attempt).
};

enum class LogLevel { debug, info, warning, error };

constexpr std::string_view to_string(LogLevel l) {
  switch (l) {
    case LogLevel::debug:
      return "debug";
    case LogLevel::info:
      return "info";
    case LogLevel::warning:
      return "warning";
    case LogLevel::error:
      return "error";
  }
  return "unknown";
}

// Something worth a log line: event "reconnect", "script_reload", "slow_operation",
// "safety_poll_catch_up" or "notify_dropped" (docs/observe.md#O9, #O11).
struct LogRecord {
  LogLevel level;
  std::string_view backend;
  std::string_view event;
  std::string message;  // "a2 <backend> <operation>: ..."
};

// Receives the reports. Thread safety: called from the threads that call the store (and from a
// worker's threads, a feed's or a watch's reader) concurrently, without any lock of the store
// held: an implementation must be thread-safe. The callbacks are noexcept: an exception leaving
// one terminates the process, so catch inside. Keep them quick: they run inside the caller's
// operation.
class Observer {
 public:
  virtual ~Observer() = default;
  virtual void on_operation(const OperationRecord&) noexcept {}
  virtual void on_work(const WorkRecord&) noexcept {}
  virtual void on_log(const LogRecord&) noexcept {}
};

struct ObserveOptions {
  std::shared_ptr<Observer> observer{};  // Unset: nothing is reported, at no cost.
  // An operation taking at least this long is also reported as a "slow_operation" log event.
  std::chrono::milliseconds slow_operation{1000};
};

namespace detail {

// Network round trips made by this thread: incremented at the one place each server backend
// sends a request and waits for its answer; the Store reads it before and after an operation.
inline thread_local std::int64_t t_round_trips = 0;
// Waits for a reply that polled first, and those answered while polling, on this thread: counted
// where a wait spins (src/common/spin_wait.hpp), read by the Store as t_round_trips is.
inline thread_local std::int64_t t_spins = 0;
inline thread_local std::int64_t t_spins_answered = 0;

// The observer of the store operation running on this thread (set by the Store while it runs an
// observed operation), so that code deep in a backend can log without plumbing. Null: nobody
// listens.
struct ObserveScope {
  const std::shared_ptr<Observer>* observer = nullptr;
  std::string_view backend{};
};
inline thread_local ObserveScope t_observe_scope{};

// Reports a log event to the observer of this thread's operation, if any.
inline void log_event(LogLevel level, std::string_view event, std::string message) noexcept {
  const auto& scope = t_observe_scope;
  if (scope.observer && *scope.observer)
    (*scope.observer)->on_log(LogRecord{level, scope.backend, event, std::move(message)});
}

// The observer of this thread's operation, kept by what outlives it (a feed, a work watch made
// by subscribe / watch_work) to log from its own reads later.
class CapturedObserver {
 public:
  static CapturedObserver current() {
    CapturedObserver c;
    if (t_observe_scope.observer) {
      c.observer_ = *t_observe_scope.observer;
      c.backend_ = std::string(t_observe_scope.backend);
    }
    return c;
  }
  void log(LogLevel level, std::string_view event, std::string message) const noexcept {
    if (observer_) observer_->on_log(LogRecord{level, backend_, event, std::move(message)});
  }

 private:
  std::shared_ptr<Observer> observer_;
  std::string backend_;
};

}  // namespace detail
}  // namespace a2
