// SPDX-License-Identifier: MIT
// The hooks (docs/observe.md, rules O1..O9): every operation of every backend reports its name,
// outcome, round trips and work transitions to the Observer of Options::observe.

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "support/recorder.hpp"
#include "support/support.hpp"

namespace a2::conformance {
namespace {

struct Observed {
  std::shared_ptr<Recorder> recorder = std::make_shared<Recorder>();
  Fixture f;
  explicit Observed(std::chrono::milliseconds slow = std::chrono::milliseconds(60000))
      : f(fresh(StoreSettings{.observe = {.observer = recorder, .slow_operation = slow}})) {}
};

bool server() { return backend().name() != "memory"; }

std::vector<std::string> names(const std::vector<SeenOperation>& ops, const std::string& session) {
  std::vector<std::string> out;
  for (const auto& o : ops)
    if (o.session_id == session) out.push_back(o.operation);
  return out;
}

// Every operation once on `s`, all succeeding (outcome "ok" or a verdict).
void every_operation(Store& store, ManualClock& clock, const std::string& s) {
  (void)store.append(s, {ev(), ev()});
  (void)store.read(s);
  (void)store.read_history(s);
  (void)store.read_range(s, 0);
  (void)store.read_tail(s, 1);
  (void)store.read_events(s, 0);
  (void)store.read_feed_page(s, 0);
  auto c = store.claim_available({.session_id = s, .holder = "w", .ttl_ms = kTtl});
  REQUIRE(c.verdict == ClaimVerdict::claimed);
  (void)store.renew_claims(
      {.session_id = s, .holder = "w", .claims = {{1, 1}, {2, 1}}, .ttl_ms = kTtl});
  (void)store.held_claims(s, "w");
  (void)store.head(s);
  (void)store.complete_attempt({.session_id = s, .index = 1, .attempt = 1});
  (void)store.release_claims({.session_id = s, .holder = "w", .claims = {{2, 1}}});
  c = store.claim_available({.session_id = s, .holder = "w", .ttl_ms = kTtl});
  (void)store.complete_attempts({.session_id = s, .completions = {{.index = 2, .attempt = 2}}});
  (void)store.append(s, {ev()});
  c = store.claim_available({.session_id = s, .holder = "w", .ttl_ms = kTtl});
  (void)store.fail_attempt({.session_id = s, .index = 3, .attempt = 1, .max_failures = 1});
  (void)store.dead_letters(s);
  (void)store.redrive({.session_id = s, .index = 3, .action = RedriveAction::skip});
  (void)store.read_state(s, "r");
  store.put_snapshots(s, "r", {{.index = 1, .state = Json::object(), .pin_event_indexes = {}}});
  (void)store.patch_presence(s, {.participant = "p", .state = Json(1), .ttl_ms = 1000});
  (void)store.read_presence(s);
  (void)store.inspect_session(s);
  (void)store.subscribe(s);
  (void)store.clear({.session_id = s});
  (void)store.reclaim(s);
  clock.advance(1);
}

const std::vector<std::string> kSessionOperations = {"append",
                                                     "read",
                                                     "read_history",
                                                     "read_range",
                                                     "read_tail",
                                                     "read_events",
                                                     "read_feed_page",
                                                     "claim_available",
                                                     "renew_claims",
                                                     "held_claims",
                                                     "head",
                                                     "complete_attempt",
                                                     "release_claims",
                                                     "claim_available",
                                                     "complete_attempts",
                                                     "append",
                                                     "claim_available",
                                                     "fail_attempt",
                                                     "dead_letters",
                                                     "redrive",
                                                     "read_state",
                                                     "put_snapshots",
                                                     "patch_presence",
                                                     "read_presence",
                                                     "inspect_session",
                                                     "subscribe",
                                                     "clear",
                                                     "reclaim"};

TEST_CASE("every operation reports one record with its name, backend and session", "[O1][O2]") {
  Observed o;
  every_operation(*o.f, *o.f.clock, "s");
  (void)o.f->find_work();
  (void)o.f->sweep_work();
  (void)o.f->read_states("r", {{.session_id = "s"}});
  (void)o.f->list_sessions();
  { auto watch = o.f->watch_work({.sweep_interval = std::chrono::milliseconds(0)}); }
  auto ops = o.recorder->operations();
  REQUIRE(names(ops, "s") == kSessionOperations);
  std::vector<std::string> sessionless;
  for (const auto& r : ops) {
    REQUIRE(r.backend == backend().name());
    REQUIRE_FALSE(r.error.has_value());
    REQUIRE(r.duration.count() >= 0);
    if (r.session_id.empty()) sessionless.push_back(r.operation);
  }
  REQUIRE(sessionless ==
          std::vector<std::string>{"find_work", "sweep_work", "read_states", "list_sessions",
                                   "watch_work"});
  for (const auto& l : o.recorder->logs())  // Script loads maybe; no slow operation at 60 s.
    REQUIRE(l.event != "slow_operation");
}

TEST_CASE("outcomes are ok, the verdict words, or the error code's word", "[O3]") {
  Observed o;
  auto& store = *o.f;
  auto outcome = [&] { return o.recorder->last().outcome; };
  (void)store.append("s", {ev(), ev()});
  REQUIRE(outcome() == "ok");
  (void)store.claim_available({.session_id = "s", .holder = "w", .ttl_ms = kTtl, .max_events = 1});
  REQUIRE(outcome() == "claimed");
  (void)store.claim_available(
      {.session_id = "s", .holder = "w", .ttl_ms = kTtl, .exclude_indexes = {2}});
  REQUIRE(outcome() == "busy");
  (void)store.claim_available({.session_id = "t", .holder = "w", .ttl_ms = kTtl});
  REQUIRE(outcome() == "settled");
  (void)store.complete_attempt({.session_id = "s", .index = 1, .attempt = 1});
  REQUIRE(outcome() == "completed");
  (void)store.complete_attempt({.session_id = "s", .index = 2, .attempt = 7});
  REQUIRE(outcome() == "superseded");
  (void)store.claim_available({.session_id = "s", .holder = "w", .ttl_ms = kTtl});
  (void)store.fail_attempt({.session_id = "s", .index = 2, .attempt = 1, .max_failures = 2});
  REQUIRE(outcome() == "failed");
  (void)store.claim_available({.session_id = "s", .holder = "w", .ttl_ms = kTtl});
  (void)store.fail_attempt({.session_id = "s", .index = 2, .attempt = 2, .max_failures = 2});
  REQUIRE(outcome() == "dead_lettered");
  (void)store.redrive({.session_id = "s", .index = 2, .action = RedriveAction::retry});
  REQUIRE(outcome() == "redriven");
  (void)store.redrive({.session_id = "s", .index = 2, .action = RedriveAction::retry});
  REQUIRE(outcome() == "not_redriven");
  (void)store.clear({.session_id = "s", .if_last_index = 1});
  REQUIRE(outcome() == "not_cleared");
  (void)store.clear({.session_id = "s"});
  REQUIRE(outcome() == "cleared");

  // Errors: the code's word, the code, and whether the outcome is known.
  REQUIRE_THROWS_AS(store.append("", {ev()}), InvalidArgument);
  auto r = o.recorder->last();
  REQUIRE(r.operation == "append");
  REQUIRE(r.outcome == "invalid_argument");
  REQUIRE(r.error == ErrorCode::invalid_argument);
  REQUIRE(r.round_trips == 0);  // Refused before any I/O.
  REQUIRE_THROWS_AS(store.head(""), InvalidArgument);
  REQUIRE(o.recorder->last().operation == "head");
  REQUIRE(o.recorder->last().outcome == "invalid_argument");
  (void)store.append("u", {ev_id("a")});
  REQUIRE_THROWS_AS(store.append("u", {ev_id("a"), ev_id("b")}), PartialDuplicateBatch);
  REQUIRE(o.recorder->last().outcome == "partial_duplicate_batch");
  (void)store.claim_available({.session_id = "u", .holder = "w", .ttl_ms = kTtl});
  REQUIRE_THROWS_AS(store.append("u", {caused(ev(), 1, 2)}), SupersededAttempt);
  REQUIRE(o.recorder->last().outcome == "superseded_attempt");
  store.close();
  REQUIRE_THROWS_AS(store.head("s"), Unavailable);
  r = o.recorder->last();
  REQUIRE(r.outcome == "store_unavailable");
  REQUIRE(r.error == ErrorCode::store_unavailable);
  REQUIRE_FALSE(r.outcome_unknown);
}

TEST_CASE("round trips: none on memory, one per single-script write on servers", "[O4]") {
  Observed o;
  every_operation(*o.f, *o.f.clock, "warm");  // Scripts loaded, connections open.
  o.recorder->clear();
  every_operation(*o.f, *o.f.clock, "s");
  auto ops = o.recorder->operations();
  REQUIRE(ops.size() == kSessionOperations.size());
  for (const auto& r : ops) {
    INFO(r.operation);
    if (!server()) {
      REQUIRE(r.round_trips == 0);
    } else if (r.operation == "append" || r.operation == "claim_available" ||
               r.operation == "complete_attempt" || r.operation == "complete_attempts" ||
               r.operation == "fail_attempt" || r.operation == "release_claims" ||
               r.operation == "renew_claims" || r.operation == "redrive" ||
               r.operation == "clear") {
      REQUIRE(r.round_trips == 1);
    } else if (r.operation != "subscribe") {
      REQUIRE(r.round_trips >= 1);
    }
  }
}

// S136, S137: the write that recognises a replay returns its rows; nothing is read after it.
TEST_CASE("replays are answered by their write: one round trip, the rows as stored",
          "[O4][append][complete][S136][S137]") {
  Observed o;
  Store& st = *o.f;
  (void)st.append("s", {ev_id("a"), ev_id("b"), ev_id("c")});
  REQUIRE(claim(st).events.size() == 3);
  REQUIRE(complete(st, "s", 1, 1, {child("k1"), child("k2")}).verdict ==
          CompleteVerdict::completed);
  REQUIRE(st.complete_attempts({.session_id = "s", .completions = {{2, 1, {child("k3")}}}})
              .results.at(0)
              .verdict == CompleteVerdict::completed);
  o.recorder->clear();

  auto again = st.append("s", {ev_id("a"), ev_id("b")});
  REQUIRE(indexes_of(again.events) == std::vector<std::int64_t>{1, 2});
  CHECK(again.events[0].processed_by_attempt == std::optional<std::int64_t>(1));
  CHECK(again.events[0].returned_event_ids ==
        std::optional<std::vector<std::string>>({"k1", "k2"}));
  CHECK(again.has_pending);
  auto replay = complete(st, "s", 1, 1, {child("k1"), child("k2")});
  REQUIRE(replay.verdict == CompleteVerdict::completed);
  REQUIRE(indexes_of(replay.events) == std::vector<std::int64_t>{4, 5});
  CHECK(replay.events[0].cause == std::optional<EventCause>(EventCause{1, 1}));
  CHECK(replay.events[0].attempt_count == 0);
  // With claim_next: the children as they were before the claim, which takes the first of them
  // (3 is still held by the first claim).
  auto next = st.complete_attempt({.session_id = "s",
                                   .index = 1,
                                   .attempt = 1,
                                   .events = {child("k1"), child("k2")},
                                   .claim_next = ClaimNext{.holder = "w", .ttl_ms = kTtl}});
  REQUIRE(next.verdict == CompleteVerdict::completed);
  REQUIRE(indexes_of(next.events) == std::vector<std::int64_t>{4, 5});
  CHECK(next.events[0].attempt_count == 0);
  REQUIRE(next.next.has_value());
  REQUIRE(indexes_of(next.next->events) == std::vector<std::int64_t>{4});
  auto batch = st.complete_attempts({.session_id = "s", .completions = {{2, 1, {child("k3")}}}});
  REQUIRE(batch.results.at(0).verdict == CompleteVerdict::completed);
  REQUIRE(indexes_of(batch.results[0].events) == std::vector<std::int64_t>{6});

  auto ops = o.recorder->operations();
  REQUIRE(ops.size() == 4);
  for (const auto& r : ops) {
    INFO(r.operation);
    CHECK(r.round_trips == (server() ? 1 : 0));
  }
}

TEST_CASE("work transitions are reported from the results", "[O5]") {
  Observed o;
  auto& store = *o.f;
  (void)store.append("s", {ev(), ev(), ev(), ev()});
  (void)store.claim_available({.session_id = "s", .holder = "w", .ttl_ms = kTtl, .max_events = 2});
  (void)store.complete_attempt(
      {.session_id = "s",
       .index = 1,
       .attempt = 1,
       .claim_next = ClaimNext{.holder = "w", .ttl_ms = kTtl, .max_events = 1}});  // Claims 3.
  (void)store.complete_attempts({.session_id = "s", .completions = {{.index = 3, .attempt = 1}}});
  (void)store.release_claims({.session_id = "s", .holder = "w", .claims = {{2, 1}}});
  (void)store.claim_available({.session_id = "s", .holder = "w", .ttl_ms = kTtl, .max_events = 1});
  (void)store.fail_attempt({.session_id = "s", .index = 2, .attempt = 2, .max_failures = 5});
  o.f.clock->advance(1);
  (void)store.claim_available({.session_id = "s", .holder = "w", .ttl_ms = kTtl, .max_events = 1});
  (void)store.fail_attempt({.session_id = "s", .index = 2, .attempt = 3, .max_failures = 1});
  (void)store.redrive({.session_id = "s", .index = 2, .action = RedriveAction::retry});
  (void)store.claim_available({.session_id = "s", .holder = "w", .ttl_ms = kTtl, .max_events = 1});
  o.f.clock->advance(kTtl + 1);  // The lease of 2 (attempt 4) lapses; another worker takes it.
  (void)store.claim_available({.session_id = "s", .holder = "x", .ttl_ms = kTtl, .max_events = 1});
  (void)store.renew_claims({.session_id = "s", .holder = "w", .claims = {{2, 4}}, .ttl_ms = kTtl});

  using W = WorkTransition;
  std::vector<std::tuple<W, std::int64_t, std::int64_t>> seen;
  for (const auto& w : o.recorder->work()) {
    REQUIRE(w.backend == backend().name());
    REQUIRE(w.session_id == "s");
    seen.emplace_back(w.transition, w.index, w.attempt);
  }
  REQUIRE(seen == std::vector<std::tuple<W, std::int64_t, std::int64_t>>{{W::claimed, 1, 1},
                                                                         {W::claimed, 2, 1},
                                                                         {W::completed, 1, 1},
                                                                         {W::claimed, 3, 1},
                                                                         {W::completed, 3, 1},
                                                                         {W::released, 2, 1},
                                                                         {W::claimed, 2, 2},
                                                                         {W::failed, 2, 2},
                                                                         {W::claimed, 2, 3},
                                                                         {W::dead_lettered, 2, 3},
                                                                         {W::redriven, 2, 0},
                                                                         {W::claimed, 2, 4},
                                                                         {W::claimed, 2, 5},
                                                                         {W::lease_lost, 2, 4}});
}

TEST_CASE("an operation at or over the threshold is logged as slow_operation", "[O6]") {
  Observed o(std::chrono::milliseconds(0));
  (void)o.f->append("s", {ev()});
  REQUIRE_THROWS_AS(o.f->head(""), InvalidArgument);
  auto logs = o.recorder->logs();
  REQUIRE(logs.size() == 2);
  for (const auto& l : logs) {
    REQUIRE(l.event == "slow_operation");
    REQUIRE(l.level == LogLevel::warning);
    REQUIRE(l.backend == backend().name());
  }
  REQUIRE(logs[0].message.rfind("a2 " + backend().name() + " append: took ", 0) == 0);
  REQUIRE(logs[1].message.rfind("a2 " + backend().name() + " head: took ", 0) == 0);
}

TEST_CASE("without an observer nothing is reported and the store works unchanged", "[O7]") {
  auto f = fresh();
  REQUIRE(f->observer() == nullptr);
  REQUIRE(f->backend() == backend().name());
  (void)f->append("s", {ev()});
  REQUIRE(f->head("s").head_index == 1);
  Observed o;
  REQUIRE(o.f->observer() == o.recorder);
}

}  // namespace
}  // namespace a2::conformance
