// SPDX-License-Identifier: MIT
// Conformance scenarios 63-78: complete_attempt (docs/semantics.md#complete_attempt,
// docs/semantics.md#completion-scenarios).

#include <catch2/catch.hpp>

#include "support/children_and_state.hpp"
#include "support/support.hpp"

namespace a2::conformance {
namespace {

TEST_CASE("complete_attempt without children settles the event and releases the claim",
          "[complete][S63]") {
  auto f = fresh();
  (void)f->append("s", {ev()});
  auto c = claim(*f);
  REQUIRE(c.verdict == ClaimVerdict::claimed);
  REQUIRE(indexes_of(c.events) == range(1, 1));
  f.clock->advance(250);

  auto r = complete(*f, "s", 1, 1);
  REQUIRE(r.verdict == CompleteVerdict::completed);
  REQUIRE(r.events.empty());

  auto e = row(*f, "s", 1);
  REQUIRE(e.processed_at == kT0 + 250);
  REQUIRE(e.processed_by_attempt == 1);
  REQUIRE(e.returned_event_ids.has_value());
  REQUIRE(e.returned_event_ids->empty());
  REQUIRE_FALSE(e.claim_holder.has_value());
  REQUIRE_FALSE(e.claim_expires_at.has_value());
  REQUIRE(e.attempt_count == 1);
  REQUIRE(e.first_claimed_at == kT0);
  REQUIRE(e.last_claimed_at == kT0);
  REQUIRE_FALSE(e.failed_at.has_value());
  REQUIRE(e.failure_count == 0);
  REQUIRE_FALSE(has_pending(*f));
  REQUIRE(claim(*f).verdict == ClaimVerdict::settled);
}

TEST_CASE("complete_attempt appends its children after the head with the parent as cause",
          "[complete][S64]") {
  auto f = fresh();
  (void)f->append("s", {ev(), settled(ev()), settled(ev())});
  REQUIRE(indexes_of(claim(*f).events) == range(1, 1));
  f.clock->advance(100);

  auto r =
      complete(*f, "s", 1, 1,
               {child("c1", "child", Json{{"n", 1}}), child("c2", "other", Json::array({1, 2}))});
  REQUIRE(r.verdict == CompleteVerdict::completed);
  REQUIRE(r.events.size() == 2);
  REQUIRE(indexes_of(r.events) == range(4, 5));
  const auto& c1 = r.events[0];
  const auto& c2 = r.events[1];
  REQUIRE(c1.id == "c1");
  REQUIRE(c1.type == "child");
  REQUIRE(c1.payload == Json{{"n", 1}});
  REQUIRE(c2.id == "c2");
  REQUIRE(c2.type == "other");
  REQUIRE(c2.payload == Json::array({1, 2}));
  for (const auto& c : r.events) {
    REQUIRE(c.session_id == "s");
    REQUIRE(c.created_at == kT0 + 100);
    REQUIRE(c.cause == EventCause{1, 1});
    REQUIRE_FALSE(c.lane.has_value());
    REQUIRE_FALSE(c.processed_at.has_value());
    REQUIRE(c.attempt_count == 0);
    REQUIRE(c.failure_count == 0);
    REQUIRE_FALSE(c.claim_holder.has_value());
  }
  // The returned rows are the stored rows.
  REQUIRE(to_json(row(*f, "s", 4)) == to_json(c1));
  REQUIRE(to_json(row(*f, "s", 5)) == to_json(c2));

  auto parent = row(*f, "s", 1);
  REQUIRE(parent.processed_at == kT0 + 100);
  REQUIRE(parent.processed_by_attempt == 1);
  REQUIRE(parent.returned_event_ids == std::vector<std::string>{"c1", "c2"});
  REQUIRE(has_pending(*f));  // The children are pending work.
}

TEST_CASE("complete_attempt replays a lost acknowledgement with the same child ids",
          "[complete][S65]") {
  auto f = fresh();
  (void)f->append("s", {ev(), settled(ev()), settled(ev())});
  REQUIRE(indexes_of(claim(*f).events) == range(1, 1));
  f.clock->advance(100);
  auto first = complete(*f, "s", 1, 1, {child("c1"), child("c2")});
  REQUIRE(first.verdict == CompleteVerdict::completed);
  REQUIRE(indexes_of(first.events) == range(4, 5));
  auto before = observe(*f);

  f.clock->advance(5000);
  auto again = complete(*f, "s", 1, 1, {child("c1"), child("c2")});
  REQUIRE(again.verdict == CompleteVerdict::completed);
  REQUIRE(again.events.size() == 2);
  REQUIRE(to_json(again.events[0]) == to_json(first.events[0]));
  REQUIRE(to_json(again.events[1]) == to_json(first.events[1]));
  REQUIRE(observe(*f) == before);  // Head unchanged, nothing written.
  REQUIRE(indexes_of(f->append("s", {ev_id("next")}).events) == range(6, 6));
}

TEST_CASE("complete_attempt rejects a retry whose children differ from the recorded completion",
          "[complete][S66]") {
  auto f = fresh();
  (void)f->append("s", {ev()});
  REQUIRE(indexes_of(claim(*f).events) == range(1, 1));
  REQUIRE(complete(*f, "s", 1, 1, {child("c1"), child("c2")}).verdict ==
          CompleteVerdict::completed);
  auto before = observe(*f);

  SECTION("a different id") {
    require_error(ErrorCode::partial_duplicate_batch, [&] {
      (void)complete(*f, "s", 1, 1, {child("c1"), child("c3")});
    });
  }
  SECTION("one child fewer") {
    require_error(ErrorCode::partial_duplicate_batch,
                  [&] { (void)complete(*f, "s", 1, 1, {child("c1")}); });
  }
  SECTION("the same ids in another order") {
    require_error(ErrorCode::partial_duplicate_batch, [&] {
      (void)complete(*f, "s", 1, 1, {child("c2"), child("c1")});
    });
  }
  SECTION("no children") {
    require_error(ErrorCode::partial_duplicate_batch, [&] { (void)complete(*f, "s", 1, 1); });
  }
  REQUIRE(observe(*f) == before);
}

// S250: what makes a completion a retry is its child ids and their causes (Q3); the children's
// type, lane, payload, settled flag and delay are not compared, and the stored rows come back.
TEST_CASE("complete_attempt recognises a retry by its child ids alone", "[complete][Q3][S250]") {
  auto f = fresh();
  (void)f->append("s", {ev()});
  REQUIRE(indexes_of(claim(*f).events) == range(1, 1));
  auto first = complete(*f, "s", 1, 1, {child("c1"), child_in_lane(child("c2", "other"), "L")});
  REQUIRE(first.verdict == CompleteVerdict::completed);
  REQUIRE(indexes_of(first.events) == range(2, 3));
  auto before = observe(*f);
  f.clock->advance(100);

  ChildEvent c1 = child_in_lane(child("c1", "renamed", Json{{"n", 2}}), "L2");
  c1.available_at_ms = kT0 + 5000;
  const std::vector<ChildEvent> retry{c1, settled_child(child("c2", "child"))};
  std::vector<StoredEvent> again;
  SECTION("complete_attempt") {
    auto r = complete(*f, "s", 1, 1, retry);
    REQUIRE(r.verdict == CompleteVerdict::completed);
    again = r.events;
  }
  SECTION("complete_attempts") {
    auto r = f->complete_attempts(
        {.session_id = "s", .completions = {{.index = 1, .attempt = 1, .events = retry}}});
    REQUIRE(r.results.size() == 1);
    REQUIRE(r.results[0].verdict == CompleteVerdict::completed);
    again = r.results[0].events;
  }
  REQUIRE(again.size() == 2);
  REQUIRE(to_json(again[0]) == to_json(first.events[0]));
  REQUIRE(to_json(again[1]) == to_json(first.events[1]));
  REQUIRE(observe(*f) == before);
}

TEST_CASE("complete_attempt replays a completion without children", "[complete][S67]") {
  auto f = fresh();
  (void)f->append("s", {ev()});
  REQUIRE(indexes_of(claim(*f).events) == range(1, 1));
  REQUIRE(complete(*f, "s", 1, 1).verdict == CompleteVerdict::completed);
  auto before = observe(*f);
  f.clock->advance(10);

  auto again = complete(*f, "s", 1, 1);
  REQUIRE(again.verdict == CompleteVerdict::completed);
  REQUIRE(again.events.empty());
  REQUIRE(observe(*f) == before);
  // A retry that now brings children does not match the recorded completion.
  require_error(ErrorCode::partial_duplicate_batch,
                [&] { (void)complete(*f, "s", 1, 1, {child("late")}); });
  REQUIRE(observe(*f) == before);
}

TEST_CASE("complete_attempt of an attempt superseded by a re-claim reports superseded",
          "[complete][S68]") {
  auto f = fresh();
  (void)f->append("s", {ev()});
  auto first = claim(*f);
  REQUIRE(indexes_of(first.events) == range(1, 1));
  REQUIRE(first.events.front().attempt_count == 1);
  f.clock->advance(kTtl + 1);
  auto second = claim(*f, "s", "w2");
  REQUIRE(indexes_of(second.events) == range(1, 1));
  REQUIRE(second.events.front().attempt_count == 2);
  auto before = observe(*f);

  auto r = complete(*f, "s", 1, 1, {child("c1")});
  REQUIRE(r.verdict == CompleteVerdict::superseded);
  REQUIRE(r.events.empty());
  REQUIRE(observe(*f) == before);

  // The current attempt still completes, with the child id the stale attempt did not write.
  auto current = complete(*f, "s", 1, 2, {child("c1")});
  REQUIRE(current.verdict == CompleteVerdict::completed);
  REQUIRE(indexes_of(current.events) == range(2, 2));
  REQUIRE(current.events.front().cause == EventCause{1, 2});
  REQUIRE(row(*f, "s", 1).processed_by_attempt == 2);
}

TEST_CASE("complete_attempt succeeds after the lease expired when nobody re-claimed",
          "[complete][S69]") {
  auto f = fresh();
  (void)f->append("s", {ev()});
  REQUIRE(indexes_of(claim(*f).events) == range(1, 1));
  f.clock->advance(kTtl + 1);

  auto r = complete(*f, "s", 1, 1, {child("c1")});
  REQUIRE(r.verdict == CompleteVerdict::completed);
  REQUIRE(indexes_of(r.events) == range(2, 2));
  auto e = row(*f, "s", 1);
  REQUIRE(e.processed_at == kT0 + kTtl + 1);
  REQUIRE(e.processed_by_attempt == 1);
  REQUIRE_FALSE(e.claim_holder.has_value());
  REQUIRE_FALSE(e.claim_expires_at.has_value());
}

TEST_CASE("complete_attempt of an unclaimed, settled or out-of-range event is refused",
          "[complete][S70]") {
  auto f = fresh();
  (void)f->append("s", {ev(), settled(ev())});
  auto before = observe(*f);

  SECTION("unclaimed event, attempt 0") {
    REQUIRE(complete(*f, "s", 1, 0).verdict == CompleteVerdict::superseded);
  }
  SECTION("unclaimed event, attempt 1") {
    REQUIRE(complete(*f, "s", 1, 1, {child("c1")}).verdict == CompleteVerdict::superseded);
  }
  SECTION("settled event, attempt 1") {
    REQUIRE(complete(*f, "s", 2, 1).verdict == CompleteVerdict::superseded);
  }
  SECTION("settled event, attempt 0") {
    require_error(ErrorCode::partial_duplicate_batch, [&] { (void)complete(*f, "s", 2, 0); });
  }
  SECTION("index 0") { REQUIRE(complete(*f, "s", 0, 1).verdict == CompleteVerdict::superseded); }
  SECTION("index above the head") {
    require_error(ErrorCode::invalid_argument, [&] { (void)complete(*f, "s", 3, 1); });
  }
  REQUIRE(observe(*f) == before);
}

TEST_CASE("complete_attempt after a failure of the same attempt or of a dead letter is superseded",
          "[complete][S71]") {
  auto f = fresh();
  (void)f->append("s", {ev()});
  REQUIRE(indexes_of(claim(*f).events) == range(1, 1));
  REQUIRE(fail(*f, "s", 1, 1, 3).verdict == FailVerdict::failed);
  auto before = observe(*f);
  REQUIRE(complete(*f, "s", 1, 1, {child("c1")}).verdict == CompleteVerdict::superseded);
  REQUIRE(observe(*f) == before);

  auto again = claim(*f);
  REQUIRE(indexes_of(again.events) == range(1, 1));
  REQUIRE(again.events.front().attempt_count == 2);
  REQUIRE(fail(*f, "s", 1, 2, 2).verdict == FailVerdict::dead_lettered);
  before = observe(*f);
  REQUIRE(complete(*f, "s", 1, 2, {child("c1")}).verdict == CompleteVerdict::superseded);
  REQUIRE(observe(*f) == before);
}

TEST_CASE("complete_attempt with a child id owned by a live event changes nothing",
          "[complete][S72]") {
  auto f = fresh();
  (void)f->append("s", {settled(ev_id("x")), ev_id("p")});
  (void)f->append("other", {ev_id("y")});
  REQUIRE(indexes_of(claim(*f).events) == range(2, 2));
  auto before = observe(*f);
  auto before_other = observe(*f, "other");

  SECTION("owned by this session") {
    require_error(ErrorCode::partial_duplicate_batch,
                  [&] { (void)complete(*f, "s", 2, 1, {child("x")}); });
  }
  SECTION("owned by another session") {
    require_error(ErrorCode::partial_duplicate_batch,
                  [&] { (void)complete(*f, "s", 2, 1, {child("y")}); });
  }
  SECTION("a new id before an owned one") {
    require_error(ErrorCode::partial_duplicate_batch, [&] {
      (void)complete(*f, "s", 2, 1, {child("fresh"), child("x")});
    });
  }
  REQUIRE(observe(*f) == before);
  REQUIRE(observe(*f, "other") == before_other);
  auto parent = row(*f, "s", 2);
  REQUIRE_FALSE(parent.processed_at.has_value());
  REQUIRE(parent.claim_holder == "w1");
  REQUIRE(parent.claim_expires_at == kT0 + kTtl);
  REQUIRE(parent.attempt_count == 1);
  REQUIRE(f->read("s").size() == 2);  // Head unchanged.
  // The attempt is still current: it completes with free ids, after the unchanged head.
  auto r = complete(*f, "s", 2, 1, {child("fresh")});
  REQUIRE(r.verdict == CompleteVerdict::completed);
  REQUIRE(indexes_of(r.events) == range(3, 3));
}

TEST_CASE("complete_attempt hands the lane to its next event", "[complete][S73]") {
  auto f = fresh();
  (void)f->append("s", {in_lane(ev(), "L"), in_lane(ev(), "L")});
  REQUIRE(indexes_of(claim(*f).events) == range(1, 1));
  REQUIRE(claim(*f).verdict == ClaimVerdict::busy);  // 2 waits behind 1.

  REQUIRE(complete(*f, "s", 1, 1).verdict == CompleteVerdict::completed);
  auto next = claim(*f);
  REQUIRE(next.verdict == ClaimVerdict::claimed);
  REQUIRE(indexes_of(next.events) == range(2, 2));
  REQUIRE(next.events.front().attempt_count == 1);
}

TEST_CASE("complete_attempt queues a child in its lane behind the pending lane events",
          "[complete][S74]") {
  auto f = fresh();
  (void)f->append("s", {in_lane(ev(), "L"), in_lane(ev(), "L")});
  REQUIRE(indexes_of(claim(*f).events) == range(1, 1));

  auto r = complete(*f, "s", 1, 1, {child_in_lane(child("c1"), "L")});
  REQUIRE(r.verdict == CompleteVerdict::completed);
  REQUIRE(indexes_of(r.events) == range(3, 3));
  REQUIRE(r.events.front().lane == "L");

  auto second = claim(*f);
  REQUIRE(indexes_of(second.events) == range(2, 2));
  REQUIRE(claim(*f).verdict == ClaimVerdict::busy);  // The child waits behind 2.
  REQUIRE(complete(*f, "s", 2, 1).verdict == CompleteVerdict::completed);
  auto third = claim(*f);
  REQUIRE(third.verdict == ClaimVerdict::claimed);
  REQUIRE(indexes_of(third.events) == range(3, 3));
  REQUIRE(third.events.front().id == "c1");
}

TEST_CASE("complete_attempt makes a child in its emptied lane immediately claimable",
          "[complete][S75]") {
  auto f = fresh();
  (void)f->append("s", {in_lane(ev(), "L")});
  REQUIRE(indexes_of(claim(*f).events) == range(1, 1));

  auto r = complete(*f, "s", 1, 1, {child_in_lane(child("c1"), "L")});
  REQUIRE(r.verdict == CompleteVerdict::completed);
  auto next = claim(*f);
  REQUIRE(next.verdict == ClaimVerdict::claimed);
  REQUIRE(indexes_of(next.events) == range(2, 2));
  REQUIRE(next.events.front().lane == "L");
}

TEST_CASE("complete_attempt stores a settled child as processed, not pending", "[complete][S76]") {
  auto f = fresh();
  (void)f->append("s", {ev()});
  REQUIRE(indexes_of(claim(*f).events) == range(1, 1));
  f.clock->advance(40);

  auto r = complete(*f, "s", 1, 1, {settled_child(child("fact"))});
  REQUIRE(r.verdict == CompleteVerdict::completed);
  REQUIRE(r.events.size() == 1);
  REQUIRE(r.events.front().index == 2);
  REQUIRE(r.events.front().processed_at == kT0 + 40);
  REQUIRE(r.events.front().created_at == kT0 + 40);
  REQUIRE_FALSE(r.events.front().processed_by_attempt.has_value());
  REQUIRE_FALSE(has_pending(*f));
  REQUIRE(claim(*f).verdict == ClaimVerdict::settled);
}

TEST_CASE("complete_attempt at or below the clear boundary reports superseded", "[complete][S77]") {
  auto f = fresh();
  (void)f->append("s", {ev()});
  REQUIRE(indexes_of(claim(*f).events) == range(1, 1));
  auto c = clear(*f);
  REQUIRE(c.cleared);
  REQUIRE(c.clear_index == 2);
  auto before = observe(*f);

  REQUIRE(complete(*f, "s", 1, 1, {child("c1")}).verdict == CompleteVerdict::superseded);
  REQUIRE(complete(*f, "s", 2, 0).verdict == CompleteVerdict::superseded);  // The marker.
  REQUIRE(complete(*f, "s", 2, 1).verdict == CompleteVerdict::superseded);
  REQUIRE(observe(*f) == before);
  // The child id was not taken: a new event of the session can use it after the marker.
  REQUIRE(indexes_of(f->append("s", {ev_id("c1")}).events) == range(3, 3));
}

TEST_CASE("complete_attempt follows a lane chain across metadata chunks", "[complete][S78]") {
  auto f = fresh();
  (void)f->append("s", settled_evs(998));
  (void)f->append("s", {in_lane(ev(), "L"), ev(), in_lane(ev(), "L")});  // 999, 1000, 1001.
  auto first = claim(*f);
  REQUIRE(indexes_of(first.events) == std::vector<std::int64_t>{999, 1000});

  REQUIRE(complete(*f, "s", 999, 1).verdict == CompleteVerdict::completed);
  auto next = claim(*f);
  REQUIRE(next.verdict == ClaimVerdict::claimed);
  REQUIRE(indexes_of(next.events) == std::vector<std::int64_t>{1001});
  REQUIRE(next.events.front().lane == "L");
}

}  // namespace
}  // namespace a2::conformance
