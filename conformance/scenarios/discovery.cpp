// SPDX-License-Identifier: MIT
// Conformance scenarios 183-196, 214 and 249 (docs/semantics.md#work-discovery-scenarios): the work
// index kept by every write (docs/semantics.md#work-discovery), find_work paging, watch_work
// signals, sweep_work and bad input. S197 is the model check (conformance/model/model_check.cpp).
//
// Each test uses session ids of its own (d<scenario>...), so that signals of one test can never
// be mistaken for another's on a server whose notification channel the stores share.

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "harness.hpp"
#include "support/bad_input.hpp"
#include "support/claims.hpp"
#include "support/lifecycle.hpp"
#include "support/support.hpp"
#include "support/work.hpp"

namespace a2::conformance {
namespace {

// S195: the index kept by a2's writes is never later than the work.
void require_nothing_to_sweep(Store& store) {
  auto swept = store.sweep_work();
  for (const auto& w : swept.indexed) INFO("swept " << w.session_id << " at " << w.at_ms);
  REQUIRE(swept.indexed.empty());
}

ChildEvent settled_child(std::string id) {
  ChildEvent c = child(std::move(id));
  c.settled = true;
  return c;
}

FailResult fail_retry(Store& store, const std::string& session, std::int64_t index,
                      std::int64_t attempt, std::optional<std::int64_t> retry_at_ms,
                      std::int64_t max_failures = 3) {
  return store.fail_attempt({.session_id = session,
                             .index = index,
                             .attempt = attempt,
                             .error = "boom",
                             .max_failures = max_failures,
                             .retry_at_ms = retry_at_ms});
}

ReleaseResult release(Store& store, const std::string& session, std::vector<ClaimRef> claims) {
  return store.release_claims({.session_id = session, .holder = "w1", .claims = std::move(claims)});
}

CompleteResult complete_next(Store& store, const std::string& session, std::int64_t index,
                             std::int64_t attempt, std::vector<ChildEvent> children = {},
                             std::int64_t max_events = 1) {
  return store.complete_attempt({.session_id = session,
                                 .index = index,
                                 .attempt = attempt,
                                 .events = std::move(children),
                                 .claim_next = ClaimNext{.holder = "w1",
                                                         .ttl_ms = kTtl,
                                                         .expires_at_ms = std::nullopt,
                                                         .max_events = max_events}});
}

// Waits on `watch` until every session of `expected` was reported or `limit` passed; returns how
// often each session was reported (REQUIREs that no single wait lists a session twice).
std::map<std::string, int> collect_signals(
    WorkWatch& watch, const std::set<std::string>& expected,
    std::chrono::milliseconds limit = std::chrono::seconds(5)) {
  std::map<std::string, int> seen;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  auto all_seen = [&] {
    for (const auto& s : expected)
      if (!seen.count(s)) return false;
    return true;
  };
  while (!all_seen() && std::chrono::steady_clock::now() < deadline) {
    auto signal = watch.wait(std::chrono::milliseconds(100));
    std::set<std::string> in_this_wait;
    for (const auto& s : signal.session_ids) {
      REQUIRE(in_this_wait.insert(s).second);  // Each once per wait.
      seen[s] += 1;
    }
  }
  return seen;
}

}  // namespace

// ---- the index rules (docs/semantics.md#work-discovery) --------------------------------------

TEST_CASE("find_work: an unsettled append indexes the session at now, a settled one does not",
          "[find_work][append][S183]") {
  auto f = fresh();
  REQUIRE(work_index(*f).empty());
  REQUIRE_FALSE(entry(*f, "d183").has_value());
  (void)f->append("d183", {ev()});
  REQUIRE(entry(*f, "d183") == kT0);
  f.clock->advance(5);
  (void)f->append("d183", {ev()});
  REQUIRE(entry(*f, "d183") == kT0);  // Lowered, never raised.
  (void)f->append("d183b", {settled(ev())});
  REQUIRE_FALSE(entry(*f, "d183b").has_value());
  (void)f->append("d183", {});
  (void)f->append("d183b", {});
  (void)f->append("d183c", {});
  REQUIRE(work_index(*f) == Index{{"d183", kT0}});
  require_nothing_to_sweep(*f);
}

TEST_CASE("find_work: scheduled work indexes the session at its available_at",
          "[find_work][append][delayed][S184]") {
  auto f = fresh();
  (void)f->append("d184", {at(ev(), kT0 + 1000)});
  REQUIRE(entry(*f, "d184") == kT0 + 1000);
  require_nothing_to_sweep(*f);
  f.clock->advance(10);
  (void)f->append("d184", {ev()});
  REQUIRE(entry(*f, "d184") == kT0 + 10);
  // A batch indexes at its earliest unsettled event; settled events do not count.
  (void)f->append("d184b", {settled(ev()), at(ev(), kT0 + 700), at(ev(), kT0 + 500)});
  REQUIRE(entry(*f, "d184b") == kT0 + 500);
  require_nothing_to_sweep(*f);
}

TEST_CASE("find_work: a claim sets the time the next claim can succeed",
          "[find_work][claim][S185]") {
  auto f = fresh();
  SECTION("claimed: the lease end, or an earlier delayed event") {
    (void)f->append("d185a", {ev()});
    REQUIRE(claimed(claim(*f, "d185a")) == std::vector<std::int64_t>{1});
    REQUIRE(entry(*f, "d185a") == kT0 + kTtl);
    (void)f->append("d185b", {ev(), at(ev(), kT0 + 10000)});
    REQUIRE(claimed(claim(*f, "d185b")) == std::vector<std::int64_t>{1});
    REQUIRE(entry(*f, "d185b") == kT0 + 10000);
    require_nothing_to_sweep(*f);
  }
  SECTION("busy: retry_at; settled: removed") {
    (void)f->append("d185c", {ev()});
    REQUIRE(claimed(claim_max(*f, 1, "w1", {}, "d185c")) == std::vector<std::int64_t>{1});
    REQUIRE(entry(*f, "d185c") == kT0);  // It stopped at max_events: lowered to now.
    f.clock->advance(100);
    require_busy(claim(*f, "d185c"), kT0 + kTtl);
    REQUIRE(entry(*f, "d185c") == kT0 + kTtl);
    require_nothing_to_sweep(*f);
    REQUIRE(complete(*f, "d185c", 1, 1).verdict == CompleteVerdict::completed);
    REQUIRE(entry(*f, "d185c") == kT0 + kTtl);  // Stale.
    REQUIRE(claim(*f, "d185c").verdict == ClaimVerdict::settled);
    REQUIRE_FALSE(entry(*f, "d185c").has_value());
    require_nothing_to_sweep(*f);
  }
}

TEST_CASE(
    "find_work: a claim stopped by max_events lowers to now; one with exclusions changes "
    "nothing",
    "[find_work][claim][S186]") {
  auto f = fresh();
  SECTION("max_events") {
    (void)f->append("d186a", evs(3));
    f.clock->advance(100);
    REQUIRE(claimed(claim_max(*f, 2, "w1", {}, "d186a")) == std::vector<std::int64_t>{1, 2});
    REQUIRE(entry(*f, "d186a") == kT0);  // Not the lease end: the rest was not looked at.
    f.clock->advance(100);
    // Fewer than max_events: the exact time, the earliest lease end of 1..3.
    REQUIRE(claimed(claim_max(*f, 5, "w1", {}, "d186a")) == std::vector<std::int64_t>{3});
    REQUIRE(entry(*f, "d186a") == kT0 + 100 + kTtl);
    require_nothing_to_sweep(*f);
  }
  SECTION("exclude_indexes") {
    (void)f->append("d186b", evs(2));
    REQUIRE(claimed(claim(*f, "d186b", "w1", {2})) == std::vector<std::int64_t>{1});
    REQUIRE(entry(*f, "d186b") == kT0);
    REQUIRE(claim(*f, "d186b", "w1", {1, 2}).verdict == ClaimVerdict::settled);
    REQUIRE(entry(*f, "d186b") == kT0);  // Not removed.
    require_busy(claim(*f, "d186b", "w1", {2}), kT0 + kTtl);
    REQUIRE(entry(*f, "d186b") == kT0);
    REQUIRE(claimed(claim(*f, "d186b")) == std::vector<std::int64_t>{2});
    REQUIRE(entry(*f, "d186b") == kT0 + kTtl);
    require_nothing_to_sweep(*f);
  }
}

TEST_CASE("find_work: a completion lowers the entry only for new ready work",
          "[find_work][complete][S187]") {
  auto f = fresh();
  const std::int64_t t1 = kT0 + 100;
  for (const char* s : {"d187a", "d187b", "d187c", "d187e"}) {
    (void)f->append(s, {ev()});
    REQUIRE(claimed(claim(*f, s)) == std::vector<std::int64_t>{1});
  }
  (void)f->append("d187d", {ev(), at(ev(), kT0 + 200)});
  REQUIRE(claimed(claim(*f, "d187d")) == std::vector<std::int64_t>{1});
  REQUIRE(entry(*f, "d187d") == kT0 + 200);
  f.clock->set(t1);

  REQUIRE(complete(*f, "d187a", 1, 1).verdict == CompleteVerdict::completed);
  REQUIRE(entry(*f, "d187a") == kT0 + kTtl);  // Stale: the next claim removes it.
  REQUIRE(claim(*f, "d187a").verdict == ClaimVerdict::settled);
  REQUIRE_FALSE(entry(*f, "d187a").has_value());

  REQUIRE(complete(*f, "d187b", 1, 1, {child("c187b")}).verdict == CompleteVerdict::completed);
  REQUIRE(entry(*f, "d187b") == t1);

  REQUIRE(complete(*f, "d187c", 1, 1, {at(child("c187c"), t1 + 500)}).verdict ==
          CompleteVerdict::completed);
  REQUIRE(entry(*f, "d187c") == t1 + 500);
  REQUIRE(complete(*f, "d187d", 1, 1, {at(child("c187d"), t1 + 500)}).verdict ==
          CompleteVerdict::completed);
  REQUIRE(entry(*f, "d187d") == kT0 + 200);  // min(entry, t1 + 500).

  REQUIRE(complete(*f, "d187e", 1, 1, {settled_child("c187e")}).verdict ==
          CompleteVerdict::completed);
  REQUIRE(entry(*f, "d187e") == kT0 + kTtl);
  require_nothing_to_sweep(*f);
}

TEST_CASE("find_work: a lane handoff lowers the entry to now", "[find_work][lane][S188]") {
  auto f = fresh();
  for (const char* s : {"d188a", "d188b"}) {
    (void)f->append(s, {in_lane(ev(), "L"), in_lane(ev(), "L")});
    REQUIRE(claimed(claim(*f, s)) == std::vector<std::int64_t>{1});
    REQUIRE(entry(*f, s) == kT0 + kTtl);
  }
  (void)f->append("d188c", {in_lane(ev(), "L")});
  REQUIRE(claimed(claim(*f, "d188c")) == std::vector<std::int64_t>{1});
  f.clock->advance(100);

  REQUIRE(complete(*f, "d188a", 1, 1).verdict == CompleteVerdict::completed);
  REQUIRE(entry(*f, "d188a") == kT0 + 100);
  REQUIRE(fail(*f, "d188b", 1, 1, 1).verdict == FailVerdict::dead_lettered);
  REQUIRE(entry(*f, "d188b") == kT0 + 100);
  REQUIRE(fail(*f, "d188c", 1, 1, 1).verdict == FailVerdict::dead_lettered);
  REQUIRE(entry(*f, "d188c") == kT0 + kTtl);
  require_nothing_to_sweep(*f);
}

// S249: complete_attempts applies its completions in list order, so a lane that a later
// completion of the call passes on reaches a delayed child an earlier one queued in it: a
// hand-off, to now. The other order is no hand-off: the child comes after the lane emptied.
TEST_CASE("find_work: a batch hands a lane to a child an earlier completion of it queued",
          "[find_work][lane][complete][S249]") {
  auto f = fresh();
  auto delayed = [](const std::string& id) {
    ChildEvent c = in_lane_child(id, "L");
    c.available_at_ms = kT0 + 5000;
    return c;
  };
  for (const char* s : {"d249a", "d249b"}) {
    (void)f->append(s, {ev(), in_lane(ev(), "L")});
    REQUIRE(claimed(claim(*f, s)) == std::vector<std::int64_t>{1, 2});
    REQUIRE(entry(*f, s) == kT0 + kTtl);
  }
  f.clock->advance(100);
  // 1 queues its child behind 2 in L, then 2 hands L to it.
  auto first = f->complete_attempts(
      {.session_id = "d249a", .completions = {{1, 1, {delayed("k-a")}}, {2, 1, {}}}});
  REQUIRE(first.results.at(0).verdict == CompleteVerdict::completed);
  REQUIRE(first.results.at(1).verdict == CompleteVerdict::completed);
  CHECK(entry(*f, "d249a") == kT0 + 100);
  // 2 empties L, then 1 queues its child at the lane's head: the child's own time.
  auto second = f->complete_attempts(
      {.session_id = "d249b", .completions = {{2, 1, {}}, {1, 1, {delayed("k-b")}}}});
  REQUIRE(second.results.at(0).verdict == CompleteVerdict::completed);
  REQUIRE(second.results.at(1).verdict == CompleteVerdict::completed);
  CHECK(entry(*f, "d249b") == kT0 + 5000);
  for (const char* s : {"d249a", "d249b"}) {
    auto rows = f->read(s);
    REQUIRE(rows.size() == 3);
    CHECK(rows[2].id == std::string(s == std::string("d249a") ? "k-a" : "k-b"));
    CHECK(rows[2].available_at == std::optional<std::int64_t>(kT0 + 5000));
  }
  require_nothing_to_sweep(*f);
}

TEST_CASE("find_work: failures and redrives lower the entry", "[find_work][fail][redrive][S189]") {
  auto f = fresh();
  for (const char* s : {"d189a", "d189b", "d189c", "d189d"}) {
    (void)f->append(s, {ev()});
    REQUIRE(claimed(claim(*f, s)) == std::vector<std::int64_t>{1});
  }
  f.clock->advance(100);
  REQUIRE(fail(*f, "d189a", 1, 1).verdict == FailVerdict::failed);
  REQUIRE(entry(*f, "d189a") == kT0 + 100);
  REQUIRE(fail_retry(*f, "d189b", 1, 1, kT0 + 5000).verdict == FailVerdict::failed);
  REQUIRE(entry(*f, "d189b") == kT0 + 5000);
  require_nothing_to_sweep(*f);

  for (const char* s : {"d189c", "d189d"}) {
    REQUIRE(fail(*f, s, 1, 1, 1).verdict == FailVerdict::dead_lettered);
    REQUIRE(entry(*f, s) == kT0 + kTtl);  // Unlaned: unchanged.
    REQUIRE(claim(*f, s).verdict == ClaimVerdict::settled);
    REQUIRE_FALSE(entry(*f, s).has_value());
  }
  f.clock->advance(100);
  REQUIRE(redrive(*f, "d189c", 1, RedriveAction::retry).redriven);
  REQUIRE(entry(*f, "d189c") == kT0 + 200);
  REQUIRE(redrive(*f, "d189d", 1, RedriveAction::skip).redriven);
  REQUIRE(entry(*f, "d189d") == kT0 + 200);
  require_nothing_to_sweep(*f);
}

TEST_CASE("find_work: a release of a live lease lowers the entry to now",
          "[find_work][release][S190]") {
  auto f = fresh();
  (void)f->append("d190", {ev()});
  REQUIRE(claimed(claim(*f, "d190")) == std::vector<std::int64_t>{1});
  f.clock->advance(100);
  REQUIRE(release(*f, "d190", {{1, 1}}).released == std::vector<std::int64_t>{1});
  REQUIRE(entry(*f, "d190") == kT0 + 100);
  REQUIRE(claimed(claim(*f, "d190")) == std::vector<std::int64_t>{1});
  REQUIRE(entry(*f, "d190") == kT0 + 100 + kTtl);
  REQUIRE(release(*f, "d190", {{1, 1}}).not_held == std::vector<std::int64_t>{1});
  REQUIRE(entry(*f, "d190") == kT0 + 100 + kTtl);
  require_nothing_to_sweep(*f);
}

TEST_CASE("find_work: a renewal that ends a lease sooner lowers the entry to the new end",
          "[find_work][renew][S214]") {
  auto f = fresh();
  (void)f->append("d214", {ev()});
  (void)f->append("d214m", {ev()});  // The marker session of the signal checks below.
  REQUIRE(claimed(claim(*f, "d214")) == std::vector<std::int64_t>{1});
  REQUIRE(entry(*f, "d214") == kT0 + kTtl);
  {  // Postgres sends wake-ups after commit: once a watch saw a marker written last, the
     // setup's signals went out before the watch below listens.
    auto drain = f->watch_work({.sweep_interval = std::chrono::milliseconds(0)});
    (void)f->append("d214z", {ev()});
    REQUIRE(collect_signals(*drain, {"d214z"}).count("d214z") == 1);
  }
  auto watch = f->watch_work({.sweep_interval = std::chrono::milliseconds(0)});
  f.clock->advance(100);
  // Renewed to end at T0 + 5000, before the entry: the event is claimable from then.
  REQUIRE(renew_until(*f, {{1, 1}}, kT0 + 5000, "w1", "d214").renewed ==
          std::vector<std::int64_t>{1});
  REQUIRE(entry(*f, "d214") == kT0 + 5000);
  REQUIRE(collect_signals(*watch, {"d214"}) == std::map<std::string, int>{{"d214", 1}});
  // Extended again: the entry stays (it is never later than the work), and nothing signals.
  REQUIRE(renew_until(*f, {{1, 1}}, kT0 + 60000, "w1", "d214").renewed ==
          std::vector<std::int64_t>{1});
  REQUIRE(entry(*f, "d214") == kT0 + 5000);
  (void)f->append("d214m", {ev()});  // Signals arrive in write order: the marker comes last.
  REQUIRE(collect_signals(*watch, {"d214m"}) == std::map<std::string, int>{{"d214m", 1}});
  require_nothing_to_sweep(*f);
}

TEST_CASE("find_work: clear removes the entry; an append after the marker indexes again",
          "[find_work][clear][reclaim][S191]") {
  auto f = fresh();
  (void)f->append("d191", evs(2));
  REQUIRE(claimed(claim(*f, "d191", "w1", {2})) == std::vector<std::int64_t>{1});
  REQUIRE(entry(*f, "d191") == kT0);
  REQUIRE(clear(*f, "d191").cleared);
  REQUIRE_FALSE(entry(*f, "d191").has_value());
  require_nothing_to_sweep(*f);
  (void)reclaim_all(*f, "d191");
  REQUIRE_FALSE(entry(*f, "d191").has_value());
  f.clock->advance(100);
  (void)f->append("d191", {ev()});
  REQUIRE(entry(*f, "d191") == kT0 + 100);
  require_nothing_to_sweep(*f);
}

TEST_CASE("find_work: claim_next follows the claim's rule", "[find_work][claim_next][S192]") {
  auto f = fresh();
  SECTION("the last event: settled removes the entry") {
    (void)f->append("d192a", {ev()});
    REQUIRE(claimed(claim(*f, "d192a")) == std::vector<std::int64_t>{1});
    f.clock->advance(100);
    auto r = complete_next(*f, "d192a", 1, 1);
    REQUIRE(r.next->verdict == ClaimVerdict::settled);
    REQUIRE_FALSE(entry(*f, "d192a").has_value());
  }
  SECTION("another held event: its lease end") {
    (void)f->append("d192b", evs(2));
    REQUIRE(claimed(claim_max(*f, 1, "w1", {}, "d192b")) == std::vector<std::int64_t>{1});
    f.clock->advance(50);
    REQUIRE(claimed(claim_max(*f, 1, "w2", {}, "d192b")) == std::vector<std::int64_t>{2});
    f.clock->advance(50);
    auto r = complete_next(*f, "d192b", 1, 1);
    require_busy(*r.next, kT0 + 50 + kTtl);
    REQUIRE(entry(*f, "d192b") == kT0 + 50 + kTtl);
  }
  SECTION("an unlaned child is claimed: the new lease end") {
    (void)f->append("d192c", {ev()});
    REQUIRE(claimed(claim(*f, "d192c")) == std::vector<std::int64_t>{1});
    f.clock->advance(100);
    // max_events 2, so the claim saw everything (one claimed, fewer than the bound).
    auto r = complete_next(*f, "d192c", 1, 1, {child("c192c")}, 2);
    REQUIRE(claimed(*r.next) == std::vector<std::int64_t>{2});
    REQUIRE(entry(*f, "d192c") == kT0 + 100 + kTtl);
  }
  require_nothing_to_sweep(*f);
}

// ---- find_work paging (docs/semantics.md#find_work) -------------------------------------------

TEST_CASE("find_work pages in (at_ms, session id) order after an exclusive cursor",
          "[find_work][S193]") {
  auto f = fresh();
  REQUIRE(f->find_work().sessions.empty());
  REQUIRE_FALSE(f->find_work().next.has_value());
  (void)f->append("d193b", {ev()});
  (void)f->append("d193a", {ev()});
  f.clock->advance(1);
  (void)f->append("d193c", {ev()});
  f.clock->advance(1);
  (void)f->append("d193d", {ev()});
  (void)f->append("d193e", {at(ev(), kT0 + 9000)});
  using Page = std::vector<std::pair<std::string, std::int64_t>>;
  auto sessions = [](const WorkPage& p) {
    Page out;
    for (const auto& w : p.sessions) out.emplace_back(w.session_id, w.at_ms);
    return out;
  };
  auto cursor = [](const WorkPage& p) {
    REQUIRE(p.next.has_value());
    return std::make_pair(p.next->session_id, p.next->at_ms);
  };

  auto p1 = f->find_work({.after = std::nullopt, .due_by_ms = std::nullopt, .limit = 2});
  REQUIRE(sessions(p1) == Page{{"d193a", kT0}, {"d193b", kT0}});
  REQUIRE(cursor(p1) == std::make_pair(std::string("d193b"), kT0));
  auto p2 = f->find_work({.after = p1.next, .due_by_ms = std::nullopt, .limit = 2});
  REQUIRE(sessions(p2) == Page{{"d193c", kT0 + 1}, {"d193d", kT0 + 2}});
  REQUIRE(cursor(p2) == std::make_pair(std::string("d193d"), kT0 + 2));
  auto p3 = f->find_work({.after = p2.next, .due_by_ms = std::nullopt, .limit = 2});
  REQUIRE(sessions(p3) == Page{{"d193e", kT0 + 9000}});
  REQUIRE_FALSE(p3.next.has_value());

  auto due = f->find_work({.after = std::nullopt, .due_by_ms = kT0 + 1, .limit = 256});
  REQUIRE(sessions(due) == Page{{"d193a", kT0}, {"d193b", kT0}, {"d193c", kT0 + 1}});
  REQUIRE_FALSE(due.next.has_value());
  auto due_full = f->find_work({.after = std::nullopt, .due_by_ms = kT0 + 1, .limit = 3});
  REQUIRE(sessions(due_full).size() == 3);
  REQUIRE(cursor(due_full) == std::make_pair(std::string("d193c"), kT0 + 1));
  auto due_after = f->find_work({.after = due_full.next, .due_by_ms = kT0 + 1, .limit = 3});
  REQUIRE(sessions(due_after).empty());
  REQUIRE_FALSE(due_after.next.has_value());

  auto from_a =
      f->find_work({.after = WorkCursor{kT0, "d193a"}, .due_by_ms = std::nullopt, .limit = 256});
  REQUIRE(sessions(from_a) ==
          Page{{"d193b", kT0}, {"d193c", kT0 + 1}, {"d193d", kT0 + 2}, {"d193e", kT0 + 9000}});
  // A cursor need not name an entry: it is a position.
  auto between =
      f->find_work({.after = WorkCursor{kT0 + 1, "zzz"}, .due_by_ms = std::nullopt, .limit = 256});
  REQUIRE(sessions(between) == Page{{"d193d", kT0 + 2}, {"d193e", kT0 + 9000}});

  auto all = f->find_work({.after = std::nullopt, .due_by_ms = std::nullopt, .limit = 1000});
  REQUIRE(sessions(all).size() == 5);
  REQUIRE_FALSE(all.next.has_value());
  REQUIRE(sessions(f->find_work()) == sessions(all));  // The default limit is 256.
  require_nothing_to_sweep(*f);
}

// ---- watch_work (docs/semantics.md#watch_work) -------------------------------------------------

TEST_CASE("watch_work signals the writes that lower an entry, each session once",
          "[watch_work][S194]") {
  auto f = fresh();
  // Set up before watching: these writes signal too.
  (void)f->append("d194b", {ev()});
  (void)f->append("d194c", {ev()});
  (void)f->append("d194d", {ev()});
  (void)f->append("d194e", {ev()});
  (void)f->append("d194q", {ev()});
  for (const char* s : {"d194b", "d194c", "d194d", "d194e"})
    REQUIRE(claimed(claim(*f, s)) == std::vector<std::int64_t>{1});
  REQUIRE(fail(*f, "d194e", 1, 1, 1).verdict == FailVerdict::dead_lettered);
  {  // Postgres sends wake-ups after commit, so the setup's may still be on their way: a marker
     // written last is signalled last; once a watch saw it, the setup's signals went out before
     // the watches below listen.
    auto drain = f->watch_work({.sweep_interval = std::chrono::milliseconds(0)});
    (void)f->append("d194z", {ev()});
    REQUIRE(collect_signals(*drain, {"d194z"}).count("d194z") == 1);
  }

  SECTION("signalling writes") {
    auto watch = f->watch_work({.sweep_interval = std::chrono::milliseconds(0)});
    REQUIRE_FALSE(watch->cancelled());
    (void)f->append("d194a", {ev()});
    (void)f->append("d194a", {ev()});  // Signalled again before a wait: still listed once.
    REQUIRE(complete(*f, "d194b", 1, 1, {child("c194b")}).verdict == CompleteVerdict::completed);
    REQUIRE(release(*f, "d194c", {{1, 1}}).released == std::vector<std::int64_t>{1});
    REQUIRE(fail(*f, "d194d", 1, 1).verdict == FailVerdict::failed);
    REQUIRE(redrive(*f, "d194e", 1, RedriveAction::retry).redriven);
    const std::set<std::string> expected = {"d194a", "d194b", "d194c", "d194d", "d194e"};
    auto seen = collect_signals(*watch, expected);
    for (const auto& s : expected) {
      INFO("session " << s);
      // d194a was signalled twice before the first wait: listed once by each wait that saw it.
      if (s == "d194a")
        REQUIRE(seen[s] >= 1);
      else
        REQUIRE(seen[s] == 1);
    }
    REQUIRE(seen.size() == expected.size());
    require_nothing_to_sweep(*f);
  }
  SECTION("writes that do not signal") {
    auto watch = f->watch_work({.sweep_interval = std::chrono::milliseconds(0)});
    (void)f->append("d194s", {settled(ev())});
    auto claimed_q = claim(*f, "d194q");
    REQUIRE(claimed(claimed_q) == std::vector<std::int64_t>{1});
    REQUIRE(renew(*f, {{1, 1}}, "w1", "d194q").renewed == std::vector<std::int64_t>{1});
    REQUIRE(complete(*f, "d194q", 1, 1).verdict == CompleteVerdict::completed);
    (void)f->append("d194q", {});
    // A marker: signals arrive in write order, so once it is seen the writes above were seen.
    (void)f->append("d194m", {ev()});
    auto seen = collect_signals(*watch, {"d194m"});
    REQUIRE(seen == std::map<std::string, int>{{"d194m", 1}});
    REQUIRE(watch->wait(std::chrono::milliseconds(200)).session_ids.empty());
    require_nothing_to_sweep(*f);
  }
  SECTION("cancel wakes a waiting wait") {
    auto watch = f->watch_work();
    WorkSignal got{{"not returned"}, false};
    std::chrono::steady_clock::duration waited{};
    std::thread waiter([&] {
      const auto start = std::chrono::steady_clock::now();
      got = watch->wait(std::chrono::seconds(30));
      waited = std::chrono::steady_clock::now() - start;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    watch->cancel();
    waiter.join();
    REQUIRE(got.session_ids.empty());
    REQUIRE(waited < std::chrono::seconds(10));
    REQUIRE(watch->cancelled());
    watch->cancel();  // Idempotent.
    REQUIRE(watch->wait(std::chrono::milliseconds(10)).session_ids.empty());
  }
  SECTION("a wait on a closed store throws Unavailable") {
    auto watch = f->watch_work();
    f->close();
    require_error(ErrorCode::store_unavailable,
                  [&] { (void)watch->wait(std::chrono::seconds(1)); });
    require_error(ErrorCode::store_unavailable, [&] { (void)f->watch_work(); });
  }
}

// ---- sweep_work (docs/semantics.md#sweep_work) --------------------------------------------------

TEST_CASE("sweep_work finds nothing to index after any mix of a2's writes", "[sweep_work][S195]") {
  auto f = fresh();
  require_nothing_to_sweep(*f);  // An empty store.
  (void)f->append("d195a", {ev(), in_lane(ev(), "L"), in_lane(ev(), "L"), at(ev(), kT0 + 700)});
  (void)f->append("d195b", {settled(ev()), in_lane(ev(), "M")});
  require_nothing_to_sweep(*f);
  REQUIRE(claimed(claim_max(*f, 1, "w1", {}, "d195a")) == std::vector<std::int64_t>{1});
  REQUIRE(claimed(claim(*f, "d195a", "w2", {1})) == std::vector<std::int64_t>{2});
  REQUIRE(claimed(claim(*f, "d195b")) == std::vector<std::int64_t>{2});
  require_nothing_to_sweep(*f);
  f.clock->advance(500);
  REQUIRE(fail_retry(*f, "d195b", 2, 1, kT0 + 900).verdict == FailVerdict::failed);
  REQUIRE(complete(*f, "d195a", 2, 1, {at(child("c195"), kT0 + 2000)}).verdict ==
          CompleteVerdict::completed);
  require_nothing_to_sweep(*f);
  f.clock->advance(1000);  // Past the delays: the due work is still indexed in time.
  require_nothing_to_sweep(*f);
  auto all = claim(*f, "d195a");
  REQUIRE(all.verdict == ClaimVerdict::claimed);
  REQUIRE(fail(*f, "d195a", 3, 1, 1).verdict == FailVerdict::dead_lettered);
  require_nothing_to_sweep(*f);
  f.clock->advance(2 * kTtl);  // Every lease lapsed.
  require_nothing_to_sweep(*f);
  REQUIRE(clear(*f, "d195b").cleared);
  (void)f->append("d195b", {ev()});
  REQUIRE(redrive(*f, "d195a", 3, RedriveAction::skip).redriven);
  require_nothing_to_sweep(*f);
}

// ---- bad input --------------------------------------------------------------------------------

TEST_CASE("find_work and watch_work refuse bad input", "[find_work][watch_work][bad_input][S196]") {
  auto f = fresh();
  (void)f->append("d196", {ev()});
  const Index before = work_index(*f);
  auto find = [&](std::optional<WorkCursor> after, std::optional<std::int64_t> due_by,
                  std::int64_t limit) {
    (void)f->find_work({.after = std::move(after), .due_by_ms = due_by, .limit = limit});
  };
  for (std::int64_t limit : {std::int64_t{0}, std::int64_t{-1}, std::int64_t{1001}, kBeyondSafe}) {
    INFO("limit " << limit);
    require_error(ErrorCode::invalid_argument, [&] { find(std::nullopt, std::nullopt, limit); });
  }
  for (std::int64_t t : {std::int64_t{-1}, -kT0, kBeyondSafe}) {
    INFO("time " << t);
    require_error(ErrorCode::invalid_argument, [&] { find(std::nullopt, t, 10); });
    require_error(ErrorCode::invalid_argument, [&] {
      find(WorkCursor{t, "d196"}, std::nullopt, 10);
    });
  }
  for (const auto& sid : bad_session_ids()) {
    INFO("cursor session '" << printable(sid) << "'");
    require_error(ErrorCode::invalid_argument, [&] {
      find(WorkCursor{kT0, sid}, std::nullopt, 10);
    });
  }
  for (std::int64_t ms : {std::int64_t{-1}, std::int64_t{-1000}}) {
    INFO("sweep_interval " << ms);
    require_error(ErrorCode::invalid_argument,
                  [&] { (void)f->watch_work({.sweep_interval = std::chrono::milliseconds(ms)}); });
  }
  REQUIRE(work_index(*f) == before);
  // The limits themselves are fine.
  REQUIRE(f->find_work({.after = std::nullopt, .due_by_ms = 0, .limit = 1}).sessions.empty());
  REQUIRE(f->find_work({.after = std::nullopt, .due_by_ms = std::nullopt, .limit = 1000})
              .sessions.size() == 1);
  require_nothing_to_sweep(*f);
}

}  // namespace a2::conformance
