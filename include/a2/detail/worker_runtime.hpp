// SPDX-License-Identifier: MIT
#pragma once

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "a2/detail/validate.hpp"
#include "a2/detail/worker_ledger.hpp"
#include "a2/worker.hpp"

// The threads behind a2::Worker (docs/worker.md#how-it-runs):
//   claim thread    picks sessions (the list, find_work pages, work signals, due timers) and
//                   claims as many events as there are free slots (concurrency + prefetch);
//   handler threads run the handler on ready jobs;
//   finish threads  store the outcomes, per session in batches (complete_attempts with
//                   claim_next sized to the free slots, or complete_in_sessions for the
//                   batches of several sessions queued together; fail_attempt; release_claims);
//   renew thread    extends the leases of every held claim and marks the lost ones;
//   watch thread    claims in the sessions watch_work signals name (or makes them candidates).
// One mutex guards the shared state; store calls are made without it.
namespace a2::detail {

class WorkerRuntime {
  using SteadyClock = std::chrono::steady_clock;
  using TimePoint = SteadyClock::time_point;
  using ms = std::chrono::milliseconds;
  struct JobTiming {
    std::chrono::system_clock::time_point started_at;
    TimePoint started;
  };
  // A transition to report: the event for on_event, and the job's timing when a handler ran.
  struct Noted {
    WorkerEvent event;
    std::optional<JobTiming> job;
  };

 public:
  WorkerRuntime(Store& store, JobHandler handler, WorkerOptions options)
      : store_(store), handler_(std::move(handler)), opt_(std::move(options)) {
    validate();
    if (opt_.holder.empty()) opt_.holder = default_holder();
    if (opt_.prefetch < 0) opt_.prefetch = opt_.concurrency;
    if (opt_.renew_interval.count() == 0) opt_.renew_interval = opt_.lease / 3;
    if (!opt_.backoff) {
      opt_.backoff = [policy = ExponentialBackoff{}](const Job&, std::int64_t failures) {
        return policy(failures);
      };
    }
    capacity_ = static_cast<std::size_t>(opt_.concurrency + opt_.prefetch);
    listed_.insert(opt_.sessions.begin(), opt_.sessions.end());
    next_poll_ = SteadyClock::now();
    claimer_ = std::thread([this] { claim_loop(); });
    watcher_ = std::thread([this] { watch_loop(); });
    renewer_ = std::thread([this] { renew_loop(); });
    for (int i = 0; i < opt_.concurrency; ++i) {
      handlers_.emplace_back([this] { handler_loop(); });
      finishers_.emplace_back([this] { finish_loop(); });
    }
  }

  ~WorkerRuntime() { stop(opt_.stop_grace); }

  WorkerRuntime(const WorkerRuntime&) = delete;
  WorkerRuntime& operator=(const WorkerRuntime&) = delete;

  const std::string& holder() const noexcept { return opt_.holder; }
  const WorkerOptions& options() const noexcept { return opt_; }
  bool stopped() const noexcept { return stopped_.load(); }

  WorkerStats stats() const {
    std::lock_guard lock(mutex_);
    WorkerStats s = stats_;
    s.store_calls = store_calls_.load();
    s.store_errors = store_errors_.load();
    s.running = running_;
    s.ready = ready_.size();
    return s;
  }

  void stop(ms grace) {
    std::lock_guard stop_lock(stop_mutex_);
    if (stopped_.load()) return;
    const TimePoint deadline = SteadyClock::now() + grace;
    {
      std::lock_guard lock(mutex_);
      stop_claiming_ = true;
      stop_deadline_ = deadline;
    }
    claim_cv_.notify_all();
    cancel_watch();
    join(claimer_);
    join(watcher_);

    // Claimed but not started: back to the store at once, for another worker.
    std::map<std::string, std::vector<ClaimRef>> unstarted;
    {
      std::lock_guard lock(mutex_);
      for (auto& r : ready_) {
        unstarted[r.job.session_id].push_back({r.job.index, r.job.attempt});
        ledger_.remove(r.job.session_id, r.job.index, r.job.attempt);
      }
      ready_.clear();
      for (auto& [key, d] : deferred_)
        unstarted[key.first].push_back({key.second, d.job.job.attempt});
      deferred_.clear();
    }
    for (auto& [session, claims] : unstarted) release_unstarted(session, claims, deadline);

    std::unique_lock lock(mutex_);
    if (!idle_cv_.wait_until(lock, deadline, [&] { return running_ == 0 && finishing_ == 0; })) {
      // Out of grace: ask the running handlers to stop, and wait for them to return.
      ledger_.for_each([](const std::string&, std::int64_t, LedgerClaim& c) {
        if (c.state == ClaimState::running && c.run) {
          c.run->cancelled = true;
          c.run->stop.request_stop();
        }
      });
      idle_cv_.wait(lock, [&] { return running_ == 0; });
      // Their outcomes are stored within one more grace (the finish threads give up after it).
      stop_deadline_ = SteadyClock::now() + grace;
      idle_cv_.wait(lock, [&] { return finishing_ == 0; });
    }
    stop_threads_ = true;
    lock.unlock();
    handler_cv_.notify_all();
    finish_cv_.notify_all();
    renew_cv_.notify_all();
    for (auto& t : handlers_) join(t);
    for (auto& t : finishers_) join(t);
    join(renewer_);
    stopped_ = true;
  }

 private:
  // A claimed job waiting for a handler thread.
  struct ReadyJob {
    Job job;
    std::shared_ptr<WorkerRun> run;
  };
  // A finished run whose outcome is to be stored.
  enum class FinishKind { complete, fail, snooze, release };
  struct Finish {
    Job job;
    std::shared_ptr<WorkerRun> run;
    std::chrono::system_clock::time_point started_at{};  // When its handler started.
    TimePoint started{};
    FinishKind kind = FinishKind::complete;
    std::vector<ChildEvent> children{};
    std::string error{};
    ms delay{0};
  };

