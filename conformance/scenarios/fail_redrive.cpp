// SPDX-License-Identifier: MIT
// Conformance scenarios 79-92: fail_attempt, dead_letters and redrive 
// (docs/semantics.md#failure-dead-letter-and-redrive-scenarios).

#include <catch2/catch.hpp>

#include "support/children_and_state.hpp"
#include "support/support.hpp"

namespace a2::conformance {
namespace {

// Claims exactly event `index` (REQUIREs that it is the only one claimed) and returns its attempt.
std::int64_t claim_only(Store& store, std::int64_t index, const std::string& holder = "w1") {
  auto c = claim(store, "s", holder);
  REQUIRE(c.verdict == ClaimVerdict::claimed);
  REQUIRE(indexes_of(c.events) == range(index, index));
  return c.events.front().attempt_count;
}

// Dead-letters event `index` (the only claimable one) with one failure.
void dead_letter(Store& store, std::int64_t index, const std::string& error = "boom") {
  auto attempt = claim_only(store, index);
  auto r = fail(store, "s", index, attempt, 1, error);
  REQUIRE(r.verdict == FailVerdict::dead_lettered);
}

TEST_CASE("fail_attempt below max_failures records the failure and keeps the event claimable",
          "[fail][S79]") {
  auto f = fresh();
  (void)f->append("s", {ev()});
  REQUIRE(claim_only(*f, 1) == 1);
  f.clock->advance(500);

  auto r = fail(*f, "s", 1, 1, 3, "it broke");
  REQUIRE(r.verdict == FailVerdict::failed);
  REQUIRE(r.failure_count == 1);
  auto e = row(*f, "s", 1);
  REQUIRE(e.failure_count == 1);
  REQUIRE_FALSE(e.claim_holder.has_value());
  REQUIRE_FALSE(e.claim_expires_at.has_value());
  REQUIRE(e.last_error == "it broke");
  REQUIRE(e.last_failed_at == kT0 + 500);
  REQUIRE(e.last_failed_attempt == 1);
  REQUIRE_FALSE(e.failed_at.has_value());
  REQUIRE_FALSE(e.processed_at.has_value());
  REQUIRE(e.attempt_count == 1);
  REQUIRE(f->dead_letters("s").empty());
  REQUIRE(has_pending(*f));

  f.clock->advance(10);  // Claimable again at once: no backoff.
  auto again = claim(*f);
  REQUIRE(again.verdict == ClaimVerdict::claimed);
  REQUIRE(indexes_of(again.events) == range(1, 1));
  const auto& c = again.events.front();
  REQUIRE(c.attempt_count == 2);
  REQUIRE(c.failure_count == 1);
  REQUIRE(c.last_error == "it broke");
  REQUIRE(c.last_failed_at == kT0 + 500);
  REQUIRE(c.last_failed_attempt == 1);
  REQUIRE(c.first_claimed_at == kT0);
  REQUIRE(c.last_claimed_at == kT0 + 510);
}

TEST_CASE("fail_attempt replays a lost acknowledgement of a failure", "[fail][S80]") {
  auto f = fresh();
  (void)f->append("s", {ev()});
  REQUIRE(claim_only(*f, 1) == 1);
  REQUIRE(fail(*f, "s", 1, 1, 3, "first").verdict == FailVerdict::failed);
  auto before = observe(*f);
  f.clock->advance(700);

  auto r = fail(*f, "s", 1, 1, 3, "second");
  REQUIRE(r.verdict == FailVerdict::failed);
  REQUIRE(r.failure_count == 1);
  REQUIRE(observe(*f) == before);
  REQUIRE(row(*f, "s", 1).last_error == "first");
}

TEST_CASE("fail_attempt dead-letters the event at max_failures", "[fail][dead_letters][S81]") {
  auto f = fresh();
  (void)f->append("s", {ev()});
  for (std::int64_t attempt = 1; attempt <= 2; ++attempt) {
    REQUIRE(claim_only(*f, 1) == attempt);
    auto r = fail(*f, "s", 1, attempt, 3);
    REQUIRE(r.verdict == FailVerdict::failed);
    REQUIRE(r.failure_count == attempt);
  }
  REQUIRE(claim_only(*f, 1) == 3);
  f.clock->advance(900);

  auto r = fail(*f, "s", 1, 3, 3, "third");
  REQUIRE(r.verdict == FailVerdict::dead_lettered);
  REQUIRE(r.failure_count == 3);
  auto e = row(*f, "s", 1);
  REQUIRE(e.failed_at == kT0 + 900);
  REQUIRE(e.failure_count == 3);
  REQUIRE(e.last_failed_attempt == 3);
  REQUIRE(e.last_error == "third");
  REQUIRE_FALSE(e.processed_at.has_value());
  REQUIRE_FALSE(e.claim_holder.has_value());
  REQUIRE_FALSE(e.claim_expires_at.has_value());

  REQUIRE(claim(*f).verdict == ClaimVerdict::settled);
  auto dead = f->dead_letters("s");
  REQUIRE(dead.size() == 1);
  REQUIRE(to_json(dead.front()) == to_json(e));
  REQUIRE(has_pending(*f));
}

TEST_CASE("fail_attempt replays the dead-lettering failure", "[fail][S82]") {
  auto f = fresh();
  (void)f->append("s", {ev()});
  for (std::int64_t attempt = 1; attempt <= 3; ++attempt) {
    REQUIRE(claim_only(*f, 1) == attempt);
    (void)fail(*f, "s", 1, attempt, 3);
  }
  REQUIRE(row(*f, "s", 1).failed_at.has_value());
  auto before = observe(*f);
  f.clock->advance(100);

  auto r = fail(*f, "s", 1, 3, 3, "retry");
  REQUIRE(r.verdict == FailVerdict::dead_lettered);
  REQUIRE(r.failure_count == 3);
  REQUIRE(observe(*f) == before);
}

TEST_CASE("fail_attempt of a stale attempt or a completed event reports superseded",
          "[fail][S83]") {
  auto f = fresh();
  (void)f->append("s", {ev()});
  REQUIRE(claim_only(*f, 1) == 1);
  REQUIRE(fail(*f, "s", 1, 1, 3).verdict == FailVerdict::failed);
  REQUIRE(claim_only(*f, 1) == 2);
  auto before = observe(*f);

  SECTION("a stale attempt") {
    auto r = fail(*f, "s", 1, 1, 3, "late");
    REQUIRE(r.verdict == FailVerdict::superseded);
    REQUIRE(r.failure_count == 1);
    REQUIRE(observe(*f) == before);
  }
  SECTION("a stale attempt after its lease was re-claimed") {
    f.clock->advance(kTtl + 1);
    REQUIRE(claim_only(*f, 1, "w2") == 3);
    before = observe(*f);
    auto r = fail(*f, "s", 1, 2, 3, "late");
    REQUIRE(r.verdict == FailVerdict::superseded);
    REQUIRE(r.failure_count == 1);
    REQUIRE(observe(*f) == before);
  }
  SECTION("after completion") {
    REQUIRE(complete(*f, "s", 1, 2).verdict == CompleteVerdict::completed);
    before = observe(*f);
    auto r = fail(*f, "s", 1, 2, 3, "late");
    REQUIRE(r.verdict == FailVerdict::superseded);
    REQUIRE(r.failure_count == 1);
    REQUIRE(observe(*f) == before);
  }
}

TEST_CASE("fail_attempt of a never-claimed event reports superseded", "[fail][S84]") {
  auto f = fresh();
  (void)f->append("s", {ev()});
  auto before = observe(*f);

  SECTION("attempt 0") {
    auto r = fail(*f, "s", 1, 0, 3);
    REQUIRE(r.verdict == FailVerdict::superseded);
    REQUIRE(r.failure_count == 0);
  }
  SECTION("attempt 1") {
    auto r = fail(*f, "s", 1, 1, 3);
    REQUIRE(r.verdict == FailVerdict::superseded);
    REQUIRE(r.failure_count == 0);
  }
  REQUIRE(observe(*f) == before);
}

TEST_CASE("fail_attempt above the head throws and at or below the boundary is superseded",
          "[fail][S85]") {
  auto f = fresh();
  (void)f->append("s", {ev(), ev()});
  auto c = claim(*f);
  REQUIRE(indexes_of(c.events) == range(1, 2));
  require_error(ErrorCode::invalid_argument, [&] { (void)fail(*f, "s", 3, 1, 3); });
  REQUIRE(fail(*f, "s", 1, 1, 3).verdict == FailVerdict::failed);
  REQUIRE(claim_only(*f, 1) == 2);

  auto cl = clear(*f);
  REQUIRE(cl.cleared);
  REQUIRE(cl.clear_index == 3);
  auto before = observe(*f);

  auto old = fail(*f, "s", 1, 2, 3);  // It had one failure: the count is not reported.
  REQUIRE(old.verdict == FailVerdict::superseded);
  REQUIRE(old.failure_count == 0);
  auto other = fail(*f, "s", 2, 1, 3);
  REQUIRE(other.verdict == FailVerdict::superseded);
  REQUIRE(other.failure_count == 0);
  auto marker = fail(*f, "s", 3, 0, 3);
  REQUIRE(marker.verdict == FailVerdict::superseded);
  REQUIRE(marker.failure_count == 0);
  require_error(ErrorCode::invalid_argument, [&] { (void)fail(*f, "s", 4, 1, 3); });
  REQUIRE(observe(*f) == before);
}

TEST_CASE("fail_attempt with max_failures 1 dead-letters on the first failure", "[fail][S86]") {
  auto f = fresh();
  (void)f->append("s", {ev()});
  REQUIRE(claim_only(*f, 1) == 1);
  f.clock->advance(20);

  std::int64_t max_failures = 1;
  SECTION("max_failures 1") { max_failures = 1; }
  SECTION("max_failures 0 (Q21: taken as given)") { max_failures = 0; }
  auto r = fail(*f, "s", 1, 1, max_failures);
  REQUIRE(r.verdict == FailVerdict::dead_lettered);
  REQUIRE(r.failure_count == 1);
  auto e = row(*f, "s", 1);
  REQUIRE(e.failed_at == kT0 + 20);
  REQUIRE(e.failure_count == 1);
  REQUIRE(indexes_of(f->dead_letters("s")) == range(1, 1));
  REQUIRE(claim(*f).verdict == ClaimVerdict::settled);
}

TEST_CASE("fail_attempt dead-lettering a lane head blocks the lane until redrive skip",
          "[fail][redrive][S87]") {
  auto f = fresh();
  (void)f->append("s", {in_lane(ev(), "L"), in_lane(ev(), "L")});
  dead_letter(*f, 1);
  REQUIRE(claim(*f).verdict == ClaimVerdict::settled);

  auto r = redrive(*f, "s", 1, RedriveAction::skip);
  REQUIRE(r.redriven);
  REQUIRE(r.has_pending);
  auto next = claim(*f);
  REQUIRE(next.verdict == ClaimVerdict::claimed);
  REQUIRE(indexes_of(next.events) == range(2, 2));
}

TEST_CASE("dead_letters lists the current lifetime's dead letters with full metadata",
          "[dead_letters][S88]") {
  auto f = fresh();
  (void)f->append("s", {ev(), ev()});
  REQUIRE(indexes_of(claim(*f).events) == range(1, 2));
  REQUIRE(fail(*f, "s", 1, 1, 1).verdict == FailVerdict::dead_lettered);
  REQUIRE(fail(*f, "s", 2, 1, 1).verdict == FailVerdict::dead_lettered);
  REQUIRE(indexes_of(f->dead_letters("s")) == range(1, 2));

  auto cl = clear(*f);
  REQUIRE(cl.clear_index == 3);
  REQUIRE(f->dead_letters("s").empty());

  (void)f->append("s", {ev(), ev(), ev(), ev()});  // 4..7
  REQUIRE(indexes_of(claim(*f).events) == range(4, 7));
  f.clock->advance(10);
  REQUIRE(fail(*f, "s", 7, 1, 1, "seven").verdict == FailVerdict::dead_lettered);
  f.clock->advance(10);
  REQUIRE(fail(*f, "s", 6, 1, 1, "six").verdict == FailVerdict::dead_lettered);
  f.clock->advance(10);
  REQUIRE(fail(*f, "s", 4, 1, 2, "four-a").verdict == FailVerdict::failed);
  REQUIRE(claim_only(*f, 4) == 2);
  f.clock->advance(10);
  REQUIRE(fail(*f, "s", 4, 2, 2, "four-b").verdict == FailVerdict::dead_lettered);
  REQUIRE(complete(*f, "s", 5, 1).verdict == CompleteVerdict::completed);
  REQUIRE(redrive(*f, "s", 6, RedriveAction::skip).redriven);

  auto dead = f->dead_letters("s");
  REQUIRE(indexes_of(dead) == std::vector<std::int64_t>{4, 7});
  REQUIRE(to_json(dead[0]) == to_json(row(*f, "s", 4)));
  REQUIRE(to_json(dead[1]) == to_json(row(*f, "s", 7)));
  const auto& four = dead[0];
  REQUIRE(four.session_id == "s");
  REQUIRE(four.failed_at == kT0 + 40);
  REQUIRE(four.failure_count == 2);
  REQUIRE(four.attempt_count == 2);
  REQUIRE(four.last_error == "four-b");
  REQUIRE(four.last_failed_at == kT0 + 40);
  REQUIRE(four.last_failed_attempt == 2);
  REQUIRE(four.first_claimed_at == kT0);
  REQUIRE(four.last_claimed_at == kT0 + 30);
  REQUIRE_FALSE(four.processed_at.has_value());
  REQUIRE_FALSE(four.claim_holder.has_value());
  REQUIRE_FALSE(four.claim_expires_at.has_value());
  const auto& seven = dead[1];
  REQUIRE(seven.failed_at == kT0 + 10);
  REQUIRE(seven.failure_count == 1);
  REQUIRE(seven.last_error == "seven");
  REQUIRE(seven.last_failed_attempt == 1);
  REQUIRE(seven.attempt_count == 1);
}

TEST_CASE("redrive retry makes a dead letter claimable with a fresh failure budget",
          "[redrive][S89]") {
  auto f = fresh();
  (void)f->append("s", {ev()});
  REQUIRE(claim_only(*f, 1) == 1);
  REQUIRE(fail(*f, "s", 1, 1, 2, "one").verdict == FailVerdict::failed);
  REQUIRE(claim_only(*f, 1) == 2);
  f.clock->advance(50);
  REQUIRE(fail(*f, "s", 1, 2, 2, "two").verdict == FailVerdict::dead_lettered);
  f.clock->advance(50);

  auto r = redrive(*f, "s", 1, RedriveAction::retry);
  REQUIRE(r.redriven);
  REQUIRE(r.has_pending);
  auto e = row(*f, "s", 1);
  REQUIRE_FALSE(e.failed_at.has_value());
  REQUIRE(e.failure_count == 0);
  REQUIRE(e.last_error == "two");
  REQUIRE(e.last_failed_at == kT0 + 50);
  REQUIRE(e.last_failed_attempt == 2);
  REQUIRE(e.attempt_count == 2);
  REQUIRE_FALSE(e.processed_at.has_value());
  REQUIRE(f->dead_letters("s").empty());
  REQUIRE(has_pending(*f));

  REQUIRE(claim_only(*f, 1) == 3);
  auto first = fail(*f, "s", 1, 3, 2);
  REQUIRE(first.verdict == FailVerdict::failed);
  REQUIRE(first.failure_count == 1);
  REQUIRE(claim_only(*f, 1) == 4);
  auto second = fail(*f, "s", 1, 4, 2);
  REQUIRE(second.verdict == FailVerdict::dead_lettered);
  REQUIRE(second.failure_count == 2);
}

TEST_CASE("redrive retry of a dead lane head makes it the lane's claimable event",
          "[redrive][S89]") {
  auto f = fresh();
  (void)f->append("s", {in_lane(ev(), "L"), in_lane(ev(), "L")});
  dead_letter(*f, 1);
  REQUIRE(claim(*f).verdict == ClaimVerdict::settled);
  REQUIRE(redrive(*f, "s", 1, RedriveAction::retry).redriven);
  REQUIRE(claim_only(*f, 1) == 2);
  REQUIRE(claim(*f).verdict == ClaimVerdict::busy);  // 2 still waits behind 1.
}

TEST_CASE("redrive skip settles a dead letter and keeps its failure record", "[redrive][S90]") {
  auto f = fresh();
  (void)f->append("s", {ev()});
  dead_letter(*f, 1, "fatal");
  auto dead_at = row(*f, "s", 1).failed_at;
  REQUIRE(dead_at == kT0);
  f.clock->advance(75);

  auto r = redrive(*f, "s", 1, RedriveAction::skip);
  REQUIRE(r.redriven);
  REQUIRE_FALSE(r.has_pending);
  auto e = row(*f, "s", 1);
  REQUIRE(e.processed_at == kT0 + 75);
  REQUIRE(e.failed_at == dead_at);
  REQUIRE_FALSE(e.processed_by_attempt.has_value());
  REQUIRE_FALSE(e.returned_event_ids.has_value());
  REQUIRE(e.failure_count == 1);
  REQUIRE(e.last_error == "fatal");
  REQUIRE(f->dead_letters("s").empty());
  REQUIRE_FALSE(has_pending(*f));
  REQUIRE(claim(*f).verdict == ClaimVerdict::settled);
}

TEST_CASE("redrive skip reports pending work that remains", "[redrive][S90]") {
  auto f = fresh();
  (void)f->append("s", {ev(), settled(ev())});
  dead_letter(*f, 1);
  (void)f->append("s", {ev()});
  auto r = redrive(*f, "s", 1, RedriveAction::skip);
  REQUIRE(r.redriven);
  REQUIRE(r.has_pending);
}

TEST_CASE("redrive of anything but a dead letter of the current lifetime changes nothing",
          "[redrive][S91]") {
  auto f = fresh();
  // 1 dead letter of the old lifetime, marker 2, then 3 pending, 4 claimed, 5 failed once,
  // 6 settled, 7 completed, 8 skipped dead letter, 9 dead letter (the control), 10 lane-blocked.
  (void)f->append("s", {ev()});
  dead_letter(*f, 1);
  REQUIRE(clear(*f).clear_index == 2);
  (void)f->append("s", {in_lane(ev(), "A"), ev(), ev(), settled(ev()), ev(), ev(), ev()});
  (void)f->append("s", {in_lane(ev(), "A")});  // 10: pending behind 3 in lane A.
  auto c = claim(*f);
  REQUIRE(indexes_of(c.events) == std::vector<std::int64_t>{3, 4, 5, 7, 8, 9});
  REQUIRE(fail(*f, "s", 3, 1, 3).verdict == FailVerdict::failed);  // A failed lane head.
  REQUIRE(fail(*f, "s", 5, 1, 3).verdict == FailVerdict::failed);
  REQUIRE(complete(*f, "s", 7, 1).verdict == CompleteVerdict::completed);
  REQUIRE(fail(*f, "s", 8, 1, 1).verdict == FailVerdict::dead_lettered);
  REQUIRE(fail(*f, "s", 9, 1, 1).verdict == FailVerdict::dead_lettered);
  REQUIRE(redrive(*f, "s", 8, RedriveAction::skip).redriven);
  auto before = observe(*f);

  auto action = GENERATE(RedriveAction::retry, RedriveAction::skip);
  INFO("action " << to_string(action));
  for (std::int64_t index : {0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12}) {
    INFO("index " << index);
    auto r = redrive(*f, "s", index, action);
    REQUIRE_FALSE(r.redriven);
    REQUIRE(r.has_pending);  // 3, 4, 5, 9 and 10 are pending.
    REQUIRE(observe(*f) == before);
  }
  // The control: 9 is a dead letter of the current lifetime.
  REQUIRE(redrive(*f, "s", 9, action).redriven);
}

TEST_CASE("redrive skip twice reports the second as not redriven", "[redrive][S91]") {
  auto f = fresh();
  (void)f->append("s", {ev()});
  dead_letter(*f, 1);
  REQUIRE(redrive(*f, "s", 1, RedriveAction::skip).redriven);
  auto before = observe(*f);
  f.clock->advance(5);
  auto again = redrive(*f, "s", 1, RedriveAction::skip);
  REQUIRE_FALSE(again.redriven);
  REQUIRE_FALSE(again.has_pending);
  auto retry = redrive(*f, "s", 1, RedriveAction::retry);
  REQUIRE_FALSE(retry.redriven);
  REQUIRE(observe(*f) == before);
}

TEST_CASE("fail_attempt dead-lettering releases the event's snapshot pins", "[fail][S92]") {
  auto f = fresh();
  // Events 1..10; 7 and 8 are pending, the rest settled.
  (void)f->append("s", settled_evs(6));
  (void)f->append("s", {ev(), ev()});
  (void)f->append("s", settled_evs(2));
  // Checkpoint 5 pinned by 7 and 8, checkpoint 6 pinned by 8 only; then head 9.
  f->put_snapshots("s", "r", {snap(5, "five", {7, 8}), snap(6, "six", {8})});
  f->put_snapshots("s", "r", {snap(9, "nine")});
  REQUIRE(snapshot_index(state(*f, "s", "r", std::nullopt, 7)) == 6);
  REQUIRE(snapshot_index(state(*f, "s", "r", std::nullopt, 5)) == 5);

  REQUIRE(indexes_of(claim(*f).events) == range(7, 8));
  REQUIRE(fail(*f, "s", 8, 1, 2).verdict == FailVerdict::failed);
  // A failure that does not dead-letter keeps the pins.
  REQUIRE(snapshot_index(state(*f, "s", "r", std::nullopt, 7)) == 6);

  REQUIRE(claim_only(*f, 8) == 2);
  REQUIRE(fail(*f, "s", 8, 2, 2).verdict == FailVerdict::dead_lettered);
  auto capped = state(*f, "s", "r", std::nullopt, 7);
  REQUIRE(capped.head_index == 9);
  REQUIRE(capped.snapshot.has_value());
  REQUIRE(capped.snapshot->index == 5);  // 6 is gone; 5 is still pinned by 7.
  REQUIRE(capped.snapshot->state == "five");
  REQUIRE(indexes_of(capped.events) == range(6, 10));
  auto head = state(*f, "s", "r");
  REQUIRE(snapshot_index(head) == 9);
  REQUIRE(head.snapshot->state == "nine");
}

}  // namespace
}  // namespace a2::conformance
