// SPDX-License-Identifier: MIT
// Conformance scenarios 1-28, 243, 245 and 246 (docs/semantics.md#append-scenarios): append,
// replays, ownership, causes, lanes, ids the store draws.

#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "harness.hpp"
#include "support/claims.hpp"
#include "support/support.hpp"

using namespace a2::conformance;
using a2::ClaimVerdict;
using a2::ErrorCode;
using a2::EventCause;
using a2::Json;

TEST_CASE("append of an empty batch to a new session writes nothing", "[append][S1]") {
  auto f = a2::conformance::fresh();
  auto r = f->append("s", {});
  REQUIRE(r.events.empty());
  REQUIRE_FALSE(r.has_pending);
  REQUIRE(f->read("s").empty());
  // The head stayed 0: the next append gets index 1.
  auto next = f->append("s", {ev()});
  REQUIRE(indexes_of(next.events) == std::vector<std::int64_t>{1});
}

TEST_CASE("append of unsettled events without ids assigns indexes, ids and fresh metadata",
          "[append][S2]") {
  auto f = a2::conformance::fresh();
  auto r = f->append("s", evs(3));
  REQUIRE(r.has_pending);
  REQUIRE(indexes_of(r.events) == range(1, 3));
  REQUIRE(ids_of(r.events) == std::vector<std::string>{"g1", "g2", "g3"});
  for (const auto& e : r.events) {
    CHECK(e.session_id == "s");
    CHECK(e.type == "t");
    CHECK(e.payload == Json(nullptr));
    CHECK(e.created_at == kT0);
    CHECK_FALSE(e.cause.has_value());
    CHECK_FALSE(e.lane.has_value());
    require_unworked(e);
  }
  auto rows = f->read("s");
  REQUIRE(rows.size() == 3);
  for (std::size_t i = 0; i < rows.size(); ++i) REQUIRE(to_json(rows[i]) == to_json(r.events[i]));
}

TEST_CASE("append of a settled event stores it processed at creation", "[append][S3]") {
  auto f = a2::conformance::fresh();
  auto r = f->append("s", {settled(ev())});
  REQUIRE_FALSE(r.has_pending);
  REQUIRE(r.events.size() == 1);
  const auto& e = r.events[0];
  REQUIRE(e.index == 1);
  REQUIRE(e.created_at == kT0);
  REQUIRE(e.processed_at == kT0);
  CHECK_FALSE(e.processed_by_attempt.has_value());
  CHECK_FALSE(e.returned_event_ids.has_value());
  CHECK(e.attempt_count == 0);
  CHECK_FALSE(e.claim_holder.has_value());
  CHECK_FALSE(e.failed_at.has_value());
  REQUIRE(to_json(row(*f, "s", 1)) == to_json(e));
  REQUIRE(claim(*f).verdict == ClaimVerdict::settled);
}

TEST_CASE("append of an empty batch reports whether pending work exists", "[append][S4]") {
  auto f = a2::conformance::fresh();
  given(*f, {ev()}, "s");
  given(*f, {settled(ev()), settled(ev())}, "s2");
  f.clock->advance(10);
  auto pending = f->append("s", {});
  REQUIRE(pending.events.empty());
  REQUIRE(pending.has_pending);
  auto settled_only = f->append("s2", {});
  REQUIRE(settled_only.events.empty());
  REQUIRE_FALSE(settled_only.has_pending);
  // Nothing was written by the empty batches.
  REQUIRE(f->read("s").size() == 1);
  REQUIRE(f->read("s2").size() == 2);
}

TEST_CASE("append replays a batch whose ids the session owns", "[append][S5]") {
  auto f = a2::conformance::fresh();
  auto first = f->append("s", {ev_id("a", "t", Json{{"k", 1}})});
  REQUIRE(indexes_of(first.events) == std::vector<std::int64_t>{1});
  f.clock->advance(500);
  auto replay = f->append("s", {ev_id("a", "t", Json{{"k", 1}})});
  REQUIRE(replay.events.size() == 1);
  REQUIRE(to_json(replay.events[0]) == to_json(first.events[0]));
  REQUIRE(replay.events[0].created_at == kT0);
  REQUIRE(replay.has_pending);
  auto rows = f->read("s");
  REQUIRE(rows.size() == 1);
  REQUIRE(to_json(rows[0]) == to_json(first.events[0]));
  // The head stayed 1.
  REQUIRE(indexes_of(f->append("s", {ev_id("b")}).events) == std::vector<std::int64_t>{2});
}

