// SPDX-License-Identifier: MIT
// docs/semantics.md#clear-scenarios: clear (scenarios 106-119).

#include <catch2/catch.hpp>

#include "support/lifecycle.hpp"
#include "support/support.hpp"

namespace a2::conformance {
namespace {

void require_clear(const ClearResult& r, bool cleared, std::int64_t index,
                   std::int64_t clear_index) {
  CHECK(r.cleared == cleared);
  CHECK(r.index == index);
  CHECK(r.clear_index == clear_index);
  REQUIRE((r.cleared == cleared && r.index == index && r.clear_index == clear_index));
}

TEST_CASE("clear of an empty session reports cleared at 0 and creates no event", "[clear][S106]") {
  auto f = fresh();
  require_clear(clear(*f), true, 0, 0);
  REQUIRE(f->read("s").empty());
  REQUIRE_FALSE(has_pending(*f));
  auto appended = f->append("s", {ev_id("a")});
  REQUIRE(appended.events.size() == 1);
  REQUIRE(appended.events[0].index == 1);
}

TEST_CASE("clear appends a settled marker at head+1 and hides the old lifetime", "[clear][S107]") {
  auto f = fresh();
  (void)f->append("s", {ev_id("a"), in_lane(ev_id("b"), "L"), settled(ev_id("c"))});
  f.clock->advance(5);
  require_clear(clear(*f), true, 4, 4);

  auto rows = f->read("s");
  REQUIRE(rows.size() == 1);
  const auto& m = rows[0];
  CHECK(m.session_id == "s");
  CHECK(m.index == 4);
  CHECK(m.type == kClearEventType);
  CHECK(m.payload.is_null());
  CHECK_FALSE(m.cause.has_value());
  CHECK_FALSE(m.lane.has_value());
  CHECK(m.created_at == kT0 + 5);
  REQUIRE(m.processed_at.has_value());
  CHECK(*m.processed_at == kT0 + 5);
  CHECK(m.id == "g1");  // The first id drawn from the IdSource (the events had caller ids).
  CHECK(m.attempt_count == 0);
  CHECK(m.failure_count == 0);
  auto history = f->read_history("s");
  REQUIRE(history.size() == 1);
  REQUIRE(history[0].index == 4);
  REQUIRE_FALSE(has_pending(*f));
}

TEST_CASE("clear of a session whose last event is the marker adds no second marker",
          "[clear][S108]") {
  auto f = fresh();
  (void)f->append("s", {ev_id("a"), ev_id("b"), ev_id("c")});
  require_clear(clear(*f), true, 4, 4);
  auto before = observe(*f);
  f.clock->advance(10);
  require_clear(clear(*f), true, 4, 4);
  REQUIRE(observe(*f) == before);
  REQUIRE(f->read("s").size() == 1);
  // The next event still follows the one marker.
  REQUIRE(f->append("s", {ev_id("d")}).events.at(0).index == 5);
}

TEST_CASE("clear with if_last_index clears only when the head matches", "[clear][S109]") {
  auto f = fresh();
  (void)f->append("s", {ev_id("a"), ev_id("b"), ev_id("c")});
  SECTION("a stale if_last_index reports not cleared and changes nothing") {
    auto before = observe(*f);
    require_clear(clear(*f, "s", 2), false, 3, 0);
    REQUIRE(observe(*f) == before);
    REQUIRE(f->read("s").size() == 3);
  }
  SECTION("the current head clears") {
    require_clear(clear(*f, "s", 3), true, 4, 4);
    auto rows = f->read("s");
    REQUIRE(rows.size() == 1);
    REQUIRE(rows[0].type == kClearEventType);
  }
}

TEST_CASE("clear retried with the same if_last_index reports the earlier clear", "[clear][S110]") {
  auto f = fresh();
  (void)f->append("s", {ev_id("a"), ev_id("b"), ev_id("c")});
  require_clear(clear(*f, "s", 3), true, 4, 4);
  auto before = observe(*f);
  require_clear(clear(*f, "s", 3), true, 4, 4);
  REQUIRE(observe(*f) == before);

  (void)f->append("s", {ev_id("d"), ev_id("e")});
  before = observe(*f);
  require_clear(clear(*f, "s", 3), true, 6, 4);
  REQUIRE(observe(*f) == before);
  REQUIRE(indexes_of(f->read("s")) == range(4, 6));
}

TEST_CASE("clear with the current cause supersedes the clearing attempt", "[clear][S111]") {
  auto f = fresh();
  (void)f->append("s", {ev_id("a"), ev_id("b")});
  auto c = claim(*f);
  REQUIRE(c.verdict == ClaimVerdict::claimed);
  REQUIRE(indexes_of(c.events) == std::vector<std::int64_t>{1, 2});
  require_clear(clear(*f, "s", std::nullopt, EventCause{1, 1}), true, 3, 3);

  REQUIRE(complete(*f, "s", 1, 1).verdict == CompleteVerdict::superseded);
  auto renewed = f->renew_claims({.session_id = "s",
                                  .holder = "w1",
                                  .claims = {{1, 1}, {2, 1}},
                                  .ttl_ms = kTtl,
                                  .expires_at_ms = std::nullopt});
  REQUIRE(renewed.renewed.empty());
  auto superseded = renewed.superseded;
  std::sort(superseded.begin(), superseded.end());
  REQUIRE(superseded == std::vector<std::int64_t>{1, 2});
  auto failed = fail(*f, "s", 1, 1);
  REQUIRE(failed.verdict == FailVerdict::superseded);
  REQUIRE(failed.failure_count == 0);
  REQUIRE(claim(*f).verdict == ClaimVerdict::settled);
  REQUIRE(complete(*f, "s", 2, 1).verdict == CompleteVerdict::superseded);
  REQUIRE(indexes_of(f->read("s")) == std::vector<std::int64_t>{3});
}

TEST_CASE("clear with a stale cause throws and changes nothing", "[clear][S112]") {
  auto f = fresh();
  (void)f->append("s", {ev_id("a"), ev_id("b")});
  REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);
  f.clock->advance(kTtl + 1);
  auto again = claim(*f, "s", "w2");
  REQUIRE(again.verdict == ClaimVerdict::claimed);
  REQUIRE(again.events.at(0).attempt_count == 2);
  auto before = observe(*f);