  // ---- options ---------------------------------------------------------------------------

  static constexpr std::int64_t kMaxWorkerDurationMs = 36525LL * 24 * 3600 * 1000;  // 100 years.

  void validate() const {
    constexpr std::string_view op = "worker";
    if (!handler_) invalid(op, "the handler is empty");
    check_integer(op, "concurrency", opt_.concurrency, 1);
    if (opt_.concurrency > 1024) invalid(op, "concurrency must be <= 1024");
    check_integer(op, "prefetch", opt_.prefetch, -1);
    if (opt_.prefetch > 1024) invalid(op, "prefetch must be <= 1024");
    if (!opt_.holder.empty()) check_text(op, "holder", opt_.holder, kMaxHolderBytes);
    // The durations are added to steady time points (nanoseconds: some 292 years in all), so
    // each is at most kMaxWorkerDurationMs (100 years).
    const auto duration = [&](std::string_view what, ms value, std::int64_t min) {
      check_integer(op, what, value.count(), min);
      if (value.count() > kMaxWorkerDurationMs)
        invalid(op, std::string(what) + " must be at most " + std::to_string(kMaxWorkerDurationMs) +
                        " (100 years)");
    };
    duration("lease (ms)", opt_.lease, 1);
    duration("renew_interval (ms)", opt_.renew_interval, 0);
    if (opt_.renew_interval >= opt_.lease)
      invalid(op, "renew_interval must be shorter than the lease");
    check_integer(op, "max_failures", opt_.max_failures, 1);
    duration("poll_interval (ms)", opt_.poll_interval, 1);
    duration("sweep_interval (ms)", opt_.sweep_interval, 0);
    if (opt_.max_batch < 1 || opt_.max_batch > kMaxListedIndexes)
      invalid(op, "max_batch must be 1..10000");
    duration("retry_max_delay (ms)", opt_.retry_max_delay, 1);
    duration("stop_grace (ms)", opt_.stop_grace, 0);
    for (const auto& s : opt_.sessions) check_session_id(op, s);
  }

  static std::string default_holder() {
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    std::string id = RandomIdSource().next_id().substr(0, 8);
    std::string h = std::string(host).substr(0, 200);
    return (h.empty() ? std::string("a2-worker") : h) + ":" + std::to_string(::getpid()) + ":" + id;
  }

  // ---- helpers (mutex_ held unless said) ---------------------------------------------------

  std::size_t free_slots() const {
    std::size_t used = ready_.size() + running_ + reserved_;
    return used >= capacity_ ? 0 : capacity_ - used;
  }

  // Whether a flush of `session` is under way that claims for the free slots (a complete_attempts
  // call with claim_next; mutex_ held): the claim and watch threads leave the session to it.
  bool claim_next_under_way(const std::string& session) const {
    return claiming_flush_.count(session) > 0;
  }

  bool serving(const std::string& session) const {
    return listed_.empty() || listed_.count(session) > 0;
  }

  void add_candidate(const std::string& session) {
    if (candidate_set_.insert(session).second) candidates_.push_back(session);
  }

  // A timer that makes `session` a candidate at the store time `at_ms` (at once when the store's
  // clock cannot be read: the claim then reports the error), or in a day at the latest: a steady
  // time point holds some 292 years of nanoseconds, and a candidate that is not due yet only
  // costs a claim that answers busy with its time again.
  void add_timer(const std::string& session, std::int64_t at_ms) {
    constexpr std::int64_t kMaxTimerMs = 24 * 3600 * 1000;
    std::int64_t wait = 0;
    try {
      wait = at_ms - store_.now_ms();  // Both in 0..2^53-1: no overflow.
    } catch (const Error&) {
    }
    timers_.emplace(SteadyClock::now() + ms(std::clamp<std::int64_t>(wait, 0, kMaxTimerMs)),
                    session);
  }

  TimePoint lease_end_from(TimePoint sent) const { return sent + opt_.lease; }

  // Reports the noted transitions: to on_event, and each job's end to the store's observer as an
  // OperationRecord "job" (docs/observe.md#O10).
  void emit(std::vector<Noted>& events) {
    for (const auto& n : events) {
      if (n.job && observer_) report_job(n);
      if (!opt_.on_event) continue;
      try {
        opt_.on_event(n.event);
      } catch (...) {
        // The callback's failures are its own; the worker goes on.
      }
    }
    events.clear();
  }
  // `job`: the run that ended with this transition (its handler ran), else null.
  void note(std::vector<Noted>& events, WorkerEventKind kind, const std::string& session,
            std::int64_t index, std::int64_t attempt, std::string detail = {},
            const Finish* job = nullptr) {
    if (!opt_.on_event && !observer_) return;
    Noted n{{kind, session, index, attempt, std::move(detail)}, std::nullopt};
    if (job) n.job = JobTiming{job->started_at, job->started};
    events.push_back(std::move(n));
  }
  void report_job(const Noted& n) const noexcept {
    const auto& e = n.event;
    observer_->on_operation({"job", store_.backend(), n.job->started_at,
                             SteadyClock::now() - n.job->started, to_string(e.kind), std::nullopt,
                             false, 0, e.session_id, 0, 0});
  }