TEST_CASE("append replays a batch with the rows' current metadata", "[append][S6]") {
  auto f = a2::conformance::fresh();
  auto batch = std::vector<a2::NewEvent>{ev_id("a"), ev_id("b"), ev_id("c")};
  auto first = f->append("s", batch);
  REQUIRE(indexes_of(first.events) == range(1, 3));
  auto claimed = claim(*f, "s", "w1", {2, 3});
  REQUIRE(claimed.verdict == ClaimVerdict::claimed);
  REQUIRE(indexes_of(claimed.events) == std::vector<std::int64_t>{1});
  f.clock->advance(100);
  auto replay = f->append("s", batch);
  REQUIRE(replay.has_pending);
  REQUIRE(indexes_of(replay.events) == range(1, 3));
  REQUIRE(ids_of(replay.events) == std::vector<std::string>{"a", "b", "c"});
  REQUIRE(replay.events[0].attempt_count == 1);
  REQUIRE(replay.events[0].claim_holder == "w1");
  REQUIRE(replay.events[0].claim_expires_at == kT0 + kTtl);
  REQUIRE(replay.events[0].first_claimed_at == kT0);
  REQUIRE(replay.events[1].attempt_count == 0);
  REQUIRE(replay.events[2].attempt_count == 0);
  auto rows = f->read("s");
  REQUIRE(rows.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    auto expected = to_json(rows[i]);
    REQUIRE(to_json(replay.events[i]) == expected);
  }
}

TEST_CASE("append of a batch whose ids are partly owned fails and writes nothing", "[append][S7]") {
  auto f = a2::conformance::fresh();
  given(*f, {ev_id("a")});
  auto before = observe(*f);
  require_error(ErrorCode::partial_duplicate_batch, [&] {
    (void)f->append("s", {ev_id("a"), ev_id("b")});
  });
  REQUIRE(observe(*f) == before);
  auto later = f->append("s", {ev_id("b")});
  REQUIRE(indexes_of(later.events) == std::vector<std::int64_t>{2});
  REQUIRE(later.events[0].id == "b");
}

TEST_CASE("append of an owned id with an id-less event fails as a partial duplicate",
          "[append][S8]") {
  auto f = a2::conformance::fresh();
  given(*f, {ev_id("a")});
  auto before = observe(*f);
  require_error(ErrorCode::partial_duplicate_batch, [&] {
    (void)f->append("s", {ev_id("a"), ev()});
  });
  REQUIRE(observe(*f) == before);
}

TEST_CASE("append of an id owned by another session fails and writes nothing", "[append][S9]") {
  auto f = a2::conformance::fresh();
  given(*f, {ev_id("x")}, "s1");
  auto s1_before = observe(*f, "s1");
  require_error(ErrorCode::partial_duplicate_batch, [&] { (void)f->append("s2", {ev_id("x")}); });
  // The foreign id wins wherever it sits in the batch.
  require_error(ErrorCode::partial_duplicate_batch, [&] {
    (void)f->append("s2", {ev_id("y"), ev_id("x")});
  });
  REQUIRE(f->read("s2").empty());
  REQUIRE_FALSE(has_pending(*f, "s2"));
  REQUIRE(observe(*f, "s1") == s1_before);
  // "y" was not taken by the failed batch.
  REQUIRE(indexes_of(f->append("s2", {ev_id("y")}).events) == std::vector<std::int64_t>{1});
}

