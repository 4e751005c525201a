// SPDX-License-Identifier: MIT
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "a2/store.hpp"

// A store that runs every call on a real store (the memory backend in the worker tests) and can
// lose the reply of chosen writes: the write happens, then the caller gets
// Unavailable(outcome_unknown = true), as after a connection that broke while the reply was on
// its way. Fault injection for the worker's recovery paths (docs/worker.md#faults); nothing is
// simulated but the lost reply (and, when asked, a slow completion call).
namespace a2::test {

class LossyStore final : public Store {
 public:
  explicit LossyStore(std::unique_ptr<Store> inner)
      : Store(nullptr, nullptr), inner_(std::move(inner)) {}

  // The next `n` replies of claim_available / complete_attempts (or complete_in_sessions) are
  // lost.
  std::atomic<int> lose_claims{0};
  std::atomic<int> lose_completions{0};
  std::atomic<int> lost{0};  // Replies lost so far.
  // Each completion call (complete_attempts, complete_in_sessions) takes this much longer, so
  // that finished jobs queue behind it.
  std::atomic<int> completion_delay_ms{0};

  Store& inner() { return *inner_; }

 protected:
  template <class R>
  R maybe_lose(std::atomic<int>& budget, R result) {
    int n = budget.load();
    while (n > 0) {
      if (budget.compare_exchange_weak(n, n - 1)) {
        ++lost;
        throw Unavailable("a2 lossy: the reply was lost", /*outcome_unknown=*/true);
      }
    }
    return result;
  }

  void slow_down() const {
    if (const int ms = completion_delay_ms.load(); ms > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  }

  AppendResult do_append(const std::string& s, std::vector<NewEvent> e, const AppendOptions& o,
                         AppendIds /*ids*/) override {
    return inner_->append(s, std::move(e), o);
  }
  std::vector<StoredEvent> do_read(const std::string& s, const ReadOptions& o) override {
    return inner_->read(s, o);
  }
  std::vector<Event> do_read_history(const std::string& s, const ReadOptions& o) override {
    return inner_->read_history(s, o);
  }
  std::optional<std::vector<Event>> do_read_tail(const std::string& s, std::int64_t from,
                                                 std::optional<std::int64_t> through) override {
    return inner_->read_tail(s, from, through);
  }
  std::vector<Event> do_read_events(const std::string& s, std::int64_t after) override {
    return inner_->read_events(s, after);
  }
  std::vector<SerializedEvent> do_read_feed_page(const std::string& s,
                                                 std::int64_t after) override {
    return inner_->read_feed_page(s, after);
  }
  ClaimResult do_claim_available(const ClaimRequest& r) override {
    return maybe_lose(lose_claims, inner_->claim_available(r));
  }
  RenewResult do_renew_claims(const RenewRequest& r) override { return inner_->renew_claims(r); }
  ReleaseResult do_release_claims(const ReleaseRequest& r) override {
    return inner_->release_claims(r);
  }
  std::vector<HeldClaim> do_held_claims(const std::string& s, const std::string& h) override {
    return inner_->held_claims(s, h);
  }
  HeadResult do_head(const std::string& s) override { return inner_->head(s); }
  CompleteResult do_complete_attempt(const CompleteRequest& r) override {
    return inner_->complete_attempt(r);
  }
  CompleteManyResult do_complete_attempts(const CompleteManyRequest& r) override {
    slow_down();
    return maybe_lose(lose_completions, inner_->complete_attempts(r));
  }
  std::vector<CompleteManyOutcome> do_complete_in_sessions(
      const std::vector<CompleteManyRequest>& r) override {
    slow_down();
    return maybe_lose(lose_completions, inner_->complete_in_sessions(r));
  }
  FailResult do_fail_attempt(const FailRequest& r) override { return inner_->fail_attempt(r); }
  std::vector<StoredEvent> do_dead_letters(const std::string& s) override {
    return inner_->dead_letters(s);
  }
  RedriveResult do_redrive(const RedriveRequest& r) override { return inner_->redrive(r); }
  StateResult do_read_state(const std::string& s, const std::string& reducer,
                            const StateOptions& o) override {
    return inner_->read_state(s, reducer, o);
  }
  std::vector<StateResult> do_read_states(const std::string& reducer,
                                          const std::vector<StateRequest>& r) override {
    return inner_->read_states(reducer, r);
  }
  void do_put_snapshots(const std::string& s, const std::string& reducer,
                        std::vector<SnapshotWrite> w) override {
    inner_->put_snapshots(s, reducer, std::move(w));
  }
  ClearResult do_clear(const ClearRequest& r) override { return inner_->clear(r); }
  ReclaimResult do_reclaim(const std::string& s) override { return inner_->reclaim(s); }
  std::unique_ptr<Feed> do_subscribe(const std::string& s, std::int64_t after) override {
    return inner_->subscribe(s, after);
  }
  WorkPage do_find_work(const FindWorkRequest& r) override { return inner_->find_work(r); }
  SweepResult do_sweep_work() override { return inner_->sweep_work(); }
  SessionPage do_list_sessions(const ListSessionsRequest& r) override {
    return inner_->list_sessions(r);
  }
  SessionInspection do_inspect_session(const std::string& s) override {
    return inner_->inspect_session(s);
  }
  std::unique_ptr<WorkWatch> do_watch_work(const WatchWorkOptions& o) override {
    return inner_->watch_work(o);
  }
  PresenceMap do_patch_presence(const std::string& s, const PresencePatch& p) override {
    return inner_->patch_presence(s, p);
  }
  PresenceMap do_read_presence(const std::string& s) override {
    return inner_->read_presence(s);
  }
  void do_close() override { inner_->close(); }

 private:
  std::unique_ptr<Store> inner_;
};

}  // namespace a2::test