  SECTION("an attempt that was re-claimed") {
    require_error(ErrorCode::superseded_attempt, [&] {
      (void)clear(*f, "s", std::nullopt, EventCause{1, 1});
    });
  }
  SECTION("the same, with if_last_index at the head") {
    require_error(ErrorCode::superseded_attempt, [&] {
      (void)clear(*f, "s", 2, EventCause{1, 1});
    });
  }
  SECTION("a cause above the head") {
    require_error(ErrorCode::invalid_argument, [&] {
      (void)clear(*f, "s", std::nullopt, EventCause{5, 1});
    });
  }
  SECTION("a cause at index 0 of a never-cleared session (Q8)") {
    require_error(ErrorCode::superseded_attempt, [&] {
      (void)clear(*f, "s", std::nullopt, EventCause{0, 0});
    });
  }
  SECTION("a dead-lettered cause") {
    REQUIRE(fail(*f, "s", 1, 2, 1).verdict == FailVerdict::dead_lettered);
    before = observe(*f);
    require_error(ErrorCode::superseded_attempt, [&] {
      (void)clear(*f, "s", std::nullopt, EventCause{1, 2});
    });
  }
  REQUIRE(observe(*f) == before);
}

TEST_CASE("clear retried with its cause throws superseded_attempt", "[clear][S113]") {
  auto f = fresh();
  (void)f->append("s", {ev_id("a")});
  REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);
  SECTION("without if_last_index") {
    require_clear(clear(*f, "s", std::nullopt, EventCause{1, 1}), true, 2, 2);
    auto before = observe(*f);
    require_error(ErrorCode::superseded_attempt, [&] {
      (void)clear(*f, "s", std::nullopt, EventCause{1, 1});
    });
    REQUIRE(observe(*f) == before);
  }
  SECTION("with if_last_index (causes are checked first, Q15)") {
    require_clear(clear(*f, "s", 1, EventCause{1, 1}), true, 2, 2);
    auto before = observe(*f);
    require_error(ErrorCode::superseded_attempt, [&] {
      (void)clear(*f, "s", 1, EventCause{1, 1});
    });
    REQUIRE(observe(*f) == before);
  }
}