TEST_CASE("append of a batch supplying one id twice is rejected before writing", "[append][S10]") {
  auto f = a2::conformance::fresh();
  require_error(ErrorCode::invalid_argument, [&] {
    (void)f->append("s", {ev_id("d"), ev_id("d")});
  });
  REQUIRE(f->read("s").empty());
  REQUIRE_FALSE(has_pending(*f));
  // Nothing was written, "d" is free.
  auto r = f->append("s", {ev_id("d")});
  REQUIRE(indexes_of(r.events) == std::vector<std::int64_t>{1});
}

TEST_CASE("append with a cause above the head is rejected", "[append][S11]") {
  auto f = a2::conformance::fresh();
  given(*f, evs(2));
  auto before = observe(*f);
  require_error(ErrorCode::invalid_argument, [&] { (void)f->append("s", {caused(ev(), 5, 1)}); });
  // A cause can never point into its own batch.
  require_error(ErrorCode::invalid_argument, [&] {
    (void)f->append("s", {ev(), caused(ev(), 3, 0)});
  });
  REQUIRE(observe(*f) == before);
}

TEST_CASE("append with a cause is fenced by the parent's current attempt", "[append][S12]") {
  auto f = a2::conformance::fresh();
  given(*f, {ev()});
  REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);
  auto before = observe(*f);
  require_error(ErrorCode::superseded_attempt, [&] { (void)f->append("s", {caused(ev(), 1, 2)}); });
  REQUIRE(observe(*f) == before);
  auto r = f->append("s", {caused(ev(), 1, 1)});
  REQUIRE(indexes_of(r.events) == std::vector<std::int64_t>{2});
  REQUIRE(r.events[0].cause == EventCause{1, 1});
  REQUIRE(row(*f, "s", 2).cause == EventCause{1, 1});
}

TEST_CASE("append with the current attempt of a dead letter as cause is superseded",
          "[append][S13]") {
  auto f = a2::conformance::fresh();
  given(*f, {ev()});
  REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);
  REQUIRE(fail(*f, "s", 1, 1, 1).verdict == a2::FailVerdict::dead_lettered);
  auto before = observe(*f);
  require_error(ErrorCode::superseded_attempt, [&] { (void)f->append("s", {caused(ev(), 1, 1)}); });
  REQUIRE(observe(*f) == before);
}

TEST_CASE("append with the cause of an attempt that completed is accepted", "[append][S14]") {
  auto f = a2::conformance::fresh();
  given(*f, {ev()});
  REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);
  REQUIRE(complete(*f, "s", 1, 1).verdict == a2::CompleteVerdict::completed);
  REQUIRE_FALSE(has_pending(*f));
  // A settled caused event: the parent is processed, so nothing is pending.
  auto fact = f->append("s", {settled(caused(ev(), 1, 1))});
  REQUIRE(indexes_of(fact.events) == std::vector<std::int64_t>{2});
  REQUIRE(fact.events[0].cause == EventCause{1, 1});
  REQUIRE_FALSE(fact.has_pending);
  // An unsettled one: pending only because of itself.
  auto work = f->append("s", {caused(ev(), 1, 1)});
  REQUIRE(indexes_of(work.events) == std::vector<std::int64_t>{3});
  REQUIRE(work.has_pending);
}

TEST_CASE("append with the cause of an expired but not re-claimed attempt is accepted",
          "[append][S15]") {
  auto f = a2::conformance::fresh();
  given(*f, {ev()});
  REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);
  f.clock->advance(kTtl + 1);
  auto r = f->append("s", {caused(ev(), 1, 1)});
  REQUIRE(indexes_of(r.events) == std::vector<std::int64_t>{2});
  REQUIRE(r.events[0].cause == EventCause{1, 1});
  auto reclaimed = claim(*f, "s", "w2");
  REQUIRE(reclaimed.verdict == ClaimVerdict::claimed);
  REQUIRE(reclaimed.events.front().index == 1);
  REQUIRE(reclaimed.events.front().attempt_count == 2);
  auto before = observe(*f);
  require_error(ErrorCode::superseded_attempt, [&] { (void)f->append("s", {caused(ev(), 1, 1)}); });
  REQUIRE(observe(*f) == before);
}

