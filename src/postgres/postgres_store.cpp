// SPDX-License-Identifier: MIT
// The Postgres backend: every write is one call of a server-side function of sql/schema.sql
// (one round trip in autocommit), every read one statement of sql/<stem>.sql.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "a2/detail/constants.hpp"
#include "a2/detail/json_text.hpp"
#include "a2/detail/rows.hpp"
#include "a2/embedded/sql_files.hpp"
#include "a2/postgres.hpp"
#include "common/spin_wait.hpp"
#include "postgres/calls/append.hpp"
#include "postgres/calls/append_group.hpp"
#include "postgres/calls/append_one.hpp"
#include "postgres/calls/claim_available.hpp"
#include "postgres/calls/claim_group.hpp"
#include "postgres/calls/clear.hpp"
#include "postgres/calls/complete_attempt.hpp"
#include "postgres/calls/complete_attempts.hpp"
#include "postgres/calls/complete_attempts_group.hpp"
#include "postgres/calls/complete_group.hpp"
#include "postgres/calls/fail_attempt.hpp"
#include "postgres/calls/find_work.hpp"
#include "postgres/calls/inspect.hpp"
#include "postgres/calls/patch_presence.hpp"
#include "postgres/calls/put_snapshots.hpp"
#include "postgres/calls/reclaim.hpp"
#include "postgres/calls/redrive.hpp"
#include "postgres/calls/release_claims.hpp"
#include "postgres/calls/renew_claims.hpp"
#include "postgres/calls/sweep_work.hpp"
#include "postgres/connection_pool.hpp"
#include "postgres/errors.hpp"
#include "postgres/postgres_feed.hpp"
#include "postgres/rows.hpp"
#include "postgres/wake_sender.hpp"
#include "postgres/work_watch.hpp"
#include "postgres/write_groups.hpp"

namespace a2::postgres {
namespace {

using namespace detail;  // ConnectionPool, Notifier, the row decoders, the error translation.
namespace calls = detail::calls;

// sql/schema.sql's version (docs/postgres-layout.md#schema-version-2); it migrates version 1.
constexpr int kSchemaVersion = 2;

// The mark open() leaves on a schema set up by `schema_sql`: its version and a 64-bit FNV-1a
// digest of the text. Stable across processes and builds of the same text.
std::string schema_mark(std::string_view schema_sql) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : schema_sql) h = (h ^ c) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return "a2 schema version " + std::to_string(kSchemaVersion) + ", schema.sql fnv1a-64 " + hex;
}
// The default command_timeout: statement_timeout plus this, or the fixed value when the
// statement_timeout is 0 (none).
constexpr std::int64_t kCommandTimeoutMargin = 5000;
constexpr std::int64_t kDefaultCommandTimeout = 35000;
// The most writes of one kind in flight with write groups (Options::append_groups and
// work_groups).
constexpr std::size_t kMaxWriteGroups = 64;

bool plain_identifier(const std::string& s) {
  if (s.empty() || s.size() > 63) return false;
  if (!(s[0] == '_' || (s[0] >= 'a' && s[0] <= 'z'))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  });
}

class PostgresStore final : public Store {
 public:
  PostgresStore(const Options& options, std::shared_ptr<ConnectionPool> pool)
      : Store(options.clock, options.ids, "postgres", options.observe),
        pool_(std::move(pool)),
        wakes_(std::make_shared<WakeSender>(pool_)),
        notifier_(std::make_shared<Notifier>(pool_, wakes_)),
        safety_poll_(options.feed_safety_poll),
        clear_event_type_(options.clear_event_type) {
    if (options.spin_wait.count() > 0) count_calls_for_spin_wait();
    append_groups_ =
        make_groups<calls::AppendGroup>("append", options.append_groups, options.pool_size);
    claim_groups_ =
        make_groups<calls::ClaimGroup>("claim_available", options.work_groups, options.pool_size);
    completion_groups_ = make_groups<calls::CompleteGroup>("complete_attempt", options.work_groups,
                                                           options.pool_size);
    complete_attempts_groups_ = make_groups<calls::CompleteAttemptsGroup>(
        "complete_attempts", options.work_groups, options.pool_size);
  }