TEST_CASE("clear drops the old lifetime's pending work and dead letters", "[clear][S114]") {
  auto f = fresh();
  (void)f->append("s", {ev_id("a"), ev_id("b"), ev_id("c")});
  REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);
  REQUIRE(fail(*f, "s", 1, 1, 1).verdict == FailVerdict::dead_lettered);
  REQUIRE(indexes_of(f->dead_letters("s")) == std::vector<std::int64_t>{1});
  REQUIRE(has_pending(*f));

  require_clear(clear(*f), true, 4, 4);
  REQUIRE_FALSE(has_pending(*f));
  REQUIRE(f->dead_letters("s").empty());
  auto before = observe(*f);
  auto retried = redrive(*f, "s", 1, RedriveAction::retry);
  REQUIRE_FALSE(retried.redriven);
  REQUIRE_FALSE(retried.has_pending);
  auto skipped = redrive(*f, "s", 1, RedriveAction::skip);
  REQUIRE_FALSE(skipped.redriven);
  REQUIRE_FALSE(skipped.has_pending);
  REQUIRE(observe(*f) == before);
  REQUIRE(claim(*f).verdict == ClaimVerdict::settled);
}

TEST_CASE("clear frees the lanes of the old lifetime", "[clear][S115]") {
  auto f = fresh();
  (void)f->append("s", {in_lane(ev_id("a"), "L"), in_lane(ev_id("b"), "L")});
  SECTION("the old head was claimed") {
    auto c = claim(*f);
    REQUIRE(indexes_of(c.events) == std::vector<std::int64_t>{1});
  }
  SECTION("the old head was dead-lettered") {
    REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);
    REQUIRE(fail(*f, "s", 1, 1, 1).verdict == FailVerdict::dead_lettered);
    REQUIRE(claim(*f).verdict == ClaimVerdict::settled);
  }
  SECTION("the old head was never claimed") {}
  require_clear(clear(*f), true, 3, 3);
  auto appended = f->append("s", {in_lane(ev_id("c"), "L"), in_lane(ev_id("d"), "L")});
  REQUIRE(indexes_of(appended.events) == std::vector<std::int64_t>{4, 5});
  auto c = claim(*f, "s", "w2");
  REQUIRE(c.verdict == ClaimVerdict::claimed);
  REQUIRE(indexes_of(c.events) == std::vector<std::int64_t>{4});
}

TEST_CASE("clear lets the session reuse old ids while other sessions wait for reclaim",
          "[clear][S116]") {
  auto f = fresh();
  (void)f->append("s", {ev_id("a"), ev_id("b"), ev_id("c")});
  require_clear(clear(*f), true, 4, 4);

  auto next = f->append("s", {ev_id("d")});
  REQUIRE(next.events.at(0).index == 5);
  auto reused = f->append("s", {ev_id("a"), ev_id("b")});
  REQUIRE(indexes_of(reused.events) == std::vector<std::int64_t>{6, 7});
  auto replay = f->append("s", {ev_id("a"), ev_id("b")});
  REQUIRE(indexes_of(replay.events) == std::vector<std::int64_t>{6, 7});
  REQUIRE(replay.events[0].id == "a");
  REQUIRE(indexes_of(f->read("s")) == range(4, 7));

  auto s2_before = observe(*f, "s2");
  // "c" was not reused: still owned by the old event until reclaim deletes it.
  require_error(ErrorCode::partial_duplicate_batch, [&] { (void)f->append("s2", {ev_id("c")}); });
  // "a" now belongs to the new event 6.
  require_error(ErrorCode::partial_duplicate_batch, [&] { (void)f->append("s2", {ev_id("a")}); });
  REQUIRE(observe(*f, "s2") == s2_before);

  (void)reclaim_all(*f);
  auto moved = f->append("s2", {ev_id("c")});
  REQUIRE(moved.events.at(0).index == 1);
  require_error(ErrorCode::partial_duplicate_batch, [&] { (void)f->append("s2", {ev_id("a")}); });
}