TEST_CASE("append with the cause of a failed attempt not yet re-claimed is accepted",
          "[append][S16]") {
  auto f = a2::conformance::fresh();
  given(*f, {ev()});
  REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);
  auto failed = fail(*f, "s", 1, 1);
  REQUIRE(failed.verdict == a2::FailVerdict::failed);
  REQUIRE(failed.failure_count == 1);
  auto r = f->append("s", {caused(ev(), 1, 1)});
  REQUIRE(indexes_of(r.events) == std::vector<std::int64_t>{2});
  REQUIRE(r.events[0].cause == EventCause{1, 1});
  REQUIRE(r.has_pending);
}

TEST_CASE("append with a cause at index 0 on a never-cleared session is superseded",
          "[append][S17]") {
  auto f = a2::conformance::fresh();
  given(*f, {ev()});
  auto before = observe(*f);
  require_error(ErrorCode::superseded_attempt, [&] { (void)f->append("s", {caused(ev(), 0, 0)}); });
  REQUIRE(observe(*f) == before);
}

TEST_CASE("append of a settled event caused by an unprocessed parent reports pending work",
          "[append][S18]") {
  auto f = a2::conformance::fresh();
  given(*f, {ev()});
  REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);
  auto r = f->append("s", {settled(caused(ev(), 1, 1))});
  REQUIRE(indexes_of(r.events) == std::vector<std::int64_t>{2});
  REQUIRE(r.events[0].processed_at == kT0);
  REQUIRE(r.has_pending);
}

TEST_CASE("append scheduled by an event at or below the boundary is refused", "[append][S19]") {
  auto f = a2::conformance::fresh();
  given(*f, evs(3));
  auto c = clear(*f);
  REQUIRE(c.cleared);
  REQUIRE(c.clear_index == 4);
  auto before = observe(*f);
  require_error(ErrorCode::session_cleared,
                [&] { (void)f->append("s", {ev_id("late")}, {.origin_index = 4}); });
  require_error(ErrorCode::session_cleared,
                [&] { (void)f->append("s", {ev_id("late")}, {.origin_index = 1}); });
  REQUIRE(observe(*f) == before);
  // Only the comparison with the boundary matters: event 5 does not exist yet.
  auto r = f->append("s", {ev_id("late")}, {.origin_index = 5});
  REQUIRE(indexes_of(r.events) == std::vector<std::int64_t>{5});
  REQUIRE(r.events[0].id == "late");
}

TEST_CASE("append replays owned ids before checking the origin", "[append][S20]") {
  auto f = a2::conformance::fresh();
  given(*f, evs(3));
  REQUIRE(clear(*f).clear_index == 4);
  auto first = f->append("s", {ev_id("k")});
  REQUIRE(indexes_of(first.events) == std::vector<std::int64_t>{5});
  auto replay = f->append("s", {ev_id("k")}, {.origin_index = 2});
  REQUIRE(replay.events.size() == 1);
  REQUIRE(to_json(replay.events[0]) == to_json(first.events[0]));
  REQUIRE(f->read("s").size() == 2);  // The marker and k.
}

TEST_CASE("append checks ownership before causes", "[append][S21]") {
  auto f = a2::conformance::fresh();
  given(*f, {ev_id("a")});
  auto before = observe(*f);
  require_error(ErrorCode::partial_duplicate_batch, [&] {
    (void)f->append("s", {ev_id("a"), caused(ev_id("b"), 9, 1)});
  });
  require_error(ErrorCode::partial_duplicate_batch, [&] {
    (void)f->append("s", {caused(ev_id("b"), 0, 0), ev_id("a")});
  });
  REQUIRE(observe(*f) == before);
}

TEST_CASE("append of one batch queues laned events behind their lane head", "[append][S22]") {
  auto f = a2::conformance::fresh();
  given(*f, {in_lane(ev_id("A"), "L"), in_lane(ev_id("B"), "L"), ev_id("C")});
  auto c = claim(*f);
  REQUIRE(c.verdict == ClaimVerdict::claimed);
  REQUIRE(indexes_of(c.events) == std::vector<std::int64_t>{1, 3});
  REQUIRE(ids_of(c.events) == std::vector<std::string>{"A", "C"});
  REQUIRE(c.events[0].lane == "L");
  REQUIRE_FALSE(c.events[1].lane.has_value());
  REQUIRE(row(*f, "s", 2).attempt_count == 0);
}