  ~PostgresStore() override { close(); }

 protected:
  AppendResult do_append(const std::string& s, std::vector<NewEvent> events,
                         const AppendOptions& options, AppendIds ids) override {
    // The common case, one unsettled event without cause, lane or origin, goes to
    // a2_append_one: the row is known here once its index is. When the id is already taken the
    // function answers as a2_append would (replay, or the foreign id's error), in the same call.
    // An available_at_ms not after now stores nothing, so such an event takes this path too.
    // With append groups it may go in one call with other callers' (postgres/write_groups.hpp).
    // An id the store drew skips the function's probe (calls/append_one.hpp).
    const std::int64_t now = clock().now_ms();
    if (events.size() == 1 && !options.origin_index && !events[0].cause && !events[0].lane &&
        !events[0].settled && events[0].available_at_ms.value_or(now) <= now) {
      NewEvent& e = events[0];
      const calls::AppendOne call{.session_id = s,
                                  .now_ms = now,
                                  .id = *e.id,
                                  .type = e.type,
                                  .payload = &e.payload,
                                  .id_drawn = ids == AppendIds::drawn};
      auto [reply, wakes_feeds] = write_grouped(append_groups_.get(), "append", call);
      if (!reply.index) {
        if (wakes_feeds) notifier_->appended(s, reply.replayed.events);
        return std::move(reply.replayed);
      }
      AppendResult result;
      result.events.push_back(a2::detail::new_row(s, *reply.index, std::move(*e.id),
                                                  std::move(e.type), std::move(e.payload),
                                                  std::nullopt, std::nullopt, false, now));
      result.has_pending = true;
      if (wakes_feeds) notifier_->appended(s, result.events);
      return result;
    }
    bool wakes_feeds = false;
    auto result =
        write("append", calls::Append::of(s, now, options.origin_index, events), &wakes_feeds);
    if (wakes_feeds) notifier_->appended(s, result.events);
    return result;
  }

  std::vector<StoredEvent> do_read(const std::string& s, const ReadOptions& options) override {
    return pool_->run("read", [&](Executor& x) {
      StoredEventCollector rows;
      x.stream(a2::detail::sql::kRead, rows, s, options.after_index,
               options.through_index.value_or(kMaxSafeInteger));
      return rows.take();
    });
  }

  std::vector<Event> do_read_history(const std::string& s, const ReadOptions& options) override {
    return pool_->run("read_history", [&](Executor& x) {
      EventCollector rows;
      x.stream(a2::detail::sql::kReadHistory, rows, s, options.after_index,
               options.through_index.value_or(kMaxSafeInteger));
      return rows.take();
    });
  }

  std::optional<std::vector<Event>> do_read_tail(const std::string& s, std::int64_t from_index,
                                                 std::optional<std::int64_t> through) override {
    return pool_->run("read_tail", [&](Executor& x) -> std::optional<std::vector<Event>> {
      auto rows =
          x.exec(a2::detail::sql::kReadTail, s, from_index, through.value_or(kMaxSafeInteger));
      expect_columns(rows, kEventColumnCount, {"clear_index"});
      if (rows.empty()) return std::vector<Event>{};
      auto clear_index = rows[0][kEventColumnCount].as<std::int64_t>();
      // from_index below the lifetime's start, or more than one page: does not fit.
      if (from_index < std::max<std::int64_t>(clear_index, 1) ||
          static_cast<std::int64_t>(rows.size()) > a2::detail::kReadPageSize)
        return std::nullopt;
      return events_of(rows);
    });
  }

  std::vector<Event> do_read_events(const std::string& s, std::int64_t after_index) override {
    return pool_->run("read_events", [&](Executor& x) {
      return events_of(
          x.exec(a2::detail::sql::kReadEventsPage, s, after_index, a2::detail::kReadPageSize));
    });
  }

