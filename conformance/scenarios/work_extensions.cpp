// SPDX-License-Identifier: MIT
// Conformance scenarios 153-171 (docs/semantics.md#work-extension-scenarios): bounded claims,
// release_claims, held_claims, head and delayed work. Bad input (S172) is in bad_input.cpp.
// Scenarios 198-199 (docs/semantics.md#snooze-scenarios): a release with available_at_ms.

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "harness.hpp"
#include "support/claims.hpp"
#include "support/lifecycle.hpp"
#include "support/support.hpp"
#include "support/work.hpp"

namespace a2::conformance {
namespace {

using Indexes = std::vector<std::int64_t>;

// release_claims of `holder` in session "s".
ReleaseResult release(Store& store, std::vector<ClaimRef> claims,
                      const std::string& holder = "w1") {
  return store.release_claims({.session_id = "s", .holder = holder, .claims = std::move(claims)});
}

// release_claims of w1 in session "s" with available_at_ms (a snooze).
ReleaseResult snooze(Store& store, std::vector<ClaimRef> claims,
                     std::optional<std::int64_t> available_at_ms) {
  return store.release_claims({.session_id = "s",
                               .holder = "w1",
                               .claims = std::move(claims),
                               .available_at_ms = available_at_ms});
}

// fail_attempt with a retry time (or none).
FailResult fail_retry(Store& store, std::int64_t index, std::int64_t attempt,
                      std::optional<std::int64_t> retry_at_ms, std::int64_t max_failures = 10) {
  return store.fail_attempt({.session_id = "s",
                             .index = index,
                             .attempt = attempt,
                             .error = "boom",
                             .max_failures = max_failures,
                             .retry_at_ms = retry_at_ms});
}

}  // namespace

// ---- bounded claims -------------------------------------------------------------------------

TEST_CASE("a bounded claim takes at most max_events, lowest index first", "[claim][S153]") {
  auto f = fresh();
  given(*f, evs(3));
  auto first = claim_max(*f, 2);
  REQUIRE(claimed(first) == Indexes{1, 2});
  for (const auto& e : first.events) {
    REQUIRE(e.attempt_count == 1);
    REQUIRE(e.claim_holder == "w1");
    REQUIRE(e.claim_expires_at == kT0 + kTtl);
  }
  REQUIRE(row(*f, "s", 3).attempt_count == 0);  // Not claimed, not touched.
  REQUIRE_FALSE(row(*f, "s", 3).claim_holder.has_value());

  REQUIRE(claimed(claim_max(*f, 2)) == Indexes{3});
  require_busy(claim_max(*f, 2), kT0 + kTtl);

  given(*f, evs(3));
  auto all = claim_max(*f, 10);
  REQUIRE(claimed(all) == Indexes{4, 5, 6});
  for (const auto& e : all.events) REQUIRE(e.attempt_count == 1);
}

TEST_CASE("two workers claiming one event each get different events", "[claim][S154]") {
  auto f = fresh();
  given(*f, evs(2));
  auto one = claim_max(*f, 1, "w1");
  REQUIRE(claimed(one) == Indexes{1});
  REQUIRE(one.events.front().claim_holder == "w1");
  auto two = claim_max(*f, 1, "w2");
  REQUIRE(claimed(two) == Indexes{2});
  REQUIRE(two.events.front().claim_holder == "w2");
  require_busy(claim_max(*f, 1, "w3"), kT0 + kTtl);
  REQUIRE(row(*f, "s", 1).claim_holder == "w1");
  REQUIRE(row(*f, "s", 2).claim_holder == "w2");
}

TEST_CASE("bounded claims respect lanes", "[claim][lanes][S155]") {
  auto f = fresh();
  given(*f, {in_lane(ev(), "L"), in_lane(ev(), "L"), ev(), in_lane(ev(), "M")});
  REQUIRE(claimed(claim_max(*f, 2)) == Indexes{1, 3});
  REQUIRE(claimed(claim_max(*f, 2)) == Indexes{4});  // 2 waits behind 1.
  REQUIRE(row(*f, "s", 2).attempt_count == 0);
  REQUIRE(complete(*f, "s", 1, 1).verdict == CompleteVerdict::completed);
  auto next = claim_max(*f, 2);
  REQUIRE(claimed(next) == Indexes{2});
  REQUIRE(next.events.front().attempt_count == 1);
}

TEST_CASE("held, excluded and dead-lettered events do not count toward max_events",
          "[claim][S156]") {
  auto f = fresh();
  given(*f, evs(5));
  REQUIRE(claimed(claim_max(*f, 1)) == Indexes{1});
  REQUIRE(claimed(claim_max(*f, 1, "w1", {2})) == Indexes{3});
  REQUIRE(fail(*f, "s", 3, 1, 1).verdict == FailVerdict::dead_lettered);

  auto c = claim_max(*f, 1, "w1", {2});
  REQUIRE(claimed(c) == Indexes{4});
  REQUIRE(c.events.front().attempt_count == 1);
  REQUIRE(row(*f, "s", 1).attempt_count == 1);  // Still the first lease.
  REQUIRE(row(*f, "s", 2).attempt_count == 0);
  REQUIRE(row(*f, "s", 3).attempt_count == 1);
  REQUIRE(row(*f, "s", 5).attempt_count == 0);
  REQUIRE_FALSE(row(*f, "s", 5).claim_holder.has_value());
}

// ---- release_claims ---------------------------------------------------------------------------

TEST_CASE("a released claim is available again at once as the next attempt", "[release][S157]") {
  auto f = fresh();
  given(*f, evs(2));
  REQUIRE(claimed(claim(*f)) == Indexes{1, 2});
  f.clock->advance(100);

  auto r = release(*f, {{1, 1}});
  REQUIRE(r.released == Indexes{1});
  REQUIRE(r.not_held.empty());
  auto e = row(*f, "s", 1);
  REQUIRE_FALSE(e.claim_holder.has_value());
  REQUIRE_FALSE(e.claim_expires_at.has_value());
  REQUIRE(e.attempt_count == 1);
  REQUIRE(e.failure_count == 0);
  REQUIRE_FALSE(e.last_error.has_value());
  REQUIRE_FALSE(e.last_failed_at.has_value());
  REQUIRE_FALSE(e.last_failed_attempt.has_value());
  REQUIRE_FALSE(e.failed_at.has_value());
  REQUIRE_FALSE(e.processed_at.has_value());
  REQUIRE(e.first_claimed_at == kT0);
  REQUIRE(e.last_claimed_at == kT0);
  REQUIRE(row(*f, "s", 2).claim_holder == "w1");  // The other claim is untouched.

  auto again = claim(*f, "s", "w2");
  REQUIRE(claimed(again) == Indexes{1});
  REQUIRE(again.events.front().attempt_count == 2);
  REQUIRE(again.events.front().claim_holder == "w2");
  REQUIRE(again.events.front().last_claimed_at == kT0 + 100);
}

TEST_CASE("release reports not_held and changes nothing for claims that are not held",
          "[release][S158]") {
  auto f = fresh();
  // 1 and 2 of a cleared lifetime (w1's live leases at attempt 1), the marker 3.
  given(*f, evs(2));
  REQUIRE(claimed(claim(*f)) == Indexes{1, 2});
  REQUIRE(clear(*f).clear_index == 3);
  // 4 held by w1, 5 a lapsed lease, 6 completed, 7 a dead letter, 8 never claimed.
  given(*f, evs(5));
  REQUIRE(claimed(claim_until(*f, kT0 + 100, "s", "w1", {4, 6, 7, 8})) == Indexes{5});
  REQUIRE(claimed(claim(*f, "s", "w1", {8})) == Indexes{4, 6, 7});
  REQUIRE(complete(*f, "s", 6, 1).verdict == CompleteVerdict::completed);
  REQUIRE(fail(*f, "s", 7, 1, 1).verdict == FailVerdict::dead_lettered);
  f.clock->advance(200);
  REQUIRE(held(*f, "w1") == Held{{4, 1, kT0 + kTtl}});

  const auto before = picture(*f);
  struct Case {
    const char* what;
    ClaimRef claim;
    const char* holder;
  };
  for (const Case& c :
       {Case{"another holder's lease", {4, 1}, "w2"}, Case{"a wrong attempt", {4, 2}, "w1"},
        Case{"an older attempt", {4, 0}, "w1"}, Case{"a lapsed lease", {5, 1}, "w1"},
        Case{"a completed event", {6, 1}, "w1"}, Case{"a dead letter", {7, 1}, "w1"},
        Case{"below the boundary (a live old lease)", {1, 1}, "w1"},
        Case{"at the boundary (the marker)", {3, 0}, "w1"}, Case{"above the head", {9, 1}, "w1"},
        Case{"a never-claimed event", {8, 0}, "w1"},
        Case{"a never-claimed event, attempt 1", {8, 1}, "w1"}}) {
    INFO(c.what);
    auto r = release(*f, {c.claim}, c.holder);
    REQUIRE(r.released.empty());
    REQUIRE(r.not_held == Indexes{c.claim.index});
    REQUIRE(picture(*f) == before);
  }

  auto mixed = release(*f, {{5, 1}, {4, 1}, {9, 1}, {1, 1}});
  REQUIRE(mixed.released == Indexes{4});
  REQUIRE(sorted(mixed.not_held) == Indexes{1, 5, 9});
  REQUIRE_FALSE(row(*f, "s", 4).claim_holder.has_value());
  REQUIRE(held(*f, "w1").empty());
}

TEST_CASE("a released attempt is over: repeats, completion, failure and renewal",
          "[release][S159]") {
  auto f = fresh();
  given(*f, {ev_id("a")});
  REQUIRE(claimed(claim(*f)) == Indexes{1});
  REQUIRE(release(*f, {{1, 1}}).released == Indexes{1});
  const auto before = picture(*f);

  auto again = release(*f, {{1, 1}});
  REQUIRE(again.released.empty());
  REQUIRE(again.not_held == Indexes{1});
  REQUIRE(picture(*f) == before);

  REQUIRE(complete(*f, "s", 1, 1).verdict == CompleteVerdict::superseded);
  REQUIRE(picture(*f) == before);
  REQUIRE(fail(*f, "s", 1, 1).verdict == FailVerdict::superseded);
  REQUIRE(picture(*f) == before);
  auto renewed = renew(*f, {{1, 1}});
  REQUIRE(renewed.renewed.empty());
  REQUIRE(renewed.superseded.empty());
  REQUIRE(picture(*f) == before);

  auto appended = f->append("s", {caused(ev_id("b"), 1, 1)});
  REQUIRE(indexes_of(appended.events) == Indexes{2});
  REQUIRE(appended.events.front().cause == EventCause{1, 1});
}

TEST_CASE("releasing a lane head keeps its lane in order", "[release][lanes][S160]") {
  auto f = fresh();
  given(*f, {in_lane(ev(), "L"), in_lane(ev(), "L")});
  REQUIRE(claimed(claim(*f)) == Indexes{1});
  REQUIRE(release(*f, {{1, 1}}).released == Indexes{1});
  auto next = claim(*f);
  REQUIRE(claimed(next) == Indexes{1});
  REQUIRE(next.events.front().attempt_count == 2);
  REQUIRE(row(*f, "s", 2).attempt_count == 0);
}

// ---- held_claims ------------------------------------------------------------------------------

TEST_CASE("held_claims lists a holder's live leases", "[held_claims][S161]") {
  auto f = fresh();
  given(*f, evs(3));
  REQUIRE(claimed(claim_max(*f, 2, "w1")) == Indexes{1, 2});
  REQUIRE(claimed(claim(*f, "s", "w2")) == Indexes{3});
  REQUIRE(held(*f, "w1") == Held{{1, 1, kT0 + kTtl}, {2, 1, kT0 + kTtl}});
  REQUIRE(held(*f, "w2") == Held{{3, 1, kT0 + kTtl}});
  REQUIRE(held(*f, "w3").empty());
  REQUIRE(held(*f, "w1", "other").empty());

  REQUIRE(complete(*f, "s", 1, 1).verdict == CompleteVerdict::completed);
  REQUIRE(held(*f, "w1") == Held{{2, 1, kT0 + kTtl}});
  REQUIRE(release(*f, {{2, 1}}).released == Indexes{2});
  REQUIRE(held(*f, "w1").empty());

  f.clock->advance(1000);
  REQUIRE(renew(*f, {{3, 1}}, "w2").renewed == Indexes{3});
  REQUIRE(held(*f, "w2") == Held{{3, 1, kT0 + 1000 + kTtl}});
  REQUIRE(claimed(claim(*f)) == Indexes{2});
  REQUIRE(held(*f, "w1") == Held{{2, 2, kT0 + 1000 + kTtl}});

  f.clock->set(kT0 + 1000 + kTtl);  // Both leases end now: lapsed.
  REQUIRE(held(*f, "w1").empty());
  REQUIRE(held(*f, "w2").empty());

  REQUIRE(claimed(claim(*f)) == Indexes{2, 3});
  REQUIRE(held(*f, "w1") == Held{{2, 3, kT0 + 1000 + 2 * kTtl}, {3, 2, kT0 + 1000 + 2 * kTtl}});
  REQUIRE(clear(*f).clear_index == 4);
  REQUIRE(held(*f, "w1").empty());
}

TEST_CASE("held_claims recovers the claims of a lost claim reply", "[held_claims][S162]") {
  auto f = fresh();
  given(*f, evs(3));
  REQUIRE(claimed(claim_max(*f, 1)) == Indexes{1});
  REQUIRE(release(*f, {{1, 1}}).released == Indexes{1});
  f.clock->advance(50);

  const auto lost = claim_max(*f, 2);  // The worker never sees this reply.
  REQUIRE(claimed(lost) == Indexes{1, 2});
  Held expected;
  for (const auto& e : lost.events)
    expected.emplace_back(e.index, e.attempt_count, *e.claim_expires_at);
  REQUIRE(expected == Held{{1, 2, kT0 + 50 + kTtl}, {2, 1, kT0 + 50 + kTtl}});

  const auto recovered = held(*f, "w1");
  REQUIRE(recovered == expected);
  for (const auto& [index, attempt, expires_at] : recovered) {
    (void)expires_at;
    REQUIRE(complete(*f, "s", index, attempt).verdict == CompleteVerdict::completed);
  }
  REQUIRE(held(*f, "w1").empty());
  REQUIRE(row(*f, "s", 1).processed_by_attempt == 2);
  REQUIRE(row(*f, "s", 2).processed_by_attempt == 1);
  REQUIRE(row(*f, "s", 3).attempt_count == 0);
}

// ---- head -------------------------------------------------------------------------------------

TEST_CASE("head returns the head index and the clear boundary", "[head][S163]") {
  auto f = fresh();
  auto head = [&] {
    auto h = f->head("s");
    return std::pair{h.head_index, h.clear_index};
  };
  REQUIRE(head() == std::pair<std::int64_t, std::int64_t>{0, 0});
  REQUIRE(f->read("s").empty());  // Reading created nothing.
  given(*f, evs(3));
  REQUIRE(head() == std::pair<std::int64_t, std::int64_t>{3, 0});
  REQUIRE(clear(*f).clear_index == 4);
  REQUIRE(head() == std::pair<std::int64_t, std::int64_t>{4, 4});
  given(*f, evs(1));
  REQUIRE(head() == std::pair<std::int64_t, std::int64_t>{5, 4});
  REQUIRE(reclaim_all(*f).deleted == 3);
  REQUIRE(head() == std::pair<std::int64_t, std::int64_t>{5, 4});

  auto feed = f->subscribe("s", f->head("s").head_index);
  REQUIRE(feed->next(std::chrono::milliseconds(50)).empty());
  given(*f, {ev_id("later")});
  auto later = collect(*feed, 1);
  REQUIRE(later.size() == 1);
  REQUIRE(later.front().index == 6);
  REQUIRE(later.front().id == "later");
}

// ---- delayed work -----------------------------------------------------------------------------

TEST_CASE("a delayed retry is not claimable before its time", "[fail][delayed][S164]") {
  auto f = fresh();
  given(*f, evs(1));
  REQUIRE(claimed(claim(*f)) == Indexes{1});

  auto r = fail_retry(*f, 1, 1, kT0 + 5000);
  REQUIRE(r.verdict == FailVerdict::failed);
  REQUIRE(r.failure_count == 1);
  auto e = row(*f, "s", 1);
  REQUIRE(e.available_at == kT0 + 5000);
  REQUIRE_FALSE(e.claim_holder.has_value());
  REQUIRE_FALSE(e.claim_expires_at.has_value());
  REQUIRE_FALSE(e.failed_at.has_value());

  require_busy(claim(*f), kT0 + 5000);
  REQUIRE(has_pending(*f));
  REQUIRE(f->dead_letters("s").empty());
  f.clock->advance(4999);
  require_busy(claim(*f), kT0 + 5000);
  f.clock->advance(1);
  auto again = claim(*f);
  REQUIRE(claimed(again) == Indexes{1});
  REQUIRE(again.events.front().attempt_count == 2);
  REQUIRE(again.events.front().failure_count == 1);
}

TEST_CASE("a retry time not after now means at once", "[fail][delayed][S165]") {
  auto f = fresh();
  given(*f, evs(1));
  REQUIRE(claimed(claim(*f)) == Indexes{1});

  REQUIRE(fail_retry(*f, 1, 1, kT0).verdict == FailVerdict::failed);
  REQUIRE_FALSE(row(*f, "s", 1).available_at.has_value());
  auto second = claim(*f);
  REQUIRE(claimed(second) == Indexes{1});
  REQUIRE(second.events.front().attempt_count == 2);

  REQUIRE(fail_retry(*f, 1, 2, kT0 - 1).verdict == FailVerdict::failed);
  REQUIRE_FALSE(row(*f, "s", 1).available_at.has_value());
  REQUIRE(claimed(claim(*f)) == Indexes{1});

  // A later failure without retry_at_ms removes an earlier available_at.
  REQUIRE(fail_retry(*f, 1, 3, kT0 + 5000).verdict == FailVerdict::failed);
  REQUIRE(row(*f, "s", 1).available_at == kT0 + 5000);
  f.clock->advance(5000);
  auto fourth = claim(*f);
  REQUIRE(claimed(fourth) == Indexes{1});
  REQUIRE(fourth.events.front().attempt_count == 4);
  auto r = fail_retry(*f, 1, 4, std::nullopt);
  REQUIRE(r.verdict == FailVerdict::failed);
  REQUIRE(r.failure_count == 4);
  REQUIRE_FALSE(row(*f, "s", 1).available_at.has_value());
  auto fifth = claim(*f);
  REQUIRE(claimed(fifth) == Indexes{1});
  REQUIRE(fifth.events.front().attempt_count == 5);
}

TEST_CASE("a dead-lettering failure ignores retry_at_ms; redrive retry is claimable at once",
          "[fail][redrive][delayed][S166]") {
  auto f = fresh();
  given(*f, evs(1));
  REQUIRE(claimed(claim(*f)) == Indexes{1});
  REQUIRE(fail_retry(*f, 1, 1, kT0 + 1000, 2).verdict == FailVerdict::failed);
  REQUIRE(row(*f, "s", 1).available_at == kT0 + 1000);
  f.clock->advance(1000);
  REQUIRE(claimed(claim(*f)) == Indexes{1});

  auto r = fail_retry(*f, 1, 2, kT0 + 9000, 2);
  REQUIRE(r.verdict == FailVerdict::dead_lettered);
  REQUIRE(r.failure_count == 2);
  auto e = row(*f, "s", 1);
  REQUIRE(e.failed_at == kT0 + 1000);
  REQUIRE_FALSE(e.available_at.has_value());
  REQUIRE(claim(*f).verdict == ClaimVerdict::settled);

  REQUIRE(redrive(*f, "s", 1, RedriveAction::retry).redriven);
  auto again = claim(*f);
  REQUIRE(claimed(again) == Indexes{1});
  REQUIRE(again.events.front().attempt_count == 3);
  REQUIRE_FALSE(again.events.front().available_at.has_value());
}

TEST_CASE("busy.retry_at is the earliest of lease ends and delays", "[claim][delayed][S167]") {
  auto busy_with_delay = [](std::int64_t delayed_to) {
    auto f = fresh();
    given(*f, evs(2));
    REQUIRE(claimed(claim_max(*f, 1)) == Indexes{1});  // Held until kT0 + kTtl.
    REQUIRE(claimed(claim(*f)) == Indexes{2});
    REQUIRE(fail_retry(*f, 2, 1, delayed_to).verdict == FailVerdict::failed);
    auto c = claim(*f);
    REQUIRE(c.verdict == ClaimVerdict::busy);
    REQUIRE(c.events.empty());
    return c.retry_at;
  };
  REQUIRE(busy_with_delay(kT0 + 10000) == kT0 + 10000);
  REQUIRE(busy_with_delay(kT0 + 40000) == kT0 + kTtl);
}

TEST_CASE("scheduled work is stored now and claimable from its time", "[append][delayed][S168]") {
  auto f = fresh();
  auto r = f->append("s", {at(ev_id("a"), kT0 + 1000)});
  REQUIRE(indexes_of(r.events) == Indexes{1});
  REQUIRE(r.has_pending);
  const auto& e = r.events.front();
  REQUIRE(e.created_at == kT0);
  REQUIRE(e.available_at == kT0 + 1000);
  REQUIRE_FALSE(e.processed_at.has_value());
  REQUIRE(e.attempt_count == 0);
  REQUIRE(to_json(row(*f, "s", 1)) == to_json(e));
  REQUIRE(has_pending(*f));

  require_busy(claim(*f), kT0 + 1000);
  f.clock->advance(999);
  require_busy(claim(*f), kT0 + 1000);
  f.clock->advance(1);
  auto c = claim(*f);
  REQUIRE(claimed(c) == Indexes{1});
  REQUIRE(c.events.front().attempt_count == 1);

  // Not after now: stored without available_at, claimable at once.
  auto now_or_past = f->append("s", {at(ev_id("b"), kT0 + 1000), at(ev_id("c"), kT0 + 999)});
  REQUIRE(indexes_of(now_or_past.events) == Indexes{2, 3});
  for (const auto& n : now_or_past.events) REQUIRE_FALSE(n.available_at.has_value());
  REQUIRE_FALSE(row(*f, "s", 2).available_at.has_value());
  REQUIRE_FALSE(row(*f, "s", 3).available_at.has_value());
  REQUIRE(claimed(claim(*f)) == Indexes{2, 3});
}

TEST_CASE("a delayed lane head delays its lane", "[claim][lanes][delayed][S169]") {
  auto f = fresh();
  given(*f, {at(in_lane(ev(), "L"), kT0 + 1000), in_lane(ev(), "L")});
  require_busy(claim(*f), kT0 + 1000);
  REQUIRE(has_pending(*f));
  f.clock->advance(1000);
  REQUIRE(claimed(claim(*f)) == Indexes{1});
  REQUIRE(row(*f, "s", 2).attempt_count == 0);
}

TEST_CASE("scheduled children of a completion", "[complete][delayed][S170]") {
  auto f = fresh();
  given(*f, {ev_id("p")});
  REQUIRE(claimed(claim(*f)) == Indexes{1});
  auto done = complete(*f, "s", 1, 1, {at(child("k"), kT0 + 2000)});
  REQUIRE(done.verdict == CompleteVerdict::completed);
  REQUIRE(indexes_of(done.events) == Indexes{2});
  const auto& k = done.events.front();
  REQUIRE(k.id == "k");
  REQUIRE(k.cause == EventCause{1, 1});
  REQUIRE(k.available_at == kT0 + 2000);
  REQUIRE(k.created_at == kT0);
  REQUIRE(to_json(row(*f, "s", 2)) == to_json(k));

  require_busy(claim(*f), kT0 + 2000);
  auto retry = complete(*f, "s", 1, 1, {at(child("k"), kT0 + 2000)});
  REQUIRE(retry.verdict == CompleteVerdict::completed);
  REQUIRE(retry.events.size() == 1);
  REQUIRE(to_json(retry.events.front()) == to_json(k));

  f.clock->advance(1999);
  require_busy(claim(*f), kT0 + 2000);
  f.clock->advance(1);
  REQUIRE(claimed(claim(*f)) == Indexes{2});
}

TEST_CASE("a delayed retry across a clear", "[fail][clear][delayed][S171]") {
  auto f = fresh();
  given(*f, evs(1));
  REQUIRE(claimed(claim(*f)) == Indexes{1});
  REQUIRE(fail_retry(*f, 1, 1, kT0 + 5000).verdict == FailVerdict::failed);
  require_busy(claim(*f), kT0 + 5000);
  REQUIRE(clear(*f).clear_index == 2);

  auto c = claim(*f);
  REQUIRE(c.verdict == ClaimVerdict::settled);
  REQUIRE(c.events.empty());
  REQUIRE_FALSE(has_pending(*f));
  given(*f, evs(1));
  auto fresh_work = claim(*f);
  REQUIRE(claimed(fresh_work) == Indexes{3});
  REQUIRE(fresh_work.events.front().clear_index == 2);
}

// ---- snooze: release_claims with available_at_ms ---------------------------------------------

TEST_CASE("a snoozed claim waits until available_at_ms without counting a failure",
          "[release][delayed][S198]") {
  auto f = fresh();
  given(*f, evs(2));
  REQUIRE(claimed(claim(*f)) == Indexes{1, 2});

  auto r = snooze(*f, {{1, 1}}, kT0 + 5000);
  REQUIRE(r.released == Indexes{1});
  REQUIRE(r.not_held.empty());
  auto e = row(*f, "s", 1);
  REQUIRE(e.available_at == kT0 + 5000);
  REQUIRE_FALSE(e.claim_holder.has_value());
  REQUIRE_FALSE(e.claim_expires_at.has_value());
  REQUIRE(e.attempt_count == 1);
  REQUIRE(e.failure_count == 0);
  REQUIRE_FALSE(e.last_error.has_value());
  REQUIRE_FALSE(e.failed_at.has_value());
  REQUIRE_FALSE(e.processed_at.has_value());
  REQUIRE(row(*f, "s", 2).claim_holder == "w1");  // The other claim is untouched.
  REQUIRE_FALSE(row(*f, "s", 2).available_at.has_value());
  REQUIRE(entry(*f, "s") == kT0 + 5000);
  REQUIRE(has_pending(*f));

  require_busy(claim(*f, "s", "w2"), kT0 + 5000);  // 2 is held until kT0 + kTtl.
  f.clock->advance(4999);
  require_busy(claim(*f, "s", "w2"), kT0 + 5000);
  f.clock->advance(1);
  auto again = claim(*f, "s", "w2");
  REQUIRE(claimed(again) == Indexes{1});
  REQUIRE(again.events.front().attempt_count == 2);
  REQUIRE(again.events.front().failure_count == 0);
  REQUIRE(again.events.front().claim_holder == "w2");
}

TEST_CASE("a snooze not after now releases for at once; one that releases nothing stores nothing",
          "[release][delayed][lanes][S199]") {
  {
    INFO("available_at_ms at or before now");
    auto f = fresh();
    given(*f, evs(1));
    REQUIRE(claimed(claim(*f)) == Indexes{1});
    REQUIRE(snooze(*f, {{1, 1}}, kT0).released == Indexes{1});
    REQUIRE_FALSE(row(*f, "s", 1).available_at.has_value());
    REQUIRE(entry(*f, "s") == kT0);
    auto second = claim(*f);
    REQUIRE(claimed(second) == Indexes{1});
    REQUIRE(second.events.front().attempt_count == 2);

    REQUIRE(snooze(*f, {{1, 2}}, kT0 - 1).released == Indexes{1});
    REQUIRE_FALSE(row(*f, "s", 1).available_at.has_value());
    REQUIRE(entry(*f, "s") == kT0);
    auto third = claim(*f);
    REQUIRE(claimed(third) == Indexes{1});
    REQUIRE(third.events.front().attempt_count == 3);
    REQUIRE(third.events.front().failure_count == 0);
  }
  {
    INFO("an available_at already stored stays when available_at_ms is not after now");
    auto f = fresh();
    given(*f, {at(ev(), kT0 + 1000)});
    f.clock->advance(1000);
    REQUIRE(claimed(claim(*f)) == Indexes{1});
    REQUIRE(snooze(*f, {{1, 1}}, kT0 + 1000).released == Indexes{1});
    REQUIRE(row(*f, "s", 1).available_at == kT0 + 1000);
    REQUIRE(claimed(claim(*f)) == Indexes{1});
  }
  {
    INFO("a release that releases nothing stores nothing and leaves the entry");
    auto f = fresh();
    given(*f, evs(1));
    REQUIRE(claimed(claim(*f)) == Indexes{1});
    const auto before = picture(*f);
    const auto entry_before = entry(*f, "s");
    REQUIRE(entry_before == kT0 + kTtl);
    auto r = snooze(*f, {{1, 2}}, kT0 + 5000);  // A wrong attempt.
    REQUIRE(r.released.empty());
    REQUIRE(r.not_held == Indexes{1});
    REQUIRE(picture(*f) == before);
    REQUIRE_FALSE(row(*f, "s", 1).available_at.has_value());
    REQUIRE(entry(*f, "s") == entry_before);

    INFO("a negative available_at_ms is invalid_argument and changes nothing");
    for (std::int64_t bad : {std::int64_t{-1}, std::numeric_limits<std::int64_t>::min()}) {
      require_error(ErrorCode::invalid_argument, [&] { (void)snooze(*f, {{1, 1}}, bad); });
      REQUIRE(picture(*f) == before);
      REQUIRE(entry(*f, "s") == entry_before);
    }
  }
  {
    INFO("a snoozed lane head delays its lane");
    auto f = fresh();
    given(*f, {in_lane(ev(), "L"), in_lane(ev(), "L")});
    REQUIRE(claimed(claim(*f)) == Indexes{1});
    REQUIRE(snooze(*f, {{1, 1}}, kT0 + 1000).released == Indexes{1});
    require_busy(claim(*f), kT0 + 1000);
    REQUIRE(has_pending(*f));
    f.clock->advance(999);
    require_busy(claim(*f), kT0 + 1000);
    f.clock->advance(1);
    auto next = claim(*f);
    REQUIRE(claimed(next) == Indexes{1});
    REQUIRE(next.events.front().attempt_count == 2);
    REQUIRE(row(*f, "s", 2).attempt_count == 0);
  }
}

}  // namespace a2::conformance
