// SPDX-License-Identifier: MIT
// Conformance scenarios 173-181 (docs/semantics.md#batched-completion-and-claim_next-scenarios):
// complete_attempts and claim_next. Bad input (S182) is in bad_input.cpp.

#include <catch2/catch.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness.hpp"
#include "support/children_and_state.hpp"
#include "support/claims.hpp"
#include "support/support.hpp"
#include "support/work.hpp"

namespace a2::conformance {
namespace {

using Indexes = std::vector<std::int64_t>;
using Ids = std::vector<std::string>;

// One completion of a batch.
Completion done(std::int64_t index, std::int64_t attempt, std::vector<ChildEvent> children = {}) {
  return {.index = index, .attempt = attempt, .events = std::move(children)};
}

// A claim_next for `holder` with the default lease.
ClaimNext next_for(const std::string& holder = "w1", std::int64_t max_events = 1) {
  return {
      .holder = holder, .ttl_ms = kTtl, .expires_at_ms = std::nullopt, .max_events = max_events};
}

// complete_attempts on session "s".
CompleteManyResult complete_many(Store& store, std::vector<Completion> completions,
                                 std::optional<ClaimNext> next = std::nullopt) {
  return store.complete_attempts(
      {.session_id = "s", .completions = std::move(completions), .claim_next = std::move(next)});
}

// complete_attempt on session "s" with a claim_next.
CompleteResult complete_next(Store& store, std::int64_t index, std::int64_t attempt,
                             std::vector<ChildEvent> children, ClaimNext next) {
  return store.complete_attempt({.session_id = "s",
                                 .index = index,
                                 .attempt = attempt,
                                 .events = std::move(children),
                                 .claim_next = std::move(next)});
}

std::int64_t head_of(Store& store) { return store.head("s").head_index; }

// The verdicts of a batch, in order.
std::vector<CompleteVerdict> verdicts(const CompleteManyResult& r) {
  std::vector<CompleteVerdict> out;
  for (const auto& c : r.results) out.push_back(c.verdict);
  return out;
}

// S173's set-up and call: w1 claims 1, 2, 3 at T0; the batch completes them at T0 + 100.
CompleteManyResult s173_call(Store& store) {
  return complete_many(
      store, {done(1, 1, {child("c1")}), done(2, 1), done(3, 1, {child("c3a"), child("c3b")})});
}
void s173_setup(Fixture& f) {
  given(*f, evs(3));
  REQUIRE(claimed(claim(*f)) == Indexes{1, 2, 3});
  f.clock->advance(100);
}

}  // namespace

TEST_CASE("complete_attempts completes many attempts in order, children after the head",
          "[complete_attempts][S173]") {
  auto f = fresh();
  s173_setup(f);
  auto r = s173_call(*f);
  using V = CompleteVerdict;
  REQUIRE(verdicts(r) == std::vector<V>{V::completed, V::completed, V::completed});
  REQUIRE_FALSE(r.next.has_value());
  for (const auto& c : r.results) REQUIRE_FALSE(c.next.has_value());

  REQUIRE(indexes_of(r.results[0].events) == Indexes{4});
  REQUIRE(ids_of(r.results[0].events) == Ids{"c1"});
  REQUIRE(r.results[1].events.empty());
  REQUIRE(indexes_of(r.results[2].events) == Indexes{5, 6});
  REQUIRE(ids_of(r.results[2].events) == Ids{"c3a", "c3b"});
  const std::vector<std::int64_t> parents = {1, 3};
  for (std::size_t i : {std::size_t{0}, std::size_t{2}}) {
    for (const auto& c : r.results[i].events) {
      REQUIRE(c.cause == EventCause{parents[i / 2], 1});
      REQUIRE(c.created_at == kT0 + 100);
      REQUIRE_FALSE(c.processed_at.has_value());
      REQUIRE(c.attempt_count == 0);
      REQUIRE(to_json(row(*f, "s", c.index)) == to_json(c));  // The returned rows are stored.
    }
  }

  const std::vector<Ids> returned = {{"c1"}, {}, {"c3a", "c3b"}};
  for (std::int64_t i = 1; i <= 3; ++i) {
    INFO("parent " << i);
    auto p = row(*f, "s", i);
    REQUIRE(p.processed_at == kT0 + 100);
    REQUIRE(p.processed_by_attempt == 1);
    REQUIRE(p.returned_event_ids == returned[static_cast<std::size_t>(i - 1)]);
    REQUIRE_FALSE(p.claim_holder.has_value());
    REQUIRE_FALSE(p.claim_expires_at.has_value());
    REQUIRE(p.attempt_count == 1);
  }
  REQUIRE(head_of(*f) == 6);
  REQUIRE(has_pending(*f));  // The children.
  REQUIRE(claimed(claim(*f)) == Indexes{4, 5, 6});
}

TEST_CASE("complete_attempts gives each completion its own verdict", "[complete_attempts][S174]") {
  auto f = fresh();
  given(*f, evs(3));
  // 2 claimed until T0 + 1000 (then re-claimed), 1 and 3 until T0 + 30000.
  REQUIRE(claimed(claim_until(*f, kT0 + 1000, "s", "w1", {1, 3})) == Indexes{2});
  REQUIRE(claimed(claim(*f)) == Indexes{1, 3});
  auto x = complete(*f, "s", 3, 1, {child("x")});
  REQUIRE(x.verdict == CompleteVerdict::completed);
  REQUIRE(indexes_of(x.events) == Indexes{4});
  f.clock->advance(1000);
  auto again = claim(*f, "s", "w2", {4});
  REQUIRE(claimed(again) == Indexes{2});
  REQUIRE(again.events.front().attempt_count == 2);
  f.clock->advance(10);
  const auto before = observe(*f);

  auto r = complete_many(*f, {done(1, 1), done(2, 1), done(3, 1, {child("x")})});
  using V = CompleteVerdict;
  REQUIRE(verdicts(r) == std::vector<V>{V::completed, V::superseded, V::completed});
  REQUIRE(r.results[0].events.empty());
  REQUIRE(r.results[1].events.empty());
  REQUIRE(r.results[2].events.size() == 1);
  REQUIRE(to_json(r.results[2].events.front()) == to_json(row(*f, "s", 4)));  // Replayed.

  // Only 1 changed.
  auto p = row(*f, "s", 1);
  REQUIRE(p.processed_at == kT0 + 1010);
  REQUIRE(p.processed_by_attempt == 1);
  REQUIRE_FALSE(p.claim_holder.has_value());
  auto after = observe(*f);
  REQUIRE(after["rows"].size() == 4);
  for (std::size_t i = 1; i < 4; ++i) REQUIRE(after["rows"][i] == before["rows"][i]);
  REQUIRE(row(*f, "s", 2).claim_holder == "w2");
  REQUIRE(head_of(*f) == 4);
}

TEST_CASE("a retry of complete_attempts replays every completion and writes nothing",
          "[complete_attempts][S175]") {
  auto f = fresh();
  s173_setup(f);
  auto first = s173_call(*f);
  const auto before = observe(*f);
  f.clock->advance(5000);

  auto again = s173_call(*f);
  REQUIRE(again.results.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    INFO("completion " << i);
    REQUIRE(again.results[i].verdict == CompleteVerdict::completed);
    REQUIRE(again.results[i].events.size() == first.results[i].events.size());
    for (std::size_t k = 0; k < first.results[i].events.size(); ++k)
      REQUIRE(to_json(again.results[i].events[k]) == to_json(first.results[i].events[k]));
  }
  REQUIRE_FALSE(again.next.has_value());
  REQUIRE(observe(*f) == before);
  REQUIRE(head_of(*f) == 6);
}

TEST_CASE("an error of one completion fails the whole call and changes nothing",
          "[complete_attempts][S176]") {
  auto f = fresh();
  given(*f, {ev_id("e1"), ev_id("e2"), ev_id("e3")});
  REQUIRE(claimed(claim(*f)) == Indexes{1, 2, 3});
  REQUIRE(complete(*f, "s", 3, 1, {child("k")}).verdict == CompleteVerdict::completed);
  f.clock->advance(10);
  const auto before = picture(*f);

  SECTION("a child id owned by a live event") {
    require_error(ErrorCode::partial_duplicate_batch, [&] {
      (void)complete_many(*f, {done(1, 1, {child("n1")}), done(2, 1, {child("e1")})});
    });
  }
  SECTION("a child id owned by another completion's stored child") {
    require_error(ErrorCode::partial_duplicate_batch, [&] {
      (void)complete_many(*f, {done(1, 1, {child("n1")}), done(2, 1, {child("k")})});
    });
  }
  SECTION("an index above the head after a valid completion") {
    require_error(ErrorCode::invalid_argument, [&] {
      (void)complete_many(*f, {done(1, 1, {child("n1")}), done(9, 1)});
    });
  }
  SECTION("a replay that does not match") {
    require_error(ErrorCode::partial_duplicate_batch, [&] {
      (void)complete_many(*f, {done(1, 1, {child("n1")}), done(3, 1, {child("other")})});
    });
    require_error(ErrorCode::partial_duplicate_batch, [&] {
      (void)complete_many(*f, {done(1, 1), done(3, 1)});
    });
  }
  SECTION("the first error in list order wins") {
    require_error(ErrorCode::invalid_argument, [&] {
      (void)complete_many(*f, {done(1, 1), done(9, 1), done(2, 1, {child("e1")})});
    });
    require_error(ErrorCode::partial_duplicate_batch, [&] {
      (void)complete_many(*f, {done(1, 1), done(2, 1, {child("e1")}), done(9, 1)});
    });
  }
  SECTION("with a claim_next") {
    require_error(ErrorCode::partial_duplicate_batch, [&] {
      (void)complete_many(*f, {done(1, 1, {child("n1")}), done(2, 1, {child("e1")})},
                          next_for("w2"));
    });
  }
  REQUIRE(picture(*f) == before);
  auto one = row(*f, "s", 1);
  REQUIRE(one.claim_holder == "w1");
  REQUIRE_FALSE(one.processed_at.has_value());
  REQUIRE(head_of(*f) == 4);  // n1 is not written.
}

TEST_CASE("lanes within a batch hand off as with complete_attempt",
          "[complete_attempts][lanes][S177]") {
  auto f = fresh();
  given(*f, {in_lane(ev(), "L"), in_lane(ev(), "L"), ev()});
  REQUIRE(claimed(claim(*f)) == Indexes{1, 3});
  auto r = complete_many(*f, {done(1, 1, {child_in_lane(child("k"), "L")}), done(3, 1)});
  REQUIRE(r.results.size() == 2);
  REQUIRE(r.results[0].verdict == CompleteVerdict::completed);
  REQUIRE(r.results[1].verdict == CompleteVerdict::completed);
  REQUIRE(indexes_of(r.results[0].events) == Indexes{4});
  REQUIRE(r.results[0].events.front().lane == "L");

  REQUIRE(claimed(claim(*f)) == Indexes{2});  // The child waits behind 2.
  REQUIRE(complete(*f, "s", 2, 1).verdict == CompleteVerdict::completed);
  REQUIRE(claimed(claim(*f)) == Indexes{4});

  // The same with two complete_attempt calls gives the same order.
  given(*f, {in_lane(ev(), "L"), in_lane(ev(), "L"), ev()}, "t");
  REQUIRE(claimed(claim(*f, "t")) == Indexes{1, 3});
  REQUIRE(complete(*f, "t", 1, 1, {child_in_lane(child("k2"), "L")}).verdict ==
          CompleteVerdict::completed);
  REQUIRE(complete(*f, "t", 3, 1).verdict == CompleteVerdict::completed);
  REQUIRE(claimed(claim(*f, "t")) == Indexes{2});
}

TEST_CASE("complete_attempt with claim_next claims the next work for the holder",
          "[complete][claim_next][S178]") {
  auto f = fresh();
  given(*f, evs(3));
  REQUIRE(claimed(claim_max(*f, 1)) == Indexes{1});
  f.clock->advance(100);

  SECTION("one event by default") {
    auto r = complete_next(*f, 1, 1, {}, next_for("w1"));
    REQUIRE(r.verdict == CompleteVerdict::completed);
    REQUIRE(r.events.empty());
    REQUIRE(r.next.has_value());
    REQUIRE(claimed(*r.next) == Indexes{2});
    const auto& e = r.next->events.front();
    REQUIRE(e.attempt_count == 1);
    REQUIRE(e.claim_holder == "w1");
    REQUIRE(e.claim_expires_at == kT0 + 100 + kTtl);
    REQUIRE(e.first_claimed_at == kT0 + 100);
    REQUIRE(e.last_claimed_at == kT0 + 100);
    REQUIRE(to_json(row(*f, "s", 2)) == to_json(e));
    REQUIRE(row(*f, "s", 1).processed_by_attempt == 1);
    REQUIRE(row(*f, "s", 3).attempt_count == 0);  // Not claimed.
    REQUIRE(held(*f, "w1") == Held{{2, 1, kT0 + 100 + kTtl}});
  }
  SECTION("max_events 2, with an absolute lease end") {
    ClaimNext next{
        .holder = "w2", .ttl_ms = std::nullopt, .expires_at_ms = kT0 + 7000, .max_events = 2};
    auto r = complete_next(*f, 1, 1, {}, next);
    REQUIRE(r.verdict == CompleteVerdict::completed);
    REQUIRE(r.next.has_value());
    REQUIRE(claimed(*r.next) == Indexes{2, 3});
    for (const auto& e : r.next->events) {
      REQUIRE(e.claim_holder == "w2");
      REQUIRE(e.claim_expires_at == kT0 + 7000);
    }
    REQUIRE(held(*f, "w2") == Held{{2, 1, kT0 + 7000}, {3, 1, kT0 + 7000}});
  }
  SECTION("an unlaned child of the completion is claimable by the same call") {
    REQUIRE(claimed(claim_max(*f, 2)) == Indexes{2, 3});
    auto r = complete_next(*f, 1, 1, {child("c1")}, next_for("w1"));
    REQUIRE(r.verdict == CompleteVerdict::completed);
    REQUIRE(indexes_of(r.events) == Indexes{4});
    REQUIRE(r.next.has_value());
    REQUIRE(claimed(*r.next) == Indexes{4});
    REQUIRE(r.next->events.front().id == "c1");
    REQUIRE(r.next->events.front().cause == EventCause{1, 1});
    REQUIRE(r.next->events.front().attempt_count == 1);
    REQUIRE(r.events.front().attempt_count == 0);  // The child row as written, before the claim.
  }
}

TEST_CASE(
    "claim_next answers busy, settled, claims after a superseded completion, not after an "
    "error",
    "[complete][claim_next][S179]") {
  auto f = fresh();
  SECTION("the rest held: busy with the earliest lease end") {
    given(*f, evs(3));
    REQUIRE(claimed(claim_until(*f, kT0 + 40000, "s", "w2", {1, 3})) == Indexes{2});
    REQUIRE(claimed(claim_until(*f, kT0 + 35000, "s", "w2", {1, 2})) == Indexes{3});
    REQUIRE(claimed(claim(*f)) == Indexes{1});
    auto r = complete_next(*f, 1, 1, {}, next_for());
    REQUIRE(r.verdict == CompleteVerdict::completed);
    REQUIRE(r.next.has_value());
    require_busy(*r.next, kT0 + 35000);
  }
  SECTION("nothing left: settled") {
    given(*f, evs(1));
    REQUIRE(claimed(claim(*f)) == Indexes{1});
    auto r = complete_next(*f, 1, 1, {}, next_for());
    REQUIRE(r.verdict == CompleteVerdict::completed);
    REQUIRE(r.next.has_value());
    REQUIRE(r.next->verdict == ClaimVerdict::settled);
    REQUIRE(r.next->events.empty());
  }
  SECTION("a superseded completion still claims next") {
    given(*f, evs(1));
    REQUIRE(claimed(claim(*f)) == Indexes{1});
    REQUIRE(clear(*f).cleared);
    given(*f, evs(1));  // Index 3, after the marker 2.
    auto r = complete_next(*f, 1, 1, {}, next_for());
    REQUIRE(r.verdict == CompleteVerdict::superseded);
    REQUIRE(r.next.has_value());
    REQUIRE(claimed(*r.next) == Indexes{3});
    REQUIRE(r.next->events.front().clear_index == 2);
    REQUIRE(r.next->events.front().claim_holder == "w1");

    auto many = complete_many(*f, {done(1, 1)}, next_for("w2"));
    REQUIRE(verdicts(many) == std::vector<CompleteVerdict>{CompleteVerdict::superseded});
    REQUIRE(many.next.has_value());
    require_busy(*many.next, kT0 + kTtl);
  }
  SECTION("an error claims nothing") {
    given(*f, {ev_id("e1"), ev()});
    REQUIRE(claimed(claim_max(*f, 1)) == Indexes{1});
    const auto before = picture(*f);
    require_error(ErrorCode::partial_duplicate_batch,
                  [&] { (void)complete_next(*f, 1, 1, {child("e1")}, next_for()); });
    require_error(ErrorCode::invalid_argument,
                  [&] { (void)complete_next(*f, 5, 1, {}, next_for()); });
    REQUIRE(picture(*f) == before);
    REQUIRE(row(*f, "s", 2).attempt_count == 0);
  }
}

TEST_CASE(
    "complete_attempts with claim_next claims after the batch; without completions it is "
    "a bounded claim",
    "[complete_attempts][claim_next][S180]") {
  auto f = fresh();
  given(*f, evs(5));
  REQUIRE(claimed(claim_max(*f, 2)) == Indexes{1, 2});
  f.clock->advance(100);

  auto r = complete_many(*f, {done(1, 1), done(2, 1)}, next_for("w1", 2));
  using V = CompleteVerdict;
  REQUIRE(verdicts(r) == std::vector<V>{V::completed, V::completed});
  REQUIRE(r.next.has_value());
  REQUIRE(claimed(*r.next) == Indexes{3, 4});
  for (const auto& e : r.next->events) {
    REQUIRE(e.claim_holder == "w1");
    REQUIRE(e.attempt_count == 1);
    REQUIRE(e.claim_expires_at == kT0 + 100 + kTtl);
  }
  REQUIRE(held(*f, "w1") == Held{{3, 1, kT0 + 100 + kTtl}, {4, 1, kT0 + 100 + kTtl}});
  REQUIRE(row(*f, "s", 5).attempt_count == 0);

  auto only = complete_many(*f, {}, next_for("w2", 2));
  REQUIRE(only.results.empty());
  REQUIRE(only.next.has_value());
  REQUIRE(claimed(*only.next) == Indexes{5});
  REQUIRE(only.next->events.front().claim_holder == "w2");

  auto none = complete_many(*f, {}, next_for("w2", 2));
  REQUIRE(none.results.empty());
  REQUIRE(none.next.has_value());
  require_busy(*none.next, kT0 + 100 + kTtl);

  auto elsewhere =
      f->complete_attempts({.session_id = "never", .completions = {}, .claim_next = next_for()});
  REQUIRE(elsewhere.results.empty());
  REQUIRE(elsewhere.next.has_value());
  REQUIRE(elsewhere.next->verdict == ClaimVerdict::settled);
}

TEST_CASE("a retry of a completion with claim_next replays the completion, not the claim",
          "[complete][claim_next][held_claims][S181]") {
  auto f = fresh();
  given(*f, evs(3));
  REQUIRE(claimed(claim_max(*f, 1)) == Indexes{1});
  f.clock->advance(10);
  auto first = complete_next(*f, 1, 1, {child("c1")}, next_for());  // Its reply is lost.
  REQUIRE(first.verdict == CompleteVerdict::completed);
  REQUIRE(indexes_of(first.events) == Indexes{4});
  REQUIRE(claimed(*first.next) == Indexes{2});
  const std::int64_t lease = kT0 + 10 + kTtl;
  REQUIRE(held(*f, "w1") == Held{{2, 1, lease}});  // Recovered by held_claims.

  f.clock->advance(10);
  auto retry = complete_next(*f, 1, 1, {child("c1")}, next_for());
  REQUIRE(retry.verdict == CompleteVerdict::completed);
  REQUIRE(retry.events.size() == 1);
  REQUIRE(to_json(retry.events.front()) == to_json(first.events.front()));
  REQUIRE(claimed(*retry.next) == Indexes{3});  // Other work: 2 stays held.
  REQUIRE(held(*f, "w1") == Held{{2, 1, lease}, {3, 1, lease + 10}});
  REQUIRE(row(*f, "s", 2).attempt_count == 1);

  auto batch = complete_many(*f, {done(1, 1, {child("c1")})}, next_for("w1", 2));
  REQUIRE(verdicts(batch) == std::vector<CompleteVerdict>{CompleteVerdict::completed});
  // The replayed row as it was before this call's claim.
  REQUIRE(to_json(batch.results[0].events.front()) == to_json(first.events.front()));
  REQUIRE(claimed(*batch.next) == Indexes{4});  // The child; then nothing else is free.

  auto last = complete_next(*f, 1, 1, {child("c1")}, next_for());
  REQUIRE(last.verdict == CompleteVerdict::completed);
  require_busy(*last.next, lease);
  REQUIRE(head_of(*f) == 4);
  REQUIRE(held(*f, "w1") == Held{{2, 1, lease}, {3, 1, lease + 10}, {4, 1, lease + 10}});
}

}  // namespace a2::conformance