TEST_CASE("clear supersedes appends caused by the old lifetime", "[clear][S117]") {
  auto f = fresh();
  (void)f->append("s", {ev_id("a")});
  REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);
  require_clear(clear(*f), true, 2, 2);
  auto before = observe(*f);
  SECTION("a cause below the boundary") {
    require_error(ErrorCode::superseded_attempt,
                  [&] { (void)f->append("s", {caused(ev_id("x"), 1, 1)}); });
  }
  SECTION("a cause at the marker") {
    require_error(ErrorCode::superseded_attempt,
                  [&] { (void)f->append("s", {caused(ev_id("x"), 2, 0)}); });
  }
  REQUIRE(observe(*f) == before);
  REQUIRE(f->append("s", {ev_id("y")}).events.at(0).index == 3);
}

TEST_CASE("clear a second time moves the boundary to the new marker", "[clear][S118]") {
  auto f = fresh();
  (void)f->append("s", {ev_id("a"), ev_id("b")});
  require_clear(clear(*f), true, 3, 3);
  (void)f->append("s", {ev_id("c"), ev_id("d")});
  f.clock->advance(7);
  require_clear(clear(*f), true, 6, 6);

  auto rows = f->read("s");
  REQUIRE(rows.size() == 1);
  REQUIRE(rows[0].index == 6);
  REQUIRE(rows[0].type == kClearEventType);
  REQUIRE(rows[0].created_at == kT0 + 7);
  REQUIRE(rows[0].id == "g2");

  auto state = f->read_state("s", "r");
  REQUIRE(state.clear_index == std::optional<std::int64_t>(6));
  REQUIRE(indexes_of(state.events) == std::vector<std::int64_t>{6});
  REQUIRE_FALSE(state.snapshot.has_value());

  REQUIRE(f->append("s", {ev_id("e")}).events.at(0).index == 7);
  REQUIRE(indexes_of(f->read("s")) == std::vector<std::int64_t>{6, 7});
  REQUIRE(indexes_of(f->read_history("s", {.after_index = 2, .through_index = std::nullopt})) ==
          std::vector<std::int64_t>{6, 7});
}

TEST_CASE("clear refuses a marker id that is already owned", "[clear][S119]") {
  auto f = fresh();
  SECTION("owned by a live event of the same session") {
    // The IdSource's next id is g1; the session already owns it.
    (void)f->append("s", {ev_id("g1"), ev_id("b")});
  }
  SECTION("owned by another session") {
    (void)f->append("s2", {ev_id("g1")});
    (void)f->append("s", {ev_id("a"), ev_id("b")});
  }
  SECTION("owned by this session below the boundary (it blocks the marker until reclaim)") {
    (void)f->append("s", {ev_id("g2")});
    require_clear(clear(*f), true, 2, 2);  // Marker g1.
    (void)f->append("s", {ev_id("b")});    // Index 3; the next marker id would be g2.
  }
  auto before_s = observe(*f, "s");
  auto before_s2 = observe(*f, "s2");
  require_error(ErrorCode::partial_duplicate_batch, [&] { (void)clear(*f); });
  REQUIRE(observe(*f, "s") == before_s);
  REQUIRE(observe(*f, "s2") == before_s2);
}

}  // namespace
}  // namespace a2::conformance