TEST_CASE("append to a lane whose head is dead-lettered queues behind it", "[append][S23]") {
  auto f = a2::conformance::fresh();
  given(*f, {in_lane(ev(), "L")});
  REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);
  REQUIRE(fail(*f, "s", 1, 1, 1).verdict == a2::FailVerdict::dead_lettered);
  auto r = f->append("s", {in_lane(ev(), "L")});
  REQUIRE(indexes_of(r.events) == std::vector<std::int64_t>{2});
  REQUIRE(r.has_pending);
  REQUIRE(claim(*f).verdict == ClaimVerdict::settled);
  REQUIRE(row(*f, "s", 2).attempt_count == 0);
}

TEST_CASE("append of a settled event does not block its lane", "[append][S24]") {
  auto f = a2::conformance::fresh();
  given(*f, {settled(in_lane(ev(), "L"))});
  given(*f, {in_lane(ev(), "L")});
  auto c = claim(*f);
  REQUIRE(c.verdict == ClaimVerdict::claimed);
  REQUIRE(indexes_of(c.events) == std::vector<std::int64_t>{2});
}

TEST_CASE("append with an empty lane name appends unlaned events", "[append][S25]") {
  auto f = a2::conformance::fresh();
  auto r = f->append("s", {in_lane(ev(), ""), in_lane(ev(), "")});
  REQUIRE(indexes_of(r.events) == range(1, 2));
  for (const auto& e : r.events) REQUIRE_FALSE(e.lane.has_value());
  auto c = claim(*f);
  REQUIRE(c.verdict == ClaimVerdict::claimed);
  REQUIRE(indexes_of(c.events) == range(1, 2));
  for (const auto& e : f->read("s")) REQUIRE_FALSE(e.lane.has_value());
}

TEST_CASE("append round-trips payloads as JSON values", "[append][S26]") {
  auto f = a2::conformance::fresh();
  std::vector<Json> payloads = {
      Json{{"a", {{"b", {1, 2, {{"c", nullptr}}}}}}, {"z", "last"}, {"empty", Json::object()}},
      Json::array({1, "two", 3.5, false, nullptr, Json::array()}),
      Json("unicode: h\xC3\xA9llo \xE2\x9C\x93 \xF0\x9F\x98\x80 \xE2\x80\xA8 \"q\" \\ / \n\t"),
      Json(9007199254740991LL),
      Json(-9007199254740991LL),
      Json(0.5),
      Json(true),
      Json(nullptr),
      Json(""),
      Json(0),
  };
  std::vector<a2::NewEvent> batch;
  for (const auto& p : payloads) batch.push_back(ev("t", p));
  batch.push_back(ev("omitted"));  // No payload given: stored as null.
  payloads.push_back(Json(nullptr));
  auto r = f->append("s", batch);
  REQUIRE(r.events.size() == payloads.size());
  auto rows = f->read("s");
  auto history = f->read_history("s");
  REQUIRE(rows.size() == payloads.size());
  REQUIRE(history.size() == payloads.size());
  for (std::size_t i = 0; i < payloads.size(); ++i) {
    INFO("payload " << payloads[i].dump());
    CHECK(r.events[i].payload == payloads[i]);
    CHECK(rows[i].payload == payloads[i]);
    CHECK(history[i].payload == payloads[i]);
  }
  REQUIRE(rows[3].payload.get<std::int64_t>() == 9007199254740991LL);
}