  // Marks a held claim as lost: its handler's stop token is requested, its result dropped; a
  // ready job is taken off the queue.
  void mark_lost(const std::string& session, std::int64_t index, std::int64_t attempt,
                 std::vector<Noted>& events) {
    LedgerClaim* c = ledger_.find(session, index, attempt);
    if (!c) return;
    if (c->run) {
      c->run->lease_lost = true;
      c->run->stop.request_stop();
    }
    c->lease_end = SteadyClock::now();  // Claims exclude it until its handler returns.

    if (c->state == ClaimState::ready) {
      auto it = std::find_if(ready_.begin(), ready_.end(), [&](const ReadyJob& r) {
        return r.job.index == index && r.job.attempt == attempt && r.job.session_id == session;
      });
      if (it != ready_.end()) ready_.erase(it);
      ledger_.remove(session, index, attempt);  // A ready claim has no deferred successor.
      ++stats_.lease_lost;
      note(events, WorkerEventKind::lease_lost, session, index, attempt);
      claim_cv_.notify_one();
    }
    // running: the handler thread drops the result when it returns; finishing: the store
    // decides (superseded, or the completion still counts if nobody re-claimed it).
  }

  // Records claimed rows as ready jobs. An index this process still runs under an older attempt
  // (whose lease lapsed: the new claim proves it lost) waits in deferred_ until that run returns,
  // so one event never runs twice at once here. Returns the claims to hand back at once: anything
  // once stop() began (a claim_next answered late).
  std::vector<ClaimRef> accept_claimed(const std::string& session, std::vector<StoredEvent> rows,
                                       TimePoint sent, std::vector<Noted>& events) {
    std::vector<ClaimRef> refused;
    for (auto& row : rows) {
      const std::int64_t index = row.index, attempt = row.attempt_count;
      if (stop_claiming_) {
        refused.push_back({index, attempt});
        continue;
      }
      ++stats_.claimed;
      note(events, WorkerEventKind::claimed, session, index, attempt);
      ReadyJob job{Job{session, index, attempt, std::move(row)}, std::make_shared<WorkerRun>()};
      if (LedgerClaim* old = ledger_.find_any(session, index)) {
        mark_lost(session, index, old->attempt, events);  // Removes it if it had not started.
        if (ledger_.find_any(session, index)) {
          deferred_.insert_or_assign({session, index}, Deferred{std::move(job), sent});
          continue;
        }
      }
      ledger_.add(session, index, attempt, job.run, lease_end_from(sent));
      ready_.push_back(std::move(job));
    }
    if (!rows.empty()) handler_cv_.notify_all();
    return refused;
  }

  // Forgets a claim; a newer attempt of the same event that waited for it becomes ready.
  void forget(const std::string& session, std::int64_t index, std::int64_t attempt) {
    ledger_.remove(session, index, attempt);
    auto d = deferred_.find({session, index});
    if (d == deferred_.end() || ledger_.find_any(session, index)) return;
    ReadyJob job = std::move(d->second.job);
    const TimePoint sent = d->second.sent;
    deferred_.erase(d);
    ledger_.add(session, index, job.job.attempt, job.run, lease_end_from(sent));
    ready_.push_back(std::move(job));
    handler_cv_.notify_one();
  }

  // ---- store calls ---------------------------------------------------------------------------

  // Calls `f` once, counting it.
  template <class F>
  auto call(F&& f) -> decltype(f()) {
    store_calls_.fetch_add(1, std::memory_order_relaxed);
    try {
      return f();
    } catch (const Error&) {
      store_errors_.fetch_add(1, std::memory_order_relaxed);
      throw;
    }
  }

  // Calls a retry-safe `f`, repeating it on store_unavailable (10 ms doubling up to
  // retry_max_delay) until `deadline` or, once stop() has begun, the stop deadline. Rethrows
  // the last Unavailable when out of time; `unknown` is set when any attempt's outcome was
  // unknown.
  template <class F>
  auto retrying(F&& f, TimePoint deadline, bool* unknown = nullptr) -> decltype(f()) {
    ms delay{10};
    for (;;) {
      try {
        return call(f);
      } catch (const Unavailable& e) {
        if (unknown && e.outcome_unknown()) *unknown = true;
        TimePoint limit = deadline;
        {
          std::lock_guard lock(mutex_);
          if (stop_claiming_) limit = std::min(limit, stop_deadline_);
        }
        if (SteadyClock::now() + delay >= limit) throw;
        std::this_thread::sleep_for(delay);
        delay = std::min(delay * 2, opt_.retry_max_delay);
      }
    }
  }

  // ---- claim thread --------------------------------------------------------------------------

  void claim_loop() {
    std::unique_lock lock(mutex_);
    while (!stop_claiming_) {
      const TimePoint now = SteadyClock::now();
      while (!timers_.empty() && timers_.begin()->first <= now) {
        add_candidate(timers_.begin()->second);
        timers_.erase(timers_.begin());
      }
      if (now >= next_poll_) poll_due_ = true;
      if (free_slots() == 0) {
        claim_cv_.wait(lock);
        continue;
      }
      if (poll_due_) {
        poll_due_ = false;
        next_poll_ = now + opt_.poll_interval;
        lock.unlock();
        poll();
        lock.lock();
        continue;
      }
      if (candidates_.empty()) {
        TimePoint until = next_poll_;
        if (!timers_.empty()) until = std::min(until, timers_.begin()->first);
        claim_cv_.wait_until(lock, until);
        continue;
      }
      std::string session = std::move(candidates_.front());
      candidates_.pop_front();
      candidate_set_.erase(session);
      if (claim_next_under_way(session)) {
        // The flush claims for the free slots in its call; a claim beside it would only queue
        // behind it on the store (one session's writes are serial on Postgres, each with its
        // own commit). The flush hands the session back (finish_loop).
        after_flush_.insert(std::move(session));
        continue;
      }
      claim_in(lock, session);
    }
  }