  std::vector<SerializedEvent> do_read_feed_page(const std::string& s,
                                                 std::int64_t after_index) override {
    return pool_->run("read_feed_page", [&](Executor& x) {
      auto rows =
          x.exec(a2::detail::sql::kReadEventsPage, s, after_index, a2::detail::kFeedPageSize);
      expect_event_columns(rows, 0);
      std::vector<SerializedEvent> out;
      out.reserve(rows.size());
      for (const auto& row : rows) out.push_back(serialized_from_row(row));
      return out;
    });
  }

  ClaimResult do_claim_available(const ClaimRequest& request) override {
    auto now = clock().now_ms();
    const calls::ClaimAvailable call{
        request.session_id,
        request.holder,
        now,
        a2::detail::lease_expires_at(now, request.ttl_ms, request.expires_at_ms),
        request.exclude_indexes,
        request.max_events};
    // Without exclusions it may go in one call with other callers' (postgres/write_groups.hpp).
    if (claim_groups_ && call.exclude_indexes.empty())
      return write_grouped(claim_groups_.get(), "claim_available", call).reply;
    return write("claim_available", call);
  }

  ReleaseResult do_release_claims(const ReleaseRequest& request) override {
    return write("release_claims", calls::ReleaseClaims::of(request, clock().now_ms()));
  }

  std::vector<HeldClaim> do_held_claims(const std::string& s, const std::string& holder) override {
    auto now = clock().now_ms();
    return pool_->run("held_claims", [&](Executor& x) {
      auto rows = x.exec(a2::detail::sql::kHeldClaims, s, holder, now);
      expect_columns(rows, 0, {"idx", "attempt_count", "claim_expires_at"}, true);
      std::vector<HeldClaim> out;
      out.reserve(rows.size());
      for (const auto& row : rows)
        out.push_back(
            {row[0].as<std::int64_t>(), row[1].as<std::int64_t>(), row[2].as<std::int64_t>()});
      return out;
    });
  }

  // Work discovery (docs/postgres-layout.md#a2_work): the index is kept by the write functions.
  WorkPage do_find_work(const FindWorkRequest& request) override {
    const auto call = calls::FindWork::of(request);
    return pool_->run("find_work", [&](Executor& x) { return call.decode(call.exec(x)); });
  }

  // Inspection (docs/postgres-layout.md#inspection): one read-only statement each.
  SessionPage do_list_sessions(const ListSessionsRequest& request) override {
    a2::detail::check_session_cursor("list_sessions", request.cursor);
    const calls::ListSessions call{request.cursor, request.limit, clock().now_ms()};
    return pool_->run("list_sessions", [&](Executor& x) { return call.decode(call.exec(x)); });
  }

  SessionInspection do_inspect_session(const std::string& s) override {
    const calls::InspectSession call{s, clock().now_ms()};
    return pool_->run("inspect_session", [&](Executor& x) { return call.decode(call.exec(x)); });
  }

  SweepResult do_sweep_work() override {
    return write("sweep_work", calls::SweepWork{clock().now_ms()});
  }

  std::unique_ptr<WorkWatch> do_watch_work(const WatchWorkOptions& options) override {
    auto notifier = notifier_;
    return std::make_unique<detail::PostgresWorkWatch>(
        pool_, [this] { return do_sweep_work(); }, [notifier] { return notifier->stopped(); },
        options.sweep_interval);
  }

  HeadResult do_head(const std::string& s) override {
    return pool_->run("head", [&](Executor& x) {
      auto rows = x.exec(a2::detail::sql::kHead, s);
      expect_columns(rows, 0, {"head_index", "clear_index"}, true);
      return HeadResult{rows.at(0)[0].as<std::int64_t>(), rows.at(0)[1].as<std::int64_t>()};
    });
  }

  RenewResult do_renew_claims(const RenewRequest& request) override {
    auto now = clock().now_ms();
    calls::RenewClaims call{
        request.session_id,
        request.holder,
        now,
        a2::detail::lease_expires_at(now, request.ttl_ms, request.expires_at_ms),
        {},
        {}};
    for (const auto& c : request.claims) {
      call.indexes.push_back(c.index);
      call.attempts.push_back(c.attempt);
    }
    return write("renew_claims", call);
  }

