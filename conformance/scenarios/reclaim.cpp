// SPDX-License-Identifier: MIT
// docs/semantics.md#reclaim-scenarios: reclaim (scenarios 120-130; the Redis/Postgres key and row
// checks of 125, 129 and 130 live with the backend tests).

#include <catch2/catch.hpp>
#include <thread>

#include "support/as_json.hpp"
#include "support/lifecycle.hpp"
#include "support/support.hpp"

namespace a2::conformance {
namespace {

TEST_CASE("reclaim of a never-cleared session deletes nothing and is done", "[reclaim][S120]") {
  auto f = fresh();
  SECTION("an empty session") {}
  SECTION("a session with events and work") {
    (void)f->append("s", {ev_id("a"), in_lane(ev_id("b"), "L"), settled(ev_id("c"))});
    REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);
  }
  auto before = observe(*f);
  auto r = f->reclaim("s");
  REQUIRE(r.deleted == 0);
  REQUIRE(r.done);
  REQUIRE(observe(*f) == before);
}

TEST_CASE("reclaim deletes the old lifetime in bounded batches until done", "[reclaim][S121]") {
  auto f = fresh();
  (void)f->append("s", evs_with_ids("e", 600));
  REQUIRE(clear(*f).clear_index == 601);
  auto before = observe(*f);

  auto t = reclaim_all(*f, "s", 5);  // ceil(600 / 256) + 2
  REQUIRE(t.deleted == 600);
  auto after = f->reclaim("s");
  REQUIRE(after.deleted == 0);
  REQUIRE(after.done);
  REQUIRE(observe(*f) == before);
}

TEST_CASE("reclaim frees the old ids for other sessions", "[reclaim][S122]") {
  auto f = fresh();
  (void)f->append("s", evs_with_ids("e", 600));
  REQUIRE(clear(*f).clear_index == 601);
  require_error(ErrorCode::partial_duplicate_batch, [&] { (void)f->append("s2", {ev_id("e1")}); });
  REQUIRE(reclaim_all(*f, "s", 5).deleted == 600);

  auto moved = f->append("s2", {ev_id("e1"), ev_id("e300"), ev_id("e600")});
  REQUIRE(indexes_of(moved.events) == std::vector<std::int64_t>{1, 2, 3});
  // A replay in s2 recognises them as s2's now.
  auto replay = f->append("s2", {ev_id("e1"), ev_id("e300"), ev_id("e600")});
  REQUIRE(indexes_of(replay.events) == std::vector<std::int64_t>{1, 2, 3});
  REQUIRE(indexes_of(f->read("s")) == std::vector<std::int64_t>{601});
}

TEST_CASE("reclaim keeps an old id that the new lifetime reused", "[reclaim][S123]") {
  auto f = fresh();
  (void)f->append("s", {ev_id("x"), ev_id("y")});
  REQUIRE(clear(*f).clear_index == 3);
  auto reused = f->append("s", {ev_id("x")});
  REQUIRE(reused.events.at(0).index == 4);

  (void)reclaim_all(*f);
  auto replay = f->append("s", {ev_id("x")});
  REQUIRE(replay.events.size() == 1);
  REQUIRE(replay.events[0].index == 4);
  REQUIRE(indexes_of(f->read("s")) == std::vector<std::int64_t>{3, 4});

  auto s2_before = observe(*f, "s2");
  require_error(ErrorCode::partial_duplicate_batch, [&] { (void)f->append("s2", {ev_id("x")}); });
  REQUIRE(observe(*f, "s2") == s2_before);
  // "y" was not reused: reclaim freed it.
  REQUIRE(f->append("s2", {ev_id("y")}).events.at(0).index == 1);
}

TEST_CASE("reclaim never alters the new lifetime", "[reclaim][S124]") {
  auto f = fresh();
  // Old lifetime: 300 events with lanes, claims, a failure and a dead letter.
  std::vector<NewEvent> old;
  for (int i = 1; i <= 300; ++i) {
    auto e = ev_id("o" + std::to_string(i));
    if (i % 3 == 0) e = in_lane(std::move(e), "L");
    if (i % 5 == 0) e = settled(std::move(e));
    old.push_back(std::move(e));
  }
  (void)f->append("s", std::move(old));
  auto c = claim(*f);
  REQUIRE(c.verdict == ClaimVerdict::claimed);
  REQUIRE(fail(*f, "s", 1, 1).verdict == FailVerdict::failed);
  REQUIRE(fail(*f, "s", 2, 1, 1).verdict == FailVerdict::dead_lettered);
  REQUIRE(clear(*f).clear_index == 301);

  // New lifetime: lanes, a held claim, a failure, a completion with a child, a dead letter.
  f.clock->advance(100);
  (void)f->append("s", {in_lane(ev_id("n1"), "L"), in_lane(ev_id("n2"), "L"), ev_id("n3"),
                        ev_id("n4"), in_lane(ev_id("n5"), "M"), settled(ev_id("n6"))});
  auto nc = claim(*f);
  REQUIRE(indexes_of(nc.events) == std::vector<std::int64_t>{302, 304, 305, 306});
  REQUIRE(complete(*f, "s", 302, 1, {in_lane_child("k1", "L")}).verdict ==
          CompleteVerdict::completed);
  REQUIRE(fail(*f, "s", 304, 1).verdict == FailVerdict::failed);
  REQUIRE(fail(*f, "s", 305, 1, 1).verdict == FailVerdict::dead_lettered);
  f.clock->advance(10);

  auto before = observe(*f);
  auto history_before = f->read_history("s");
  auto t = reclaim_all(*f);
  REQUIRE(t.deleted == 300);
  REQUIRE(observe(*f) == before);
  auto history_after = f->read_history("s");
  REQUIRE(history_after.size() == history_before.size());
  for (std::size_t i = 0; i < history_after.size(); ++i)
    REQUIRE(event_json(history_after[i]) == event_json(history_before[i]));

  // Work keeps going: 306 is still held, 303 (lane L after 302) and 304 are claimable.
  auto next = claim(*f, "s", "w2");
  REQUIRE(next.verdict == ClaimVerdict::claimed);
  REQUIRE(indexes_of(next.events) == std::vector<std::int64_t>{303, 304});
  REQUIRE(complete(*f, "s", 306, 1).verdict == CompleteVerdict::completed);
  REQUIRE(complete(*f, "s", 303, 1).verdict == CompleteVerdict::completed);
  REQUIRE(complete(*f, "s", 304, 2).verdict == CompleteVerdict::completed);
  auto child = claim(*f, "s", "w3");
  REQUIRE(indexes_of(child.events) == std::vector<std::int64_t>{308});
  REQUIRE(redrive(*f, "s", 305, RedriveAction::retry).redriven);
}

TEST_CASE("reclaim sweeps the old checkpoints without changing read_state", "[reclaim][S125]") {
  auto f = fresh();
  (void)f->append("s", evs_with_ids("e", 5));
  // Old head 4, old history 2 pinned by the unfinished event 3, and a second reducer.
  f->put_snapshots("s", "r", {{2, Json{{"n", 2}}, {3}}, {4, Json{{"n", 4}}, {5}}});
  f->put_snapshots("s", "q", {{1, Json{{"q", 1}}, {}}});
  auto old_state =
      f->read_state("s", "r", {.through_index = std::nullopt, .snapshot_through_index = 3});
  REQUIRE(old_state.snapshot.has_value());
  REQUIRE(old_state.snapshot->index == 2);
  REQUIRE(clear(*f).clear_index == 6);
  (void)f->append("s", evs_with_ids("n", 3));  // 7..9
  SECTION("without a checkpoint in the new lifetime") {}
  SECTION("with checkpoints in the new lifetime") {
    f->put_snapshots("s", "r", {{7, Json{{"n", 7}}, {8}}, {8, Json{{"n", 8}}, {9}}});
  }

  auto states = [&] {
    Json out = Json::array();
    for (const char* reducer : {"r", "q"}) {
      out.push_back(state_json(f->read_state("s", reducer)));
      for (std::int64_t cap : {2, 4, 6, 7, 8})
        out.push_back(state_json(f->read_state(
            "s", reducer, {.through_index = std::nullopt, .snapshot_through_index = cap})));
    }
    return out;
  };
  auto before = states();
  // Nothing below the boundary is visible before the sweep either.
  for (const auto& st : before) {
    REQUIRE(st["clear_index"] == 6);
    if (!st["snapshot"].is_null()) REQUIRE(st["snapshot"]["index"].get<std::int64_t>() >= 6);
    if (!st["head_index"].is_null()) REQUIRE(st["head_index"].get<std::int64_t>() >= 6);
  }
  auto t = reclaim_all(*f);
  REQUIRE(t.deleted == 5);
  REQUIRE(states() == before);
  // Checkpoints keep working after the sweep.
  f->put_snapshots("s", "r", {{9, Json{{"n", 9}}, {}}});
  auto r = f->read_state("s", "r");
  REQUIRE(r.head_index == std::optional<std::int64_t>(9));
  REQUIRE(r.snapshot.has_value());
  REQUIRE(r.snapshot->state == Json{{"n", 9}});
  REQUIRE(r.events.empty());
}

TEST_CASE("reclaim loops running concurrently each count every event once", "[reclaim][S126]") {
  auto f = fresh();
  (void)f->append("s", evs_with_ids("e", 2000));
  REQUIRE(clear(*f).clear_index == 2001);
  auto before = observe(*f);

  std::int64_t deleted[2] = {0, 0};
  bool done[2] = {false, false};
  std::string errors[2];
  auto loop = [&](int k) {
    try {
      for (int calls = 0; calls < 100000 && !done[k]; ++calls) {
        auto r = f->reclaim("s");
        deleted[k] += r.deleted;
        done[k] = r.done;
      }
    } catch (const std::exception& e) {
      errors[k] = e.what();
    }
  };
  std::thread a(loop, 0), b(loop, 1);
  a.join();
  b.join();
  INFO(errors[0] << " | " << errors[1]);
  REQUIRE(errors[0].empty());
  REQUIRE(errors[1].empty());
  REQUIRE(done[0]);
  REQUIRE(done[1]);
  REQUIRE(deleted[0] + deleted[1] == 2000);
  REQUIRE(observe(*f) == before);
  auto after = f->reclaim("s");
  REQUIRE(after.deleted == 0);
  REQUIRE(after.done);
}

TEST_CASE("reclaim after two clears deletes both old lifetimes", "[reclaim][S127]") {
  auto f = fresh();
  (void)f->append("s", evs_with_ids("a", 10));
  REQUIRE(clear(*f).clear_index == 11);
  (void)f->append("s", evs_with_ids("b", 9));
  REQUIRE(clear(*f).clear_index == 21);
  auto before = observe(*f);
  REQUIRE(reclaim_all(*f).deleted == 20);
  REQUIRE(observe(*f) == before);
  // Every old id is free for another session, the first marker's included.
  auto ids = evs_with_ids("a", 10);
  auto more = evs_with_ids("b", 9);
  ids.insert(ids.end(), more.begin(), more.end());
  ids.push_back(ev_id("g1"));
  REQUIRE(f->append("s2", std::move(ids)).events.size() == 20);
}

TEST_CASE("reclaim interrupted by another clear still deletes everything below the newest marker",
          "[reclaim][S128]") {
  auto f = fresh();
  (void)f->append("s", evs_with_ids("a", 600));
  REQUIRE(clear(*f).clear_index == 601);
  auto first = f->reclaim("s");
  REQUIRE(first.deleted > 0);
  REQUIRE_FALSE(first.done);
  (void)f->append("s", evs_with_ids("b", 10));  // 602..611
  REQUIRE(clear(*f).clear_index == 612);
  auto before = observe(*f);
  auto t = reclaim_all(*f, "s", 20);
  REQUIRE(first.deleted + t.deleted == 611);
  REQUIRE(observe(*f) == before);
  REQUIRE(indexes_of(f->read("s")) == std::vector<std::int64_t>{612});
}

TEST_CASE("reclaim leaves nothing of the old lifetime once done", "[reclaim][S129]") {
  auto f = fresh();
  // Old work of every kind: held claims, failures, a dead letter, lanes, a completion with a
  // child, pins.
  (void)f->append("s", {in_lane(ev_id("l1"), "L"), in_lane(ev_id("l2"), "L"), ev_id("u1"),
                        ev_id("u2"), ev_id("u3"), settled(ev_id("st"))});
  REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);  // 1, 3, 4, 5
  REQUIRE(fail(*f, "s", 3, 1, 1).verdict == FailVerdict::dead_lettered);
  REQUIRE(fail(*f, "s", 4, 1).verdict == FailVerdict::failed);
  REQUIRE(complete(*f, "s", 1, 1, {in_lane_child("kid", "L")}).verdict ==
          CompleteVerdict::completed);
  f->put_snapshots("s", "r", {{3, Json(3), {2, 5}}, {6, Json(6), {}}});
  REQUIRE(clear(*f).clear_index == 8);
  (void)f->append("s", {in_lane(ev_id("fresh"), "L")});