  // Claims in `session` as many events as there are free slots (mutex_ held by `lock`; released
  // during the store calls). Called by the claim thread for its candidates and by the watch
  // thread for the sessions a signal names (one thread handoff less between a new event and
  // its handler).
  void claim_in(std::unique_lock<std::mutex>& lock, const std::string& session) {
    const bool recover = recover_.erase(session) > 0;
    const std::size_t k = free_slots();
    if (k == 0) {
      add_candidate(session);
      if (recover) recover_.insert(session);
      return;
    }
    reserved_ += k;
    ClaimRequest request{session,
                         opt_.holder,
                         opt_.lease.count(),
                         std::nullopt,
                         ledger_.lapsed(session, SteadyClock::now()),
                         static_cast<std::int64_t>(k)};
    lock.unlock();

    std::vector<Noted> events;
    if (recover) recover_held(session, events);
    const TimePoint sent = SteadyClock::now();
    std::optional<ClaimResult> result;
    std::vector<ClaimRef> refused;
    try {
      result = call([&] { return store_.claim_available(request); });
    } catch (const Error& e) {
      note(events, WorkerEventKind::store_error, session, 0, 0, e.what());
      lock.lock();
      reserved_ -= k;
      if (const auto* u = dynamic_cast<const Unavailable*>(&e)) {
        // Retried after a pause; a lost reply may have claimed: recover before claiming.
        if (u->outcome_unknown()) recover_.insert(session);
        timers_.emplace(SteadyClock::now() + claim_error_delay_, session);
        claim_error_delay_ = std::min(claim_error_delay_ * 2, opt_.retry_max_delay);
      }
      lock.unlock();
      emit(events);
      lock.lock();
      return;
    }
    lock.lock();
    claim_error_delay_ = ms{10};
    reserved_ -= k;
    stats_.last_claim_events = result->events.size();
    if (result->verdict == ClaimVerdict::claimed) {
      const bool full = result->events.size() >= k;
      refused = accept_claimed(session, std::move(result->events), sent, events);
      if (full) add_candidate(session);  // Stopped at the bound: there may be more.
    } else if (result->verdict == ClaimVerdict::busy) {
      add_timer(session, result->retry_at);
    }
    lock.unlock();
    if (!refused.empty()) hand_back(session, refused);
    emit(events);
    lock.lock();
  }

  // The sessions to try: the listed ones, or find_work's pages of due sessions.
  void poll() {
    std::vector<std::string> found;
    bool more = false;
    if (!listed_.empty()) {
      found = opt_.sessions;
    } else {
      FindWorkRequest request;
      request.limit = static_cast<std::int64_t>(kFindWorkMaxLimit);
      try {
        request.due_by_ms = store_.now_ms();  // A clock the store refuses is a store_error.
        for (int page = 0; page < 8; ++page) {
          WorkPage p = call([&] { return store_.find_work(request); });
          for (auto& w : p.sessions) found.push_back(std::move(w.session_id));
          if (!p.next) break;
          request.after = std::move(p.next);
          more = page == 7;
        }
      } catch (const Error& e) {
        std::vector<Noted> events;
        note(events, WorkerEventKind::store_error, "", 0, 0, e.what());
        emit(events);
        std::lock_guard lock(mutex_);
        next_poll_ = std::min(next_poll_, SteadyClock::now() + ms(100));
        return;
      }
    }
    std::lock_guard lock(mutex_);
    stats_.due_sessions = found.size();
    for (auto& s : found) add_candidate(s);
    if (more) poll_due_ = true;
  }

  // After a claim whose reply was lost: the claims the store says this holder holds in
  // `session` that this process does not know are released (they become claimable at once).
  void recover_held(const std::string& session, std::vector<Noted>& events) {
    try {
      auto held = call([&] { return store_.held_claims(session, opt_.holder); });
      std::vector<ClaimRef> unknown;
      {
        std::lock_guard lock(mutex_);
        for (const auto& h : held)
          if (!ledger_.find(session, h.index, h.attempt)) unknown.push_back({h.index, h.attempt});
      }
      if (!unknown.empty()) hand_back(session, unknown);
    } catch (const Error& e) {
      note(events, WorkerEventKind::store_error, session, 0, 0, e.what());
      std::lock_guard lock(mutex_);
      recover_.insert(session);
    }
  }

  // Releases claims this process will not run (no failure counted).
  void hand_back(const std::string& session, const std::vector<ClaimRef>& claims) {
    try {
      auto r = retrying(
          [&] {
            return store_.release_claims({session, opt_.holder, claims});
          },
          SteadyClock::now() + opt_.lease);
      (void)r;
    } catch (const Error&) {
      // The leases lapse on their own.
    }
  }

  void release_unstarted(const std::string& session, const std::vector<ClaimRef>& claims,
                         TimePoint deadline) {
    std::vector<Noted> events;
    try {
      ReleaseResult r = retrying(
          [&] {
            return store_.release_claims({session, opt_.holder, claims});
          },
          deadline);
      std::lock_guard lock(mutex_);
      stats_.released += claims.size();
      for (const auto& c : claims)
        note(events, WorkerEventKind::released, session, c.index, c.attempt);
    } catch (const Error& e) {
      note(events, WorkerEventKind::store_error, session, 0, 0, e.what());
    }
    emit(events);
  }

  // ---- watch thread --------------------------------------------------------------------------