  CompleteResult do_complete_attempt(const CompleteRequest& request) override {
    if (!request.claim_next) {
      // It may go in one call with other callers' (postgres/write_groups.hpp).
      const auto call = calls::CompleteAttempt::of(request, clock().now_ms());
      auto [out, wakes_feeds] = write_grouped(completion_groups_.get(), "complete_attempt", call);
      if (wakes_feeds) notifier_->appended(request.session_id, out.events);  // The children.
      return out;
    }
    // With claim_next: a2_complete_attempts with one completion, then the claim.
    auto many = complete_many("complete_attempt",
                              calls::CompleteAttempts::of(request, clock().now_ms()), 1, true);
    CompleteResult out = std::move(many.results.at(0));
    out.next = std::move(many.next);
    return out;
  }

  CompleteManyResult do_complete_attempts(const CompleteManyRequest& request) override {
    return complete_many("complete_attempts",
                         calls::CompleteAttempts::of(request, clock().now_ms()),
                         request.completions.size(), request.claim_next.has_value());
  }

  // docs/semantics.md#complete_in_sessions: one call of a2_complete_attempts_group; when the
  // server rolls it back (a request was refused: nothing of it changed), each request alone, by
  // the same deadline, so that each gets its own answer.
  std::vector<CompleteManyOutcome> do_complete_in_sessions(
      const std::vector<CompleteManyRequest>& requests) override {
    constexpr std::string_view op = "complete_in_sessions";
    const std::int64_t now = clock().now_ms();
    const auto deadline = std::chrono::steady_clock::now() + pool_->settings().command_timeout;
    std::vector<calls::CompleteAttempts> each;
    each.reserve(requests.size());
    for (const auto& q : requests) each.push_back(calls::CompleteAttempts::of(q, now));
    std::vector<CompleteManyOutcome> out(requests.size());
    const auto answer = [&](std::size_t i, GroupAnswer<CompleteManyResult> a) {
      try {
        out[i].result = checked_many(op, each[i], std::move(a), requests[i].completions.size(),
                                     requests[i].claim_next.has_value());
      } catch (const Error&) {
        out[i].error = std::current_exception();
      }
    };
    if (requests.size() > 1) {
      calls::CompleteAttemptsGroup group;
      for (const auto& call : each) group.requests.push_back(&call);
      try {
        auto answers = write_group(op, group, deadline);
        for (std::size_t i = 0; i < answers.size(); ++i) answer(i, std::move(answers[i]));
        return out;
      } catch (const GroupRolledBack&) {
      }
    }
    for (std::size_t i = 0; i < requests.size(); ++i) {
      try {
        answer(i, write_alone(op, each[i], deadline));
      } catch (const Error&) {
        out[i].error = std::current_exception();
      }
    }
    return out;
  }

  FailResult do_fail_attempt(const FailRequest& request) override {
    return write(
        "fail_attempt",
        calls::FailAttempt{request.session_id, request.index, request.attempt, request.error,
                           request.max_failures, clock().now_ms(), request.retry_at_ms});
  }

  std::vector<StoredEvent> do_dead_letters(const std::string& s) override {
    return pool_->run("dead_letters", [&](Executor& x) {
      return stored_events_of(x.exec(a2::detail::sql::kDeadLetters, s));
    });
  }

  RedriveResult do_redrive(const RedriveRequest& request) override {
    return write("redrive",
                 calls::Redrive{request.session_id, request.index,
                                std::string(to_string(request.action)), clock().now_ms()});
  }

  StateResult do_read_state(const std::string& s, const std::string& reducer,
                            const StateOptions& options) override {
    auto results =
        read_states("read_state", reducer,
                    {StateRequest{s, options.through_index, options.snapshot_through_index}});
    return std::move(results.at(0));
  }