  auto t = reclaim_all(*f);
  REQUIRE(t.deleted == 7);
  auto again = f->reclaim("s");
  REQUIRE(again.deleted == 0);
  REQUIRE(again.done);
  // The old lane is gone: the new lane event is its head.
  auto c = claim(*f);
  REQUIRE(indexes_of(c.events) == std::vector<std::int64_t>{9});
  REQUIRE(f->dead_letters("s").empty());
  auto state = f->read_state("s", "r");
  REQUIRE_FALSE(state.head_index.has_value());
  REQUIRE_FALSE(state.snapshot.has_value());
  REQUIRE(indexes_of(state.events) == std::vector<std::int64_t>{8, 9});
  // Every old id (the marker's stays owned) is free for another session.
  auto moved = f->append("s2", {ev_id("l1"), ev_id("l2"), ev_id("u1"), ev_id("u2"), ev_id("u3"),
                                ev_id("st"), ev_id("kid")});
  REQUIRE(indexes_of(moved.events) == range(1, 7));
}

TEST_CASE("reclaim of a large old lifetime takes many batches", "[reclaim][S130]") {
  auto f = fresh();
  std::vector<NewEvent> events;
  for (int i = 1; i <= 2500; ++i) {
    auto e = ev_id("e" + std::to_string(i));
    if (i % 100 == 0) {
      e = in_lane(std::move(e), i % 200 == 0 ? "A" : "B");
    } else if (i % 37 != 0) {
      e = settled(std::move(e));
    }
    events.push_back(std::move(e));
  }
  (void)f->append("s", std::move(events));
  auto c = claim(*f);
  REQUIRE(c.verdict == ClaimVerdict::claimed);
  REQUIRE(c.events.size() > 2);
  REQUIRE(fail(*f, "s", c.events[0].index, 1).verdict == FailVerdict::failed);
  REQUIRE(fail(*f, "s", c.events[1].index, 1, 1).verdict == FailVerdict::dead_lettered);
  REQUIRE(complete(*f, "s", c.events[2].index, 1).verdict == CompleteVerdict::completed);
  REQUIRE(clear(*f).clear_index == 2501);
  auto before = observe(*f);

  auto t = reclaim_all(*f, "s", 100);
  REQUIRE(t.deleted == 2500);
  REQUIRE(t.deleting_calls >= 10);
  REQUIRE(observe(*f) == before);
  auto again = f->reclaim("s");
  REQUIRE(again.deleted == 0);
  REQUIRE(again.done);
  REQUIRE(f->append("s2", evs_with_ids("e", 2500)).events.size() == 2500);
}

}  // namespace
}  // namespace a2::conformance