  void watch_loop() {
    WatchWorkOptions options;
    options.sweep_interval = listed_.empty() ? opt_.sweep_interval : ms(0);
    ms delay{10};
    for (;;) {
      {
        std::lock_guard lock(mutex_);
        if (stop_claiming_) break;
      }
      std::shared_ptr<WorkWatch> watch;
      {
        std::lock_guard lock(watch_mutex_);
        watch = watch_;
      }
      if (!watch) {
        try {
          watch = std::shared_ptr<WorkWatch>(call([&] { return store_.watch_work(options); }));
          std::lock_guard lock(watch_mutex_);
          if (watch_cancelled_) break;
          watch_ = watch;
          delay = ms(10);
        } catch (const Error&) {
          std::unique_lock lock(mutex_);
          claim_cv_.wait_for(lock, delay, [&] { return stop_claiming_; });
          delay = std::min(delay * 2, ms(1000));
          continue;
        }
      }
      WorkSignal signal;
      try {
        signal = watch->wait(ms(1000));
      } catch (const Error&) {
        std::lock_guard lock(watch_mutex_);
        watch_.reset();  // The store was closed, or the watch broke: make a new one.
        continue;
      }
      if (signal.session_ids.empty() && !signal.resync) continue;
      {
        std::unique_lock lock(mutex_);
        if (signal.resync) poll_due_ = true;
        for (auto& s : signal.session_ids) {
          if (!serving(s) || stop_claiming_) continue;
          // With free slots, claim here at once; else the claim thread takes it later (after
          // the session's completion call with claim_next, when one is under way).
          if (free_slots() > 0 && candidate_set_.count(s) == 0 && !claim_next_under_way(s)) {
            claim_in(lock, s);
          } else {
            add_candidate(s);
          }
        }
      }
      claim_cv_.notify_one();
    }
    std::lock_guard lock(watch_mutex_);
    watch_.reset();
  }

  void cancel_watch() {
    std::lock_guard lock(watch_mutex_);
    watch_cancelled_ = true;
    if (watch_) watch_->cancel();
  }

  // ---- handler threads -----------------------------------------------------------------------

  void handler_loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
      handler_cv_.wait(lock, [&] { return !ready_.empty() || stop_threads_; });
      if (ready_.empty()) return;
      ReadyJob r = std::move(ready_.front());
      ready_.pop_front();
      if (LedgerClaim* c = ledger_.find(r.job.session_id, r.job.index, r.job.attempt))
        c->state = ClaimState::running;
      ++running_;
      ++stats_.started;
      lock.unlock();

      Finish f{std::move(r.job), std::move(r.run), std::chrono::system_clock::now(),
               SteadyClock::now()};
      JobContext context(f.run->stop.get_token(), f.run->lease_lost, store_, opt_.holder);
      try {
        JobOutcome outcome = handler_(f.job, context);
        if (outcome.kind() == JobOutcome::Kind::snooze) {
          f.kind = FinishKind::snooze;
          f.delay = std::max(outcome.delay(), ms(0));
        } else {
          f.children = std::move(outcome.children());
          for (auto& child : f.children)
            // Named before the first call (a retry is recognised), from the store's IdSource:
            // time-ordered by default, so on Postgres each child goes to the id index's right
            // edge (docs/postgres-layout.md#indexes), not to a random page of it.
            if (!child.id) child.id = store_.draw_event_id();
        }
      } catch (const std::exception& e) {
        f.kind = FinishKind::fail;
        f.error = e.what();
      } catch (...) {
        f.kind = FinishKind::fail;
        f.error = "a2 worker: the handler threw a non-standard exception";
      }