  std::vector<StateResult> do_read_states(const std::string& reducer,
                                          const std::vector<StateRequest>& requests) override {
    return read_states("read_states", reducer, requests);
  }

  void do_put_snapshots(const std::string& s, const std::string& reducer,
                        std::vector<SnapshotWrite> writes) override {
    write("put_snapshots", calls::PutSnapshots::of(s, reducer, clock().now_ms(), writes));
  }

  ClearResult do_clear(const ClearRequest& request) override {
    calls::Clear call{request.session_id, clock().now_ms(), request.if_last_index,
                      std::nullopt,       std::nullopt,     draw_marker_id("clear"),
                      clear_event_type_};
    if (request.cause) {
      call.cause_index = request.cause->index;
      call.cause_attempt = request.cause->attempt;
    }
    bool wakes_feeds = false;
    auto out = write("clear", call, &wakes_feeds);
    if (wakes_feeds) notifier_->written_unhanded(request.session_id);
    return out;
  }

  ReclaimResult do_reclaim(const std::string& s) override {
    return write("reclaim", calls::Reclaim{s, a2::detail::kReclaimBatchSize});
  }

  PresenceMap do_patch_presence(const std::string& s, const PresencePatch& patch) override {
    const std::int64_t now = clock().now_ms();
    // The function adds the ttl to now: at most 2^53-1 (time_after).
    const std::int64_t ttl = a2::detail::time_after(now, patch.ttl_ms) - now;
    return write("patch_presence",
                 calls::PatchPresence{s, patch.participant, &patch.state, ttl, now, std::nullopt});
  }

  std::unique_ptr<Feed> do_subscribe(const std::string& s, std::int64_t after_index) override {
    notifier_->start();
    return std::make_unique<detail::PostgresFeed>(pool_, notifier_, s, after_index, safety_poll_);
  }

  PresenceMap do_read_presence(const std::string& s) override {
    auto now = clock().now_ms();
    return pool_->run("read_presence", [&](Executor& x) {
      auto rows = x.exec(a2::detail::sql::kReadPresence, s, now);
      return a2::detail::parse_stored_json(rows.at(0)[0].c_str(), a2::detail::kEnvelopeLevels)
          .get<PresenceMap>();
    });
  }

  void do_close() override {
    // Queued writes fail at once, unsent.
    if (append_groups_) append_groups_->close();
    if (claim_groups_) claim_groups_->close();
    if (completion_groups_) completion_groups_->close();
    if (complete_attempts_groups_) complete_attempts_groups_->close();
    wakes_->stop();  // Sends what is queued first.
    notifier_->stop();
    pool_->close();
  }

 private:
  // One call of a write function through its typed caller (src/postgres/calls/): one round
  // trip in autocommit. Should decoding fail after the function committed, the change has
  // happened: the caller hears outcome unknown, never a plain failure. The wake-ups the write
  // owes (r_wake) are queued for the notifier once it committed, and this store's own feeds of
  // the session are woken at once (Notifier::written); the caller does not wait. With
  // `wakes_feeds` the caller wakes them itself when it is set: handing the new events over
  // (Notifier::appended: appends and completions), or dropping what was handed
  // (Notifier::written_unhanded: clears).
  template <class Call>
  typename Call::Reply write(std::string_view op, const Call& call, bool* wakes_feeds = nullptr) {
    return write_by(op, std::chrono::steady_clock::now() + pool_->settings().command_timeout, call,
                    wakes_feeds);
  }

