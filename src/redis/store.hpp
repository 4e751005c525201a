// SPDX-License-Identifier: MIT
#pragma once

// The Redis store (a2::redis::open): every write is one Lua script run by SHA through its typed
// caller (src/redis/scripts/, docs/redis-layout.md#scripts); reads are pipelined XRANGE/HMGET
// pages (docs/redis-layout.md#reads, reads.cpp) with the range-gap retry
// (docs/redis-layout.md#range-gaps); live feeds combine pub/sub wake-ups with XRANGE catch-up
// (docs/redis-layout.md#live-feeds, feed.cpp). Failures go through errors.hpp.
//
// Where the operations live: writes.cpp (append, complete_attempt, complete_attempts, clear,
// reclaim, put_snapshots), work.cpp (claim_available, renew_claims, release_claims, held_claims,
// fail_attempt, dead_letters, redrive, presence), reads.cpp (read, read_history, read_tail,
// read_events, read_feed_page, read_state, head), discovery.cpp (find_work, sweep_work),
// work_watch.cpp (watch_work), inspect.cpp (list_sessions, inspect_session).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "a2/redis.hpp"
#include "redis/core.hpp"
#include "redis/errors.hpp"
#include "redis/scripts/complete_attempt.hpp"
#include "redis/scripts/script.hpp"

namespace a2::redis::detail {

// A read met a gap: a clear moved the log while the read ran (docs/redis-layout.md#range-gaps).
// Still a store_unavailable when it escapes; retry_after_gap() retries the whole read once.
class RangeGap : public Unavailable {
 public:
  using Unavailable::Unavailable;
};

template <class F>
auto retry_after_gap(F&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const RangeGap&) {
  }
  try {
    return read();
  } catch (const RangeGap& second) {
    throw Unavailable(second.what());  // A second gap: plain, retryable.
  }
}

// One event of an append: what a retry's stored row must match (docs/semantics.md#Q6). A
// completion's retry is recognised by its script alone (child ids and causes: Q3).
struct Requested {
  std::string id;
  std::string type;
  std::optional<std::string> lane;
  std::optional<EventCause> cause;
};

class RedisStore final : public Store {
 public:
  explicit RedisStore(std::shared_ptr<Core> core);
  ~RedisStore() override;

  // A page of serialized events after `after` (read_feed_page and the live feed's catch-up).
  static std::vector<SerializedEvent> feed_page(Core& core, const std::string& s,
                                                std::int64_t after);

 protected:
  AppendResult do_append(const std::string& s, std::vector<NewEvent> events,
                         const AppendOptions& options, AppendIds ids) override;
  std::vector<StoredEvent> do_read(const std::string& s, const ReadOptions& o) override;
  std::vector<Event> do_read_history(const std::string& s, const ReadOptions& o) override;
  std::optional<std::vector<Event>> do_read_tail(const std::string& s, std::int64_t from,
                                                 std::optional<std::int64_t> through) override;
  std::vector<Event> do_read_events(const std::string& s, std::int64_t after) override;
  std::vector<SerializedEvent> do_read_feed_page(const std::string& s, std::int64_t after) override;
  ClaimResult do_claim_available(const ClaimRequest& request) override;
  RenewResult do_renew_claims(const RenewRequest& request) override;
  ReleaseResult do_release_claims(const ReleaseRequest& request) override;
  std::vector<HeldClaim> do_held_claims(const std::string& s, const std::string& holder) override;
  WorkPage do_find_work(const FindWorkRequest& request) override;
  SweepResult do_sweep_work() override;
  SessionPage do_list_sessions(const ListSessionsRequest& request) override;
  SessionInspection do_inspect_session(const std::string& s) override;
  std::unique_ptr<WorkWatch> do_watch_work(const WatchWorkOptions& options) override;
  HeadResult do_head(const std::string& s) override;
  CompleteResult do_complete_attempt(const CompleteRequest& request) override;
  CompleteManyResult do_complete_attempts(const CompleteManyRequest& request) override;
  std::vector<CompleteManyOutcome> do_complete_in_sessions(
      const std::vector<CompleteManyRequest>& requests) override;
  FailResult do_fail_attempt(const FailRequest& request) override;
  std::vector<StoredEvent> do_dead_letters(const std::string& s) override;
  RedriveResult do_redrive(const RedriveRequest& request) override;
  StateResult do_read_state(const std::string& s, const std::string& reducer,
                            const StateOptions& options) override;
  std::vector<StateResult> do_read_states(const std::string& reducer,
                                          const std::vector<StateRequest>& requests) override;
  void do_put_snapshots(const std::string& s, const std::string& reducer,
                        std::vector<SnapshotWrite> writes) override;
  ClearResult do_clear(const ClearRequest& request) override;
  ReclaimResult do_reclaim(const std::string& s) override;
  std::unique_ptr<Feed> do_subscribe(const std::string& s, std::int64_t after) override;
  PresenceMap do_patch_presence(const std::string& s, const PresencePatch& patch) override;
  PresenceMap do_read_presence(const std::string& s) override;
  void do_close() override;

 private:
  const Keys& k() const { return core_->keys; }

  // Runs a store call under its deadline; every failure goes through the error translation.
  template <class F>
  auto guard(std::string_view op, F&& f) -> decltype(f()) {
    CallDeadline deadline(core_->options.command_timeout);
    return guarded(op, std::forward<F>(f));
  }

  // Runs one typed script call, through the multiplexer (or on a pooled connection when
  // write_connections is 0); returns its raw reply for Args::decode.
  template <class Args>
  Reply script(std::string_view op, const Args& args) {
    if (core_->options.write_connections == 0) {
      auto lease = core_->acquire(op);
      return scripts::run(*lease, op, k(), args);
    }
    const auto deadline = core_->deadline();
    return scripts::run(
        [&](const std::function<void(Resp&)>& encode) {
          return core_->mux.request(op, encode, deadline);
        },
        op, k(), args);
  }

  // read()'s rows with the clear boundary they start at. Throws RangeGap.
  std::pair<std::vector<StoredEvent>, std::int64_t> read_stored_range(
      std::string_view op, const std::string& s, std::int64_t after,
      std::optional<std::int64_t> through);
  // Public events after..through. Throws RangeGap.
  std::vector<Event> read_event_range(Connection& c, std::string_view op, const std::string& s,
                                      std::int64_t after, std::int64_t through);

  // Matches an append replay's stored rows to the request; a mismatch is
  // partial_duplicate_batch.
  static void match_replay(std::string_view op, const std::string& s,
                           const std::vector<Requested>& wanted,
                           const std::vector<StoredEvent>& rows);

  // One completion's verdict (complete_attempt.lua's reply C) as its result, a replay's rows
  // matched to the request; the errors of a completion are thrown.
  CompleteResult completion_result(std::string_view op, const std::string& s, std::int64_t index,
                                   std::int64_t attempt, const std::vector<ChildEvent>& events,
                                   const scripts::CompleteAttempt::Result& reply, std::int64_t now);

  // complete_attempts.lua's raw reply to `q` as complete_attempts' result; the errors of a
  // refused call are thrown.
  CompleteManyResult many_result(std::string_view op, const CompleteManyRequest& q,
                                 const Reply& reply, std::int64_t now);

  std::shared_ptr<Core> core_;
};

}  // namespace a2::redis::detail
