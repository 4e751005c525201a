// SPDX-License-Identifier: MIT
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "a2/backoff.hpp"
#include "a2/store.hpp"
#include "a2/types.hpp"

// a2::Worker runs the work a store holds: it claims events, runs a handler on each in a pool of
// threads, and completes, fails, snoozes or releases them. docs/worker.md is its specification
// (delivery guarantees, what a handler must make idempotent, scenarios W1..).
namespace a2 {

// One claimed attempt of an event, as the handler sees it.
struct Job {
  std::string session_id{};
  std::int64_t index = 0;    // The event's index.
  std::int64_t attempt = 0;  // This attempt (the event's attempt_count after the claim).
  StoredEvent event{};       // The claimed row: type, payload, lane, failure_count, ...
};

// What a handler returns. Default-constructed: complete without children.
class JobOutcome {
 public:
  enum class Kind { complete, snooze };

  JobOutcome() = default;
  // Completes the attempt and appends `children` atomically with the completion (caused by
  // this attempt). Children without an id get one from the worker before the first call, so a
  // retried completion is recognised.
  static JobOutcome complete(std::vector<ChildEvent> children = {}) {
    JobOutcome o;
    o.children_ = std::move(children);
    return o;
  }
  // Runs the event again later, not before `delay` from now, without counting a failure: the
  // claim is released with that availability time (release_claims with available_at_ms).
  static JobOutcome snooze(std::chrono::milliseconds delay) {
    JobOutcome o;
    o.kind_ = Kind::snooze;
    o.delay_ = delay;
    return o;
  }

  Kind kind() const noexcept { return kind_; }
  const std::vector<ChildEvent>& children() const noexcept { return children_; }
  std::vector<ChildEvent>& children() noexcept { return children_; }
  std::chrono::milliseconds delay() const noexcept { return delay_; }

 private:
  Kind kind_ = Kind::complete;
  std::vector<ChildEvent> children_{};
  std::chrono::milliseconds delay_{0};
};

// What a handler gets besides the job. Valid during the handler call only.
class JobContext {
 public:
  JobContext(std::stop_token token, const std::atomic<bool>& lease_lost, Store& store,
             const std::string& holder)
      : token_(std::move(token)), lease_lost_(lease_lost), store_(store), holder_(holder) {}

  // Requested when the worker lost this attempt's lease (another worker may run the event: stop,
  // the result will be dropped) or when stop() ran out of grace. Long handlers poll it or
  // register a std::stop_callback.
  const std::stop_token& stop_token() const noexcept { return token_; }
  bool stop_requested() const noexcept { return token_.stop_requested(); }
  // True when the stop was requested because the lease was lost.
  bool lease_lost() const noexcept { return lease_lost_.load(); }
  // The store, for reads (read_state, read_range) inside the handler.
  Store& store() const noexcept { return store_; }
  const std::string& holder() const noexcept { return holder_; }