  // The same by a deadline of the caller's.
  template <class Call>
  typename Call::Reply write_by(std::string_view op, a2::detail::SteadyTime deadline,
                                const Call& call, bool* wakes_feeds = nullptr) {
    wakes_->start();  // Connected before this process's first write that owes a wake-up.
    return pool_->run_by(op, deadline, [&](Executor& x) {
      auto rows = call.exec(x);
      const std::string* unhanded = nullptr;  // The session whose feeds the caller wakes.
      if constexpr (requires { Call::kWakeColumn; }) {
        const int flags = wake_flags(rows, Call::kWakeColumn);
        if (flags & kWakeFeeds) {  // This store's feeds.
          if (wakes_feeds != nullptr) {
            *wakes_feeds = true;
            unhanded = &call.session_id;
          } else {
            notifier_->written(call.session_id);
          }
        }
        wakes_->add(call.session_id, flags);  // Everyone else's.
      }
      // The write committed: when its reply cannot be decoded, its feeds here still wake, and
      // read.
      auto wake_undecoded = [&] {
        if (unhanded != nullptr) notifier_->written_unhanded(*unhanded);
      };
      try {
        return Call::decode(rows);
      } catch (const Error&) {
        wake_undecoded();
        throw;
      } catch (const std::exception& e) {
        wake_undecoded();
        throw_unreadable_reply(op, e.what());
      }
    });
  }

  // Write groups (postgres/write_groups.hpp) of one kind, writing `in_flight` (default: the
  // pool size) at once; null with 0.
  template <class Group>
  std::unique_ptr<WriteGroups<Group>> make_groups(std::string op,
                                                  std::optional<std::size_t> in_flight,
                                                  std::size_t pool_size) {
    const std::size_t places = in_flight.value_or(pool_size);
    if (places == 0) return nullptr;
    using One = typename Group::One;
    using Answer = typename WriteGroups<Group>::Answer;
    return std::make_unique<WriteGroups<Group>>(
        op, places, pool_->settings().pool_acquire_timeout,
        [this](const One& call, a2::detail::SteadyTime deadline, std::string_view caller_op) {
          return write_alone(caller_op, call, deadline);
        },
        [this, op](const Group& call, a2::detail::SteadyTime deadline) -> std::vector<Answer> {
          return write_group(op, call, deadline);
        });
  }

  // A request of a write group's kind as its own call.
  template <class Call>
  GroupAnswer<typename Call::Reply> write_alone(std::string_view op, const Call& call,
                                                a2::detail::SteadyTime deadline) {
    GroupAnswer<typename Call::Reply> out;
    out.reply = write_by(op, deadline, call, &out.wakes_feeds);
    return out;
  }

  // A request of a write group's kind, by the store's command_timeout: through `groups` when the
  // store has groups of that kind, else as its own call.
  template <class Group>
  typename WriteGroups<Group>::Answer write_grouped(WriteGroups<Group>* groups, std::string_view op,
                                                    const typename Group::One& call) {
    const auto deadline = std::chrono::steady_clock::now() + pool_->settings().command_timeout;
    return groups ? groups->write(call, deadline, op) : write_alone(op, call, deadline);
  }

  // The requests of a write group in one call (a2_append_group, a2_claim_group,
  // a2_complete_group), as write_by() does for one: each request's wake-ups queued for the
  // notifier, its feeds here left to its caller. When the server rejects the call (an SQL error:
  // the transaction rolled back, nothing changed) it throws GroupRolledBack, so that each
  // request goes alone and gets its own answer. Should the reply be unreadable after the call
  // committed, every request's feeds here wake and read, and every caller hears outcome unknown.
  template <class Group>
  std::vector<GroupAnswer<typename Group::One::Reply>> write_group(
      std::string_view op, const Group& call, a2::detail::SteadyTime deadline) {
    wakes_->start();
    bool rejected = false;
    try {
      return pool_->run_by(op, deadline, [&](Executor& x) {
        auto rows = [&] {
          try {
            return call.exec(x);
          } catch (const pqxx::sql_error&) {
            rejected = true;
            throw;
          }
        }();
        typename Group::Reply parts;
        try {
          parts = call.decode(rows);
        } catch (const std::exception& e) {
          for (const auto* r : call.requests) notifier_->written_unhanded(r->session_id);
          throw_unreadable_reply(op, e.what());
        }
        std::vector<GroupAnswer<typename Group::One::Reply>> out;
        out.reserve(parts.size());
        for (std::size_t i = 0; i < parts.size(); ++i) {
          wakes_->add(call.requests[i]->session_id, parts[i].wake);  // Everyone else's.
          out.push_back({std::move(parts[i].reply), (parts[i].wake & kWakeFeeds) != 0});
        }
        return out;
      });
    } catch (const Error&) {
      if (rejected) throw GroupRolledBack{};
      throw;
    }
  }