TEST_CASE("append round-trips unusual ids through append, replay and read", "[append][S27]") {
  auto f = a2::conformance::fresh();
  std::vector<std::string> ids = {"a:b",
                                  "q\"uote",
                                  "back\\slash",
                                  "tab\t",
                                  "\xF0\x9F\x98\x80",
                                  "\xEF\xBB\xBF"
                                  "bom",
                                  "ids:count"};
  std::vector<a2::NewEvent> batch;
  for (const auto& id : ids) batch.push_back(ev_id(id));
  auto r = f->append("s", batch);
  REQUIRE(ids_of(r.events) == ids);
  REQUIRE(indexes_of(r.events) == range(1, 7));
  auto replay = f->append("s", batch);
  REQUIRE(ids_of(replay.events) == ids);
  REQUIRE(indexes_of(replay.events) == range(1, 7));
  REQUIRE(ids_of(f->read("s")) == ids);
  REQUIRE(ids_of(f->read_history("s")) == ids);
  // Every id is owned by s: another session cannot take it, one id at a time.
  for (const auto& id : ids) {
    INFO("id " << id);
    require_error(ErrorCode::partial_duplicate_batch,
                  [&] { (void)f->append("other", {ev_id(id)}); });
  }
  REQUIRE(f->read("other").empty());
  // A session named "ids" with an event id "count" collides with nothing.
  auto ids_session = f->append("ids", {ev_id("count")});
  REQUIRE(indexes_of(ids_session.events) == std::vector<std::int64_t>{1});
  auto next = f->append("ids", {ev_id("ids")});
  REQUIRE(indexes_of(next.events) == std::vector<std::int64_t>{2});
  REQUIRE(ids_of(f->read("ids")) == std::vector<std::string>{"count", "ids"});
  REQUIRE(ids_of(f->append("ids", {ev_id("count")}).events) == std::vector<std::string>{"count"});
  REQUIRE(ids_of(f->read("s")) == ids);
  REQUIRE(indexes_of(f->append("s", {ev_id("after")}).events) == std::vector<std::int64_t>{8});
}

TEST_CASE("append of 1500 events in one call is claimable in one call", "[append][S28]") {
  auto f = a2::conformance::fresh();
  auto r = f->append("s", evs(1500));
  REQUIRE(indexes_of(r.events) == range(1, 1500));
  auto c = claim(*f);
  REQUIRE(c.verdict == ClaimVerdict::claimed);
  REQUIRE(indexes_of(c.events) == range(1, 1500));
  auto rows = f->read("s");
  REQUIRE(indexes_of(rows) == range(1, 1500));
  for (const auto& e : rows) {
    REQUIRE(e.attempt_count == 1);
    REQUIRE(e.claim_holder == "w1");
  }
}

// The fixture's IdSource draws g1, g2, ...: a caller names those ids first, so the store's draws
// repeat them. A backend may skip looking for a stored row holding an id it drew (Postgres does:
// docs/postgres-layout.md#a2_append_one), but must then answer as for the caller's id.
TEST_CASE("an append whose drawn id is already stored answers as for the caller's id",
          "[append][S243]") {
  auto f = a2::conformance::fresh();
  const bool laned = GENERATE(false, true);
  INFO("laned: " << laned);
  auto drawn = [&] { return laned ? in_lane(ev(), "l") : ev(); };
  auto named = [&](std::string id) {
    return laned ? in_lane(ev_id(std::move(id)), "l") : ev_id(std::move(id));
  };
  const auto stored = f->append("s", {named("g1")}).events.at(0);
  // The store draws g1, which s holds: a replay of the stored row, nothing written.
  const auto replay = f->append("s", {drawn()});
  REQUIRE(replay.events.size() == 1);
  REQUIRE(to_json(replay.events.at(0)) == to_json(stored));
  REQUIRE(f->read("s").size() == 1);
  // The store draws g2, which s1 holds: the foreign id's error, s2 stays empty.
  given(*f, {named("g2")}, "s1");
  const auto s1_before = observe(*f, "s1");
  require_error(ErrorCode::partial_duplicate_batch, [&] { (void)f->append("s2", {drawn()}); });
  REQUIRE(f->read("s2").empty());
  REQUIRE(observe(*f, "s1") == s1_before);
  // The store draws g3, which nobody holds: a new event.
  const auto fresh = f->append("s", {drawn()});
  REQUIRE(indexes_of(fresh.events) == std::vector<std::int64_t>{2});
  REQUIRE(ids_of(fresh.events) == std::vector<std::string>{"g3"});
  REQUIRE(f->read("s").size() == 2);
}

