// SPDX-License-Identifier: MIT
// Conformance scenarios 93-105: put_snapshots, read_state and read_states 
// (docs/semantics.md#snapshot-and-state-scenarios).

#include <catch2/catch.hpp>

#include "support/as_json.hpp"
#include "support/children_and_state.hpp"
#include "support/support.hpp"

namespace a2::conformance {
namespace {

// Events 1..10 of type "t" with payload {"i": i}, all settled except those in `pending`.
void ten_events(Store& store, const std::set<std::int64_t>& pending = {}) {
  std::vector<NewEvent> batch;
  for (std::int64_t i = 1; i <= 10; ++i) {
    auto e = ev("t", Json{{"i", i}});
    batch.push_back(pending.count(i) ? e : settled(e));
  }
  REQUIRE(indexes_of(store.append("s", batch).events) == range(1, 10));
}

// The public events first..last as read_history returns them.
Json history(Store& store, std::int64_t first, std::int64_t last) {
  return events_json(store.read_history("s", {.after_index = first - 1, .through_index = last}));
}

TEST_CASE("read_state without a checkpoint folds from the first event", "[read_state][S93]") {
  auto f = fresh();
  (void)f->append("s", {ev("a", Json{{"k", "v"}}), settled(ev("b", Json::array({1, "x"}))), ev()});
  auto r = state(*f, "s", "r");
  REQUIRE_FALSE(r.head_index.has_value());
  REQUIRE_FALSE(r.snapshot.has_value());
  REQUIRE_FALSE(r.clear_index.has_value());
  REQUIRE(indexes_of(r.events) == range(1, 3));
  REQUIRE(events_json(r.events) == history(*f, 1, 3));
  REQUIRE(r.events[0].type == "a");
  REQUIRE(r.events[0].payload == Json{{"k", "v"}});
  REQUIRE(r.events[1].payload == Json::array({1, "x"}));
  REQUIRE(r.events[2].payload.is_null());
  REQUIRE(r.events[0].created_at == kT0);
  REQUIRE(r.events[0].session_id == "s");
  // An empty session: nothing at all.
  auto empty = state(*f, "empty", "r");
  REQUIRE(state_json(empty) == Json{{"head_index", nullptr},
                                    {"snapshot", nullptr},
                                    {"events", Json::array()},
                                    {"clear_index", nullptr}});
}

TEST_CASE("read_state starts after the head checkpoint", "[read_state][put_snapshots][S94]") {
  auto f = fresh();
  ten_events(*f);
  const Json s5 = {{"sum", 15}, {"seen", {1, 2, 3, 4, 5}}};
  f->put_snapshots("s", "r", {snap(5, s5)});

  auto r = state(*f, "s", "r");
  REQUIRE(r.head_index == 5);
  REQUIRE(r.snapshot.has_value());
  REQUIRE(r.snapshot->index == 5);
  REQUIRE(r.snapshot->state == s5);
  REQUIRE(events_json(r.events) == history(*f, 6, 10));
  REQUIRE_FALSE(r.clear_index.has_value());

  auto through = state(*f, "s", "r", 7);
  REQUIRE(through.head_index == 5);
  REQUIRE(snapshot_index(through) == 5);
  REQUIRE(events_json(through.events) == history(*f, 6, 7));
  // Reducers are independent.
  auto other = state(*f, "s", "other");
  REQUIRE_FALSE(other.head_index.has_value());
  REQUIRE_FALSE(other.snapshot.has_value());
  REQUIRE(indexes_of(other.events) == range(1, 10));
}

TEST_CASE("read_state ignores a head above the snapshot cap when no history qualifies",
          "[read_state][S95]") {
  auto f = fresh();
  ten_events(*f);
  f->put_snapshots("s", "r", {snap(5, "S5")});

  auto r = state(*f, "s", "r", std::nullopt, 3);
  REQUIRE(r.head_index == 5);
  REQUIRE_FALSE(r.snapshot.has_value());
  REQUIRE(events_json(r.events) == history(*f, 1, 10));
  // through_index alone caps the snapshot too.
  auto through = state(*f, "s", "r", 4);
  REQUIRE(through.head_index == 5);
  REQUIRE_FALSE(through.snapshot.has_value());
  REQUIRE(events_json(through.events) == history(*f, 1, 4));
}

TEST_CASE("put_snapshots keeps an older checkpoint in history while an event pins it",
          "[put_snapshots][read_state][S96]") {
  auto f = fresh();
  ten_events(*f, {8});
  f->put_snapshots("s", "r", {snap(6, "S6", {8})});
  f->put_snapshots("s", "r", {snap(9, "S9")});

  auto r = state(*f, "s", "r", std::nullopt, 7);
  REQUIRE(r.head_index == 9);
  REQUIRE(r.snapshot.has_value());
  REQUIRE(r.snapshot->index == 6);
  REQUIRE(r.snapshot->state == "S6");
  REQUIRE(events_json(r.events) == history(*f, 7, 10));

  auto head = state(*f, "s", "r");
  REQUIRE(snapshot_index(head) == 9);
  REQUIRE(head.snapshot->state == "S9");
  REQUIRE(events_json(head.events) == history(*f, 10, 10));
}

TEST_CASE("put_snapshots drops an unpinned write below the head", "[put_snapshots][S97]") {
  auto f = fresh();
  ten_events(*f, {8});
  f->put_snapshots("s", "r", {snap(9, "S9")});
  f->put_snapshots("s", "r", {snap(6, "S6")});

  auto r = state(*f, "s", "r", std::nullopt, 7);
  REQUIRE(r.head_index == 9);
  REQUIRE_FALSE(r.snapshot.has_value());
  REQUIRE(events_json(r.events) == history(*f, 1, 10));
  auto head = state(*f, "s", "r");
  REQUIRE(snapshot_index(head) == 9);
  REQUIRE(head.snapshot->state == "S9");
}

TEST_CASE("put_snapshots ignores pins on finished, cleared or missing events",
          "[put_snapshots][S98]") {
  auto f = fresh();
  // 1..3 of an old lifetime (2 pending), marker 4, then 5..14 with 12 pending.
  (void)f->append("s", {settled(ev()), ev(), settled(ev())});
  REQUIRE(clear(*f).clear_index == 4);
  std::vector<NewEvent> batch;
  for (int i = 5; i <= 14; ++i)
    batch.push_back(i == 12 || i == 13 || i == 14 ? ev() : settled(ev()));
  REQUIRE(indexes_of(f->append("s", batch).events) == range(5, 14));
  // 13 dead-lettered, 14 completed.
  REQUIRE(indexes_of(claim(*f).events) == range(12, 14));
  REQUIRE(fail(*f, "s", 13, 1, 1).verdict == FailVerdict::dead_lettered);
  REQUIRE(complete(*f, "s", 14, 1).verdict == CompleteVerdict::completed);

  std::int64_t pin = 0;
  bool kept = false;
  SECTION("a pending event (the control)") {
    pin = 12;
    kept = true;
  }
  SECTION("a settled event") { pin = 6; }
  SECTION("a dead-lettered event") { pin = 13; }
  SECTION("a completed event") { pin = 14; }
  SECTION("a pending event of the cleared lifetime") { pin = 2; }
  SECTION("the clear marker") { pin = 4; }
  SECTION("an index above the head") { pin = 15; }
  INFO("pinned event " << pin);

  // The pinned write becomes the head, then is superseded by 11: it survives only if pinned.
  f->put_snapshots("s", "r", {snap(8, "S8", {pin})});
  f->put_snapshots("s", "r", {snap(11, "S11")});
  auto r = state(*f, "s", "r", std::nullopt, 10);
  REQUIRE(r.head_index == 11);
  REQUIRE(r.clear_index == 4);
  if (kept) {
    REQUIRE(snapshot_index(r) == 8);
    REQUIRE(indexes_of(r.events) == range(9, 14));
  } else {
    REQUIRE_FALSE(r.snapshot.has_value());
    REQUIRE(indexes_of(r.events) == range(4, 14));
  }
  // The same through a write below the head.
  f->put_snapshots("s", "r", {snap(7, "S7", {pin})});
  auto below = state(*f, "s", "r", std::nullopt, 7);
  if (kept) {
    REQUIRE(snapshot_index(below) == 7);
    REQUIRE(below.snapshot->state == "S7");
  } else {
    REQUIRE_FALSE(below.snapshot.has_value());
  }
}

TEST_CASE("complete_attempt releases pins: the pinned history checkpoint goes, the head stays",
          "[put_snapshots][complete][S99]") {
  auto f = fresh();
  ten_events(*f, {8});
  f->put_snapshots("s", "r", {snap(6, "S6", {8})});
  SECTION("the head is unpinned") { f->put_snapshots("s", "r", {snap(9, "S9")}); }
  SECTION("the head is pinned by the same event") {
    f->put_snapshots("s", "r", {snap(9, "S9", {8})});
  }
  REQUIRE(snapshot_index(state(*f, "s", "r", std::nullopt, 7)) == 6);

  REQUIRE(indexes_of(claim(*f).events) == range(8, 8));
  REQUIRE(complete(*f, "s", 8, 1).verdict == CompleteVerdict::completed);

  auto r = state(*f, "s", "r", std::nullopt, 7);
  REQUIRE(r.head_index == 9);
  REQUIRE_FALSE(r.snapshot.has_value());
  REQUIRE(indexes_of(r.events) == range(1, 10));
  auto head = state(*f, "s", "r");
  REQUIRE(head.head_index == 9);
  REQUIRE(snapshot_index(head) == 9);
  REQUIRE(head.snapshot->state == "S9");
  REQUIRE(indexes_of(head.events) == range(10, 10));
}

TEST_CASE("put_snapshots overwrites a checkpoint at the same index and keeps a newer head",
          "[put_snapshots][S100]") {
  auto f = fresh();
  ten_events(*f);
  f->put_snapshots("s", "r", {snap(9, "A")});
  f->put_snapshots("s", "r", {snap(9, "B")});
  auto r = state(*f, "s", "r");
  REQUIRE(r.head_index == 9);
  REQUIRE(snapshot_index(r) == 9);
  REQUIRE(r.snapshot->state == "B");
  REQUIRE(indexes_of(r.events) == range(10, 10));

  f->put_snapshots("s", "r", {snap(7, "C")});
  auto after = state(*f, "s", "r");
  REQUIRE(after.head_index == 9);
  REQUIRE(snapshot_index(after) == 9);
  REQUIRE(after.snapshot->state == "B");
  REQUIRE_FALSE(state(*f, "s", "r", std::nullopt, 8).snapshot.has_value());
}

TEST_CASE("put_snapshots applies one write per index, the last one, in index order",
          "[put_snapshots][S101]") {
  auto f = fresh();
  ten_events(*f, {8});

  SECTION("the last write for an index wins") {
    f->put_snapshots("s", "r", {snap(5, "a"), snap(5, "b")});
    auto r = state(*f, "s", "r");
    REQUIRE(r.head_index == 5);
    REQUIRE(snapshot_index(r) == 5);
    REQUIRE(r.snapshot->state == "b");
    REQUIRE(indexes_of(r.events) == range(6, 10));
  }
  SECTION("the highest index becomes the head whatever the input order") {
    f->put_snapshots("s", "r", {snap(7, "x"), snap(5, "y", {8}), snap(6, "z")});
    auto r = state(*f, "s", "r");
    REQUIRE(r.head_index == 7);
    REQUIRE(snapshot_index(r) == 7);
    REQUIRE(r.snapshot->state == "x");
    auto pinned = state(*f, "s", "r", std::nullopt, 6);  // 6 was unpinned, 5 pinned by 8.
    REQUIRE(snapshot_index(pinned) == 5);
    REQUIRE(pinned.snapshot->state == "y");
    REQUIRE(indexes_of(pinned.events) == range(6, 10));
  }
}

TEST_CASE("read_state after a clear folds from the marker", "[read_state][S102]") {
  auto f = fresh();
  ten_events(*f, {8});
  f->put_snapshots("s", "r", {snap(6, "S6", {8})});
  f->put_snapshots("s", "r", {snap(9, "S9")});
  auto c = clear(*f);
  REQUIRE(c.clear_index == 11);
  (void)f->append("s", {ev("after"), settled(ev("after"))});  // 12, 13

  auto r = state(*f, "s", "r");
  REQUIRE_FALSE(r.head_index.has_value());
  REQUIRE_FALSE(r.snapshot.has_value());
  REQUIRE(r.clear_index == 11);
  REQUIRE(indexes_of(r.events) == range(11, 13));
  REQUIRE(events_json(r.events) == history(*f, 11, 13));
  REQUIRE(r.events.front().type == kClearEventType);
  REQUIRE(r.events.front().payload.is_null());
  auto capped = state(*f, "s", "r", std::nullopt, 7);
  REQUIRE_FALSE(capped.head_index.has_value());
  REQUIRE_FALSE(capped.snapshot.has_value());
  REQUIRE(indexes_of(capped.events) == range(11, 13));
}

TEST_CASE("put_snapshots after a clear drops checkpoints of the old lifetime",
          "[put_snapshots][read_state][S103]") {
  auto f = fresh();
  (void)f->append("s", {ev(), ev(), ev()});
  REQUIRE(clear(*f).clear_index == 4);
  (void)f->append("s", {ev(), settled(ev()), ev()});  // 5..7

  f->put_snapshots("s", "r", {snap(3, "old")});
  auto ignored = state(*f, "s", "r");
  REQUIRE_FALSE(ignored.head_index.has_value());
  REQUIRE_FALSE(ignored.snapshot.has_value());
  REQUIRE(indexes_of(ignored.events) == range(4, 7));

  f->put_snapshots("s", "r", {snap(4, "M")});
  auto r = state(*f, "s", "r");
  REQUIRE(r.head_index == 4);
  REQUIRE(snapshot_index(r) == 4);
  REQUIRE(r.snapshot->state == "M");
  REQUIRE(r.clear_index == 4);
  REQUIRE(events_json(r.events) == history(*f, 5, 7));
}

TEST_CASE("read_states answers each session like read_state", "[read_states][S104]") {
  auto f = fresh();
  // "cleared": 1..3, a checkpoint, marker 4, then 5..6.
  (void)f->append("cleared", {ev(), settled(ev()), ev()});
  f->put_snapshots("cleared", "r", {snap(3, "old")});
  REQUIRE(clear(*f, "cleared").clear_index == 4);
  (void)f->append("cleared", {ev("x", Json{{"a", 1}}), settled(ev("y"))});
  // "snap": 1..10 with head 9 and a pinned history checkpoint 6.
  {
    std::vector<NewEvent> batch;
    for (int i = 1; i <= 10; ++i) batch.push_back(i == 8 ? ev() : settled(ev("t", Json(i))));
    (void)f->append("snap", batch);
    f->put_snapshots("snap", "r", {snap(6, "S6", {8})});
    f->put_snapshots("snap", "r", {snap(9, Json{{"total", 9}})});
  }
  // "empty" has nothing.

  const std::vector<StateRequest> requests = {
      {.session_id = "cleared",
       .through_index = std::nullopt,
       .snapshot_through_index = std::nullopt},
      {.session_id = "snap", .through_index = std::nullopt, .snapshot_through_index = std::nullopt},
      {.session_id = "empty",
       .through_index = std::nullopt,
       .snapshot_through_index = std::nullopt},
      {.session_id = "snap", .through_index = 8, .snapshot_through_index = 7},
      {.session_id = "snap", .through_index = 5, .snapshot_through_index = std::nullopt},
      {.session_id = "cleared", .through_index = 5, .snapshot_through_index = 2},
  };
  auto batch = f->read_states("r", requests);
  REQUIRE(batch.size() == requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    INFO("request " << i << " session " << requests[i].session_id);
    auto single = state(*f, requests[i].session_id, "r", requests[i].through_index,
                        requests[i].snapshot_through_index);
    REQUIRE(state_json(batch[i]) == state_json(single));
  }
  // The single calls themselves are what the scenarios above assert.
  REQUIRE(batch[0].clear_index == 4);
  REQUIRE_FALSE(batch[0].head_index.has_value());
  REQUIRE(indexes_of(batch[0].events) == range(4, 6));
  REQUIRE(batch[1].head_index == 9);
  REQUIRE(snapshot_index(batch[1]) == 9);
  REQUIRE(indexes_of(batch[1].events) == range(10, 10));
  REQUIRE_FALSE(batch[2].head_index.has_value());
  REQUIRE(batch[2].events.empty());
  REQUIRE(snapshot_index(batch[3]) == 6);
  REQUIRE(indexes_of(batch[3].events) == range(7, 8));
  REQUIRE_FALSE(batch[4].snapshot.has_value());
  REQUIRE(indexes_of(batch[4].events) == range(1, 5));
  REQUIRE_FALSE(batch[5].snapshot.has_value());
  REQUIRE(indexes_of(batch[5].events) == range(4, 5));
  REQUIRE(f->read_states("r", {}).empty());
}

TEST_CASE("read_state returns every event after the last checkpoint, beyond one page",
          "[read_state][S105]") {
  auto f = fresh();
  (void)f->append("s", settled_evs(5));
  f->put_snapshots("s", "r", {snap(5, "S5")});
  std::vector<NewEvent> batch;
  batch.reserve(1200);
  for (int i = 0; i < 1200; ++i) batch.push_back(settled(ev("t", Json{{"n", i}})));
  REQUIRE(f->append("s", std::move(batch)).events.size() == 1200);

  auto r = state(*f, "s", "r");
  REQUIRE(r.head_index == 5);
  REQUIRE(snapshot_index(r) == 5);
  REQUIRE(r.events.size() == 1200);
  REQUIRE(indexes_of(r.events) == range(6, 1205));
  for (std::size_t i = 0; i < r.events.size(); ++i) {
    if (r.events[i].payload != Json{{"n", static_cast<int>(i)}}) FAIL("payload of event " << i + 6);
  }
}

}  // namespace
}  // namespace a2::conformance