  // a2_complete_attempts, whose reply must hold one result per completion and the claim when
  // one was asked for (else it is unreadable: outcome unknown, as any undecodable write reply).
  CompleteManyResult complete_many(std::string_view op, const calls::CompleteAttempts& call,
                                   std::size_t completions, bool claim_next) {
    // It may go in one call with other callers' (postgres/write_groups.hpp).
    return checked_many(op, call, write_grouped(complete_attempts_groups_.get(), op, call),
                        completions, claim_next);
  }

  // The answer of `call` checked as complete_many() says, its children handed to the feeds.
  CompleteManyResult checked_many(std::string_view op, const calls::CompleteAttempts& call,
                                  GroupAnswer<CompleteManyResult> answer, std::size_t completions,
                                  bool claim_next) {
    auto& [out, wakes_feeds] = answer;
    if (out.results.size() != completions || out.next.has_value() != claim_next) {
      if (wakes_feeds) notifier_->written_unhanded(call.session_id);  // It committed.
      throw_unreadable_reply(op, "the reply has " + std::to_string(out.results.size()) +
                                     " completion results for " + std::to_string(completions) +
                                     (out.next ? " and a claim" : " and no claim"));
    }
    if (wakes_feeds)  // The children, completion by completion.
      for (const auto& result : out.results) notifier_->appended(call.session_id, result.events);
    return std::move(out);
  }

  std::vector<StateResult> read_states(std::string_view op, const std::string& reducer,
                                       const std::vector<StateRequest>& requests) {
    Json list = Json::array();
    for (std::size_t i = 0; i < requests.size(); ++i)
      list.push_back(
          {{"position", i},
           {"s", requests[i].session_id},
           {"through", requests[i].through_index ? Json(*requests[i].through_index) : Json()},
           {"snap", requests[i].snapshot_through_index ? Json(*requests[i].snapshot_through_index)
                                                       : Json()}});
    return pool_->run(op, [&](Executor& x) {
      auto rows = x.exec(a2::detail::sql::kReadStates, a2::detail::json_text(list), reducer);
      // position, row_order, head_index, snapshot_index, snapshot_state, clear_index, then the
      // event columns (null on a header row).
      constexpr Result::size_type kEvent = 6;
      expect_columns(rows, 0,
                     {"position", "row_order", "head_index", "snapshot_index", "snapshot_state",
                      "clear_index"});
      expect_event_columns(rows, kEvent);
      std::vector<StateResult> out(requests.size());
      for (const auto& row : rows) {
        auto& result = out.at(row[0].as<std::size_t>());
        if (row[1].as<int>() == 0) {
          if (!row[2].is_null()) result.head_index = row[2].as<std::int64_t>();
          if (!row[3].is_null())
            result.snapshot = Checkpoint{
                row[3].as<std::int64_t>(),
                row[4].is_null() ? Json() : a2::detail::parse_stored_json(row[4].c_str())};
          auto clear_index = row[5].as<std::int64_t>();
          if (clear_index > 0) result.clear_index = clear_index;
        } else {
          result.events.push_back(event_from_row(row, kEvent));
        }
      }
      return out;
    });
  }

  std::shared_ptr<ConnectionPool> pool_;
  std::shared_ptr<WakeSender> wakes_;  // The wake-ups of this store's writes (before notifier_).
  std::shared_ptr<Notifier> notifier_;
  std::chrono::milliseconds safety_poll_;
  std::string clear_event_type_;
  // Write groups (null with 0): appends, claims, completions.
  std::unique_ptr<WriteGroups<calls::AppendGroup>> append_groups_;
  std::unique_ptr<WriteGroups<calls::ClaimGroup>> claim_groups_;
  std::unique_ptr<WriteGroups<calls::CompleteGroup>> completion_groups_;
  // complete_attempts, and complete_attempt with claim_next.
  std::unique_ptr<WriteGroups<calls::CompleteAttemptsGroup>> complete_attempts_groups_;
};

}  // namespace