namespace {
// An IdSource that draws the same id every time (`id`, which the scenario may change). Not
// thread-safe: one scenario thread draws.
class RepeatingIdSource final : public a2::IdSource {
 public:
  std::string id = "r1";
  std::string next_id() override { return id; }
};
// A child without id: the store draws one.
a2::ChildEvent unnamed_child() {
  a2::ChildEvent c;
  c.type = "child";
  return c;
}
}  // namespace

// Validation sees only the ids a caller supplies; the ids the store draws come after it. A call
// whose drawn id is one of its ids (another drawn one or a supplied one) is refused as a caller's
// id twice is (S10), before any I/O: an IdSource that repeats itself must not leave two events
// with one id.
TEST_CASE("a call whose drawn ids repeat one of its ids is rejected before writing",
          "[append][S245]") {
  auto ids = std::make_shared<RepeatingIdSource>();
  auto f = a2::conformance::fresh(StoreSettings{.ids = ids});
  require_error(ErrorCode::invalid_argument, [&] { (void)f->append("s", {ev(), ev()}); });
  REQUIRE_THROWS_WITH(f->append("s", {ev(), ev()}),
                      Catch::Contains("duplicate event id (drawn by the store's IdSource) 'r1'"));
  require_error(ErrorCode::invalid_argument, [&] { (void)f->append("s", {ev_id("r1"), ev()}); });
  REQUIRE(f->read("s").empty());
  REQUIRE_FALSE(has_pending(*f));
  // Completions: two children drawing one id, in one completion or in two of one call.
  given(*f, {ev_id("e1"), ev_id("e2")});
  REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);
  const auto before = observe(*f);
  require_error(ErrorCode::invalid_argument, [&] {
    (void)complete(*f, "s", 1, 1, {unnamed_child(), unnamed_child()});
  });
  require_error(ErrorCode::invalid_argument, [&] {
    (void)f->complete_attempts(
        {.session_id = "s",
         .completions = {{.index = 1, .attempt = 1, .events = {unnamed_child()}},
                         {.index = 2, .attempt = 1, .events = {unnamed_child()}}},
         .claim_next = std::nullopt});
  });
  REQUIRE(observe(*f) == before);
  // One drawn id per call is no repeat within the call: stored.
  ids->id = "r2";
  REQUIRE(ids_of(complete(*f, "s", 1, 1, {unnamed_child()}).events) ==
          std::vector<std::string>{"r2"});
  ids->id = "r3";
  REQUIRE(ids_of(f->append("s2", {ev()}).events) == std::vector<std::string>{"r3"});
  // A drawn id must be valid text, as a supplied one must: an empty one is refused for an event
  // and for a clear marker, and nothing changes.
  ids->id = "";
  const auto s2_before = observe(*f, "s2");
  require_error(ErrorCode::invalid_argument, [&] { (void)f->append("s2", {ev()}); });
  require_error(ErrorCode::invalid_argument, [&] { (void)clear(*f, "s2"); });
  REQUIRE(observe(*f, "s2") == s2_before);
}

TEST_CASE("draw_event_id draws from the store's IdSource", "[append][draw_event_id][S246]") {
  auto f = a2::conformance::fresh();
  const std::string first = f->draw_event_id();
  REQUIRE(first == "g1");
  REQUIRE(ids_of(f->append("s", {ev()}).events) == std::vector<std::string>{"g2"});
  // The caller names the drawn id: it is stored as given.
  REQUIRE(ids_of(f->append("s", {ev_id(first)}).events) == std::vector<std::string>{"g1"});
  REQUIRE(indexes_of(f->read("s")) == std::vector<std::int64_t>{1, 2});
  REQUIRE(f->draw_event_id() == "g3");
  f->close();
  REQUIRE(f->draw_event_id() == "g4");
}