      std::vector<Noted> events;
      lock.lock();
      --running_;
      if (f.run->lease_lost) {
        forget(f.job.session_id, f.job.index, f.job.attempt);
        ++stats_.lease_lost;
        note(events, WorkerEventKind::lease_lost, f.job.session_id, f.job.index, f.job.attempt, {},
             &f);
      } else {
        if (f.run->cancelled && f.kind == FinishKind::fail) f.kind = FinishKind::release;
        if (LedgerClaim* c = ledger_.find(f.job.session_id, f.job.index, f.job.attempt))
          c->state = ClaimState::finishing;
        const std::string session = f.job.session_id;
        auto& queue = pending_[session];
        const bool wake = queue.empty() && flushing_.count(session) == 0;
        queue.push_back(std::move(f));
        ++finishing_;
        if (wake) {
          flush_queue_.push_back(session);
          finish_cv_.notify_one();
        }
      }
      slot_freed(lock, events);
    }
  }

  // A handler or finish thread gave up its job: the claim thread may claim again, stop() may be
  // done waiting; then the transitions are reported without the mutex.
  void slot_freed(std::unique_lock<std::mutex>& lock, std::vector<Noted>& events) {
    claim_cv_.notify_one();
    idle_cv_.notify_all();
    if (events.empty()) return;
    lock.unlock();
    emit(events);
    lock.lock();
  }

  // ---- finish threads ------------------------------------------------------------------------

  // One session's part of a flush: its finished runs, and the free slots its completion call
  // may claim for (claim_next).
  struct SessionFlush {
    std::string session;
    std::vector<Finish> batch;
    std::size_t next = 0;
  };
  // The completions of one session in a flush.
  struct SessionCompletes {
    const std::string* session;
    std::vector<Finish*> items;
    std::size_t next;
  };

  void finish_loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
      ++idle_finishers_;
      finish_cv_.wait(lock, [&] { return !flush_queue_.empty() || stop_threads_; });
      --idle_finishers_;
      if (flush_queue_.empty()) return;
      // The queued sessions shared with the finish threads that wait too (at least one, at most
      // kMaxCompletedSessions): their completions go in one store call (complete_in_sessions).
      const std::size_t share = std::min<std::size_t>(
          kMaxCompletedSessions, (flush_queue_.size() + idle_finishers_) / (idle_finishers_ + 1));
      std::size_t free = stop_claiming_ ? 0 : free_slots();
      std::vector<SessionFlush> group;
      while (!flush_queue_.empty() && group.size() < share) {
        SessionFlush part{std::move(flush_queue_.front()), {}, 0};
        flush_queue_.pop_front();
        flushing_.insert(part.session);
        auto& queue = pending_[part.session];
        while (!queue.empty() && part.batch.size() < opt_.max_batch) {
          part.batch.push_back(std::move(queue.front()));
          queue.pop_front();
        }
        part.next = std::min(free, opt_.max_batch);
        free -= part.next;
        reserved_ += part.next;
        if (part.next > 0) claiming_flush_.insert(part.session);
        group.push_back(std::move(part));
      }
      if (!flush_queue_.empty() && idle_finishers_ > 0) finish_cv_.notify_one();  // The rest.
      lock.unlock();

      std::vector<Noted> events;
      flush(group, events);

      lock.lock();
      for (auto& part : group) {
        const std::string& session = part.session;
        reserved_ -= part.next;
        finishing_ -= part.batch.size();
        flushing_.erase(session);
        claiming_flush_.erase(session);
        auto it = pending_.find(session);
        if (it != pending_.end()) {
          if (it->second.empty()) {
            pending_.erase(it);
          } else {
            flush_queue_.push_back(session);
            finish_cv_.notify_one();
          }
        }
        // A session's flushes are serial (flushing_), so none of it claims now.
        if (after_flush_.erase(session) > 0) add_candidate(session);
      }
      slot_freed(lock, events);
    }
  }

  // Stores the outcomes of `group` (one part per session). The completions go in one store call
  // (complete_attempts for one session, complete_in_sessions for several) that also claims, per
  // session, up to its part's `next` events for the free slots; then the failures and releases.
  void flush(std::vector<SessionFlush>& group, std::vector<Noted>& events) {
    std::vector<SessionCompletes> completing;
    for (auto& part : group) {
      SessionCompletes c{&part.session, {}, part.next};
      for (auto& f : part.batch)
        if (f.kind == FinishKind::complete) c.items.push_back(&f);
      if (!c.items.empty()) completing.push_back(std::move(c));
    }
    if (completing.size() == 1) {
      complete(*completing[0].session, completing[0].items, completing[0].next, events);
    } else if (completing.size() > 1) {
      complete_in_sessions(completing, events);
    }
    for (auto& part : group)
      for (auto& f : part.batch) {
        switch (f.kind) {
          case FinishKind::complete:
            break;
          case FinishKind::fail:
            fail(f, events);
            break;
          case FinishKind::snooze:
          case FinishKind::release:
            release(f, events);
            break;
        }
      }
  }

  CompleteManyRequest completion_request(const std::string& session,
                                         const std::vector<Finish*>& items,
                                         std::size_t next) const {
    CompleteManyRequest request;
    request.session_id = session;
    request.completions.reserve(items.size());
    for (const Finish* f : items)
      request.completions.push_back({f->job.index, f->job.attempt, f->children});
    if (next > 0)
      request.claim_next =
          ClaimNext{opt_.holder, opt_.lease.count(), std::nullopt, static_cast<std::int64_t>(next)};
    return request;
  }

  void complete(const std::string& session, std::vector<Finish*>& items, std::size_t next,
                std::vector<Noted>& events) {
    CompleteManyRequest request = completion_request(session, items, next);
    const TimePoint sent = SteadyClock::now();
    bool unknown = false, first = true;
    std::optional<CompleteManyResult> result;
    try {
      result = retrying(
          [&] {
            if (!first) request.claim_next.reset();  // A retry does not claim again.
            first = false;
            return store_.complete_attempts(request);
          },
          sent + opt_.lease, &unknown);
    } catch (const Unavailable& e) {
      out_of_time(session, items, next > 0 && unknown, e, events);
      return;
    } catch (const Error& e) {
      refused(session, items, e, events);
      return;
    }
    completed(session, items, next, *result, sent, unknown, events);
  }

  // The completions of several sessions in one complete_in_sessions call, retried as complete()
  // retries its call; each session's outcome is then handled as complete() handles its own.
  void complete_in_sessions(std::vector<SessionCompletes>& completing, std::vector<Noted>& events) {
    std::vector<CompleteManyRequest> requests;
    requests.reserve(completing.size());
    for (const auto& c : completing)
      requests.push_back(completion_request(*c.session, c.items, c.next));
    const TimePoint sent = SteadyClock::now();
    bool unknown = false, first = true;
    std::vector<CompleteManyOutcome> outcomes;
    try {
      outcomes = retrying(
          [&] {
            if (!first)  // A retry does not claim again.
              for (auto& q : requests) q.claim_next.reset();
            first = false;
            return store_.complete_in_sessions(requests);
          },
          sent + opt_.lease, &unknown);
    } catch (const Unavailable& e) {
      for (auto& c : completing) out_of_time(*c.session, c.items, c.next > 0 && unknown, e, events);
      return;
    } catch (const Error&) {
      // Refused whole before any I/O (a child id named by two sessions' jobs): each alone.
      for (auto& c : completing) complete(*c.session, c.items, c.next, events);
      return;
    }
    for (std::size_t i = 0; i < completing.size(); ++i) {
      auto& c = completing[i];
      if (outcomes[i].ok()) {
        completed(*c.session, c.items, c.next, *outcomes[i].result, sent, unknown, events);
        continue;
      }
      try {
        std::rethrow_exception(outcomes[i].error);
      } catch (const Unavailable& e) {
        // This session's own failure (its call alone, after the others' call was rolled back):
        // stored again alone, without a claim when this one's may have run.
        std::size_t next = c.next;
        if (e.outcome_unknown() && next > 0) {
          std::lock_guard lock(mutex_);
          recover_.insert(*c.session);
          next = 0;
        }
        complete(*c.session, c.items, next, events);
      } catch (const Error& e) {
        refused(*c.session, c.items, e, events);
      }
    }
  }

  // Out of time storing the completions of `items`: the leases lapse and another attempt runs
  // these events. `recover`: a claim_next may have claimed (a lost reply).
  void out_of_time(const std::string& session, std::vector<Finish*>& items, bool recover,
                   const Unavailable& e, std::vector<Noted>& events) {
    std::lock_guard lock(mutex_);
    for (Finish* f : items) {
      forget(session, f->job.index, f->job.attempt);
      ++stats_.lease_lost;
      note(events, WorkerEventKind::lease_lost, session, f->job.index, f->job.attempt, e.what(), f);
    }
    if (recover) {
      recover_.insert(session);
      add_candidate(session);
    }
  }

  // The store refused the completions of `items` (a child id taken, bad children): one by one
  // to find which; a refused one fails.
  void refused(const std::string& session, std::vector<Finish*>& items, const Error& e,
               std::vector<Noted>& events) {
    if (items.size() > 1) {
      for (Finish* f : items) {
        std::vector<Finish*> one{f};
        complete(session, one, 0, events);
      }
      std::lock_guard lock(mutex_);
      add_candidate(session);
      return;
    }
    items[0]->kind = FinishKind::fail;
    items[0]->error = std::string("a2 worker: the completion was refused: ") + e.what();
    note(events, WorkerEventKind::store_error, session, items[0]->job.index, items[0]->job.attempt,
         e.what());
  }

  // The store answered the completions of `items` with `result` (claim_next up to `next`).
  void completed(const std::string& session, std::vector<Finish*>& items, std::size_t next,
                 CompleteManyResult& result, TimePoint sent, bool unknown,
                 std::vector<Noted>& events) {
    std::vector<ClaimRef> refused_claims;
    {
      std::lock_guard lock(mutex_);
      for (std::size_t i = 0; i < items.size(); ++i) {
        Finish* f = items[i];
        forget(session, f->job.index, f->job.attempt);
        if (result.results[i].verdict == CompleteVerdict::completed) {
          ++stats_.completed;
          note(events, WorkerEventKind::completed, session, f->job.index, f->job.attempt, {}, f);
        } else {
          ++stats_.lease_lost;
          note(events, WorkerEventKind::lease_lost, session, f->job.index, f->job.attempt, {}, f);
        }
      }
      if (unknown && next > 0) recover_.insert(session);
      if (result.next) {
        ClaimResult& n = *result.next;
        if (n.verdict == ClaimVerdict::claimed) {
          const bool full = n.events.size() >= next;
          refused_claims = accept_claimed(session, std::move(n.events), sent, events);
          if (full) add_candidate(session);
        } else if (n.verdict == ClaimVerdict::busy) {
          add_timer(session, n.retry_at);
        }
      } else if (!stop_claiming_) {
        add_candidate(session);  // Children or a lane handoff may be claimable now.
      }
    }
    claim_cv_.notify_one();
    if (!refused_claims.empty()) hand_back(session, refused_claims);
  }

  // Stores one outcome of `f` with `call` (retry-safe: retried while the lease lasts); empty
  // when it could not be stored (reported as a store_error; the lease lapses on its own).
  template <class F>
  auto store_outcome(Finish& f, F&& call, std::vector<Noted>& events)
      -> std::optional<decltype(call())> {
    try {
      return retrying(call, SteadyClock::now() + opt_.lease);
    } catch (const Error& e) {
      note(events, WorkerEventKind::store_error, f.job.session_id, f.job.index, f.job.attempt,
           e.what());
      return std::nullopt;
    }
  }

  void fail(Finish& f, std::vector<Noted>& events) {
    const std::int64_t failures = f.job.event.failure_count + 1;
    const std::int64_t delay = std::max<std::int64_t>(0, opt_.backoff(f.job, failures).count());
    std::int64_t retry_at = 0;
    FailRequest request{f.job.session_id, f.job.index,       f.job.attempt,
                        f.error,          opt_.max_failures, retry_at};
    if (request.error.size() > kMaxErrorTextBytes) request.error.resize(kMaxErrorTextBytes);
    auto result = store_outcome(
        f,
        [&] {
          // Read in the call, so a clock the store refuses is reported as the call's error; a
          // delay past 2^53-1 ms is 2^53-1 (time_after).
          retry_at = time_after(store_.now_ms(), delay);
          request.retry_at_ms = retry_at;
          return store_.fail_attempt(request);
        },
        events);
    std::lock_guard lock(mutex_);
    forget(f.job.session_id, f.job.index, f.job.attempt);
    if (!result) return;
    switch (result->verdict) {
      case FailVerdict::failed:
        ++stats_.failed;
        note(events, WorkerEventKind::failed, f.job.session_id, f.job.index, f.job.attempt, f.error,
             &f);
        if (!stop_claiming_) add_timer(f.job.session_id, retry_at);
        break;
      case FailVerdict::dead_lettered:
        ++stats_.dead_lettered;
        note(events, WorkerEventKind::dead_lettered, f.job.session_id, f.job.index, f.job.attempt,
             f.error, &f);
        if (!stop_claiming_) add_candidate(f.job.session_id);  // Its lane may pass on.
        break;
      case FailVerdict::superseded:
        ++stats_.lease_lost;
        note(events, WorkerEventKind::lease_lost, f.job.session_id, f.job.index, f.job.attempt, {},
             &f);
        break;
    }
    claim_cv_.notify_one();
  }

  void release(Finish& f, std::vector<Noted>& events) {
    ReleaseRequest request{f.job.session_id, opt_.holder, {{f.job.index, f.job.attempt}}};
    std::int64_t at = 0;
    auto result = store_outcome(
        f,
        [&] {
          if (f.kind == FinishKind::snooze && f.delay.count() > 0) {
            at = time_after(store_.now_ms(), f.delay.count());  // As fail's retry time.
            request.available_at_ms = at;
          }
          return store_.release_claims(request);
        },
        events);
    std::lock_guard lock(mutex_);
    forget(f.job.session_id, f.job.index, f.job.attempt);
    if (!result) return;
    if (result->released.empty()) {
      ++stats_.lease_lost;
      note(events, WorkerEventKind::lease_lost, f.job.session_id, f.job.index, f.job.attempt, {},
           &f);
    } else if (f.kind == FinishKind::snooze) {
      ++stats_.snoozed;
      note(events, WorkerEventKind::snoozed, f.job.session_id, f.job.index, f.job.attempt, {}, &f);
      if (!stop_claiming_) {
        if (at > 0)
          add_timer(f.job.session_id, at);
        else
          add_candidate(f.job.session_id);
      }
    } else {
      ++stats_.released;
      note(events, WorkerEventKind::released, f.job.session_id, f.job.index, f.job.attempt, {}, &f);
    }
    claim_cv_.notify_one();
  }

  // ---- renew thread --------------------------------------------------------------------------

  void renew_loop() {
    std::unique_lock lock(mutex_);
    while (!stop_threads_) {
      renew_cv_.wait_for(lock, opt_.renew_interval, [&] { return stop_threads_; });
      if (stop_threads_) break;
      auto held = ledger_.snapshot();
      lock.unlock();
      std::vector<Noted> events;
      for (auto& [session, claims] : held) {
        const TimePoint sent = SteadyClock::now();
        std::optional<RenewResult> result;
        try {
          RenewRequest request{session, opt_.holder, claims, opt_.lease.count(), std::nullopt};
          result = call([&] { return store_.renew_claims(request); });
        } catch (const Error& e) {
          note(events, WorkerEventKind::store_error, session, 0, 0, e.what());
        }
        std::lock_guard guard(mutex_);
        if (result) {
          std::unordered_set<std::int64_t> renewed(result->renewed.begin(), result->renewed.end());
          for (const auto& c : claims) {
            if (renewed.count(c.index)) {
              if (LedgerClaim* lc = ledger_.find(session, c.index, c.attempt))
                lc->lease_end = lease_end_from(sent);
            } else {
              mark_lost(session, c.index, c.attempt, events);
            }
          }
        } else {
          // Not renewed: a claim whose lease has passed by our own clock is lost.
          const TimePoint now = SteadyClock::now();
          for (const auto& c : claims) {
            LedgerClaim* lc = ledger_.find(session, c.index, c.attempt);
            if (lc && lc->lease_end <= now) mark_lost(session, c.index, c.attempt, events);
          }
        }
      }
      emit(events);
      lock.lock();
    }
  }

  static void join(std::thread& t) {
    if (t.joinable()) t.join();
  }

  Store& store_;
  const std::shared_ptr<Observer> observer_ = store_.observer();  // The jobs' reports.
  JobHandler handler_;
  WorkerOptions opt_;
  std::size_t capacity_ = 1;
  std::unordered_set<std::string> listed_;

  mutable std::mutex mutex_;
  std::condition_variable claim_cv_, handler_cv_, finish_cv_, idle_cv_, renew_cv_;
  bool stop_claiming_ = false, stop_threads_ = false;
  TimePoint stop_deadline_{};
  WorkerLedger ledger_;
  std::deque<ReadyJob> ready_;
  std::size_t running_ = 0, reserved_ = 0, finishing_ = 0;
  std::size_t idle_finishers_ = 0;  // Finish threads waiting for a session to flush.
  std::deque<std::string> candidates_;
  std::unordered_set<std::string> candidate_set_;
  std::multimap<TimePoint, std::string> timers_;
  std::unordered_set<std::string> recover_;
  ms claim_error_delay_{10};  // The pause before a failed claim's session is tried again.
  bool poll_due_ = true;
  TimePoint next_poll_{};
  // A claim of an event whose older attempt still runs here (accept_claimed).
  struct Deferred {
    ReadyJob job;
    TimePoint sent;
  };
  std::map<std::pair<std::string, std::int64_t>, Deferred> deferred_;
  std::unordered_map<std::string, std::deque<Finish>> pending_;
  std::deque<std::string> flush_queue_;
  std::unordered_set<std::string> flushing_;
  // Sessions whose flush claims for free slots now, and candidates whose claim waits for it
  // (claim_loop, finish_loop).
  std::unordered_set<std::string> claiming_flush_, after_flush_;
  WorkerStats stats_{};
  std::atomic<std::uint64_t> store_calls_{0}, store_errors_{0};

  std::mutex watch_mutex_;
  std::shared_ptr<WorkWatch> watch_;
  bool watch_cancelled_ = false;

  std::mutex stop_mutex_;
  std::atomic<bool> stopped_{false};
  std::thread claimer_, watcher_, renewer_;
  std::vector<std::thread> handlers_, finishers_;
};

}  // namespace a2::detail

namespace a2 {

inline Worker::Worker(Store& store, JobHandler handler, WorkerOptions options)
    : runtime_(
          std::make_unique<detail::WorkerRuntime>(store, std::move(handler), std::move(options))) {}
inline Worker::~Worker() = default;
inline void Worker::stop(std::chrono::milliseconds grace) { runtime_->stop(grace); }
inline void Worker::stop() { runtime_->stop(runtime_->options().stop_grace); }
inline bool Worker::stopped() const noexcept { return runtime_->stopped(); }
inline WorkerStats Worker::stats() const { return runtime_->stats(); }
inline const std::string& Worker::holder() const noexcept { return runtime_->holder(); }

}  // namespace a2