std::unique_ptr<Store> open(const Options& options) {
  if (!plain_identifier(options.schema))
    throw InvalidArgument("a2 postgres open: schema " + a2::detail::quote_arg(options.schema) +
                          " must be a plain identifier: [a-z_][a-z0-9_]*, at most 63 bytes");
  if (options.pool_size < 1) throw InvalidArgument("a2 postgres open: pool_size must be >= 1");
  if (options.append_groups.value_or(0) > kMaxWriteGroups ||
      options.work_groups.value_or(0) > kMaxWriteGroups)
    throw InvalidArgument("a2 postgres open: append_groups and work_groups must be <= " +
                          std::to_string(kMaxWriteGroups));
  a2::detail::check_clear_event_type("postgres open", options.clear_event_type);
  if (options.statement_timeout.count() < 0)
    throw InvalidArgument("a2 postgres open: statement_timeout must be >= 0");
  if ((options.command_timeout && options.command_timeout->count() <= 0) ||
      (options.pool_acquire_timeout && options.pool_acquire_timeout->count() <= 0))
    throw InvalidArgument("a2 postgres open: command_timeout and pool_acquire_timeout must be > 0");
  a2::detail::check_spin_wait("postgres open", options.spin_wait);
  const auto command_timeout = options.command_timeout.value_or(
      std::chrono::milliseconds(options.statement_timeout.count() > 0
                                    ? options.statement_timeout.count() + kCommandTimeoutMargin
                                    : kDefaultCommandTimeout));
  auto pool = std::make_shared<ConnectionPool>(detail::Settings{
      .connection = options.connection,
      .schema = options.schema,
      .pool_size = options.pool_size,
      .statement_timeout = options.statement_timeout,
      .command_timeout = command_timeout,
      .pool_acquire_timeout = options.pool_acquire_timeout.value_or(command_timeout),
      .spin_wait = options.spin_wait});
  // A first connection creates the schema and applies schema.sql under an advisory lock
  // (concurrent opens of one schema take turns), then checks the version; it then joins the pool.
  // Connecting counts against the command timeout; applying the schema does not (it may wait
  // for a concurrent open).
  std::unique_ptr<detail::Connection> conn;
  try {
    conn = pool->connect(std::chrono::steady_clock::now() + command_timeout);
    pqxx::work tx(conn->get());
    tx.exec_params("select pg_advisory_xact_lock(hashtext('a2 schema ' || $1))", options.schema);
    tx.exec("create schema if not exists \"" + options.schema + "\"");
    // schema.sql runs only when the schema was not set up by this exact text before: re-creating
    // ~30 functions on every start costs a start ~100 ms of DDL and every connection of every
    // process its cached plans. The mark is the comment on a2_schema_version
    // (docs/postgres-layout.md#schema).
    const std::string mark = schema_mark(a2::detail::sql::kSchema.text);
    const auto current =
        tx.exec("select obj_description(to_regclass('a2_schema_version'), 'pg_class')")[0][0];
    if (current.is_null() || current.c_str() != mark) {
      tx.exec(std::string(a2::detail::sql::kSchema.text));
      tx.exec("comment on table a2_schema_version is " + tx.quote(mark));
    }
    auto version = tx.exec("select max(version) from a2_schema_version")[0][0].as<int>();
    if (version != kSchemaVersion)
      throw Unavailable("a2 postgres open: schema '" + options.schema + "' has version " +
                        std::to_string(version) + "; this library supports version " +
                        std::to_string(kSchemaVersion));
    tx.commit();
  } catch (...) {
    detail::translate_current_exception("open", false);
  }
  pool->adopt(std::move(conn));
  return std::make_unique<PostgresStore>(options, std::move(pool));
}

}  // namespace a2::postgres