 private:
  std::stop_token token_;
  const std::atomic<bool>& lease_lost_;
  Store& store_;
  const std::string& holder_;
};

// The handler: runs one job. Returns how it ended; throwing records a failure (the exception's
// what() as last_error) and delays the next attempt by the backoff policy. Called from the
// worker's handler threads, several at once when concurrency > 1: it must be thread-safe.
using JobHandler = std::function<JobOutcome(const Job&, JobContext&)>;

// The transitions a worker reports through WorkerOptions::on_event.
enum class WorkerEventKind {
  claimed,        // The worker claimed the event (it will run it).
  completed,      // The completion was stored.
  failed,         // The handler threw; the failure was recorded, the event will be retried.
  snoozed,        // The handler asked to run it later; released with a later availability.
  dead_lettered,  // The handler threw and the failure reached max_failures.
  lease_lost,     // The lease ended before the result was stored; the result was dropped.
  released,       // stop() handed a claimed, unstarted event back to the store.
  store_error,    // A store call failed (detail has the message); the worker retries or recovers.
};

constexpr std::string_view to_string(WorkerEventKind k) {
  switch (k) {
    case WorkerEventKind::claimed:
      return "claimed";
    case WorkerEventKind::completed:
      return "completed";
    case WorkerEventKind::failed:
      return "failed";
    case WorkerEventKind::snoozed:
      return "snoozed";
    case WorkerEventKind::dead_lettered:
      return "dead_lettered";
    case WorkerEventKind::lease_lost:
      return "lease_lost";
    case WorkerEventKind::released:
      return "released";
    case WorkerEventKind::store_error:
      return "store_error";
  }
  return "unknown";
}

struct WorkerEvent {
  WorkerEventKind kind = WorkerEventKind::claimed;
  std::string session_id{};
  std::int64_t index = 0;  // 0 for a store_error not tied to one event.
  std::int64_t attempt = 0;
  std::string detail{};  // The error text (failed, dead_lettered, store_error).
};

// Counters since the worker started, and the current load. A consistent snapshot.
struct WorkerStats {
  std::uint64_t claimed = 0;        // Events claimed (by claims and by claim_next).
  std::uint64_t started = 0;        // Handler runs started.
  std::uint64_t completed = 0;      // Completions stored.
  std::uint64_t failed = 0;         // Failures recorded below max_failures.
  std::uint64_t snoozed = 0;        // Snoozes stored.
  std::uint64_t dead_lettered = 0;  // Failures that dead-lettered the event.
  std::uint64_t lease_lost = 0;     // Results dropped because the lease was lost.
  std::uint64_t released = 0;       // Claimed, unstarted events handed back by stop().
  std::uint64_t store_errors = 0;   // Store calls that failed (each retry counts).
  std::uint64_t store_calls = 0;    // Store calls made (each is one round trip on Redis).
  std::size_t running = 0;          // Handlers running now.
  std::size_t ready = 0;            // Claimed, not started yet.
  // The queue as the last claim saw it: the events that claim returned, and the sessions with
  // due work in the last discovery page (the listed sessions when serving a list).
  std::size_t last_claim_events = 0;
  std::size_t due_sessions = 0;
};

struct WorkerOptions {
  // The sessions to serve. Empty: every session with work (find_work, and watch_work for the
  // live signal).
  std::vector<std::string> sessions{};
  // Handler threads, 1..1024.
  int concurrency = 1;
  // Claimed events kept ready beyond the running ones, so a handler thread finds its next job
  // without waiting for a round trip. -1: as many as concurrency. 0..1024.
  int prefetch = -1;
  // The lease holder id. Empty: "<hostname>:<pid>:<8 random hex digits>".
  std::string holder{};
  // Lease length of every claim, > 0. Leases of running jobs are renewed in the background.
  std::chrono::milliseconds lease{30000};
  // How often leases are renewed. 0: a third of the lease.
  std::chrono::milliseconds renew_interval{0};
  // A handler failure dead-letters the event at this many failures (fail_attempt's max_failures).
  std::int64_t max_failures = 3;
  // The delay before the next attempt after a failure: (job, failure_count after this failure).
  // Empty: ExponentialBackoff{} (1 s doubling to 5 min, 20 % jitter).
  std::function<std::chrono::milliseconds(const Job&, std::int64_t)> backoff{};
  // Without a signal, look for work this often (find_work, or the listed sessions).
  std::chrono::milliseconds poll_interval{1000};
  // watch_work's safety sweep for work written by the original package (0: none).
  std::chrono::milliseconds sweep_interval{1000};
  // At most this many completions of one session in one completion call (complete_attempts, or
  // its request in complete_in_sessions), 1..10000.
  std::size_t max_batch = 64;
  // A failed retry-safe store call (store_unavailable) is repeated after 10 ms, doubling up to
  // this delay, for as long as the attempt's lease lasts.
  std::chrono::milliseconds retry_max_delay{1000};
  // The grace the destructor gives running handlers (stop()).
  std::chrono::milliseconds stop_grace{10000};
  // Called for every transition (WorkerEvent), from the worker's threads, one call at a time
  // per thread: it must be thread-safe and quick. Exceptions it throws are ignored.
  std::function<void(const WorkerEvent&)> on_event{};
};

namespace detail {
class WorkerRuntime;
}

// Runs `handler` on the work of `store` until stop(). The constructor validates the options
// (InvalidArgument) and starts the threads: `concurrency` handler threads and `concurrency`
// completion threads, a claim thread, a lease renewal thread and, when serving every session,
// a watch thread.
//
// Guarantees (docs/worker.md): at least once per event; one completion per attempt; one run of an
// event at a time in this process; a result whose lease was lost is dropped; claims whose reply was
// lost are recovered (held_claims) and released.
//
// Thread safety: stats(), holder() and stop() may be called from any thread; stop() from one at
// a time. The store must outlive the worker.
class Worker {
 public:
  Worker(Store& store, JobHandler handler, WorkerOptions options = {});
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Stops claiming; releases claimed, unstarted events at once (another worker takes them
  // without waiting for their leases); lets running handlers finish within `grace`, then
  // requests their stop tokens and waits for them to return; stores their results; joins the
  // threads. A handler that returns after the grace still has its completion stored (its work
  // is done); one that throws after the grace is released, not failed. Idempotent.
  void stop(std::chrono::milliseconds grace);
  void stop();  // With options.stop_grace.
  bool stopped() const noexcept;

  WorkerStats stats() const;
  const std::string& holder() const noexcept;

 private:
  std::unique_ptr<detail::WorkerRuntime> runtime_;
};

}  // namespace a2

#include "a2/detail/worker_runtime.hpp"
