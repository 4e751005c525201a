// SPDX-License-Identifier: MIT
// Reclaim leaves nothing of the old lifetimes in Redis (docs/semantics.md#reclaim, the [R] parts of
// the reclaim scenarios docs/semantics.md#S125, #S129, #S130).
#include <set>

#include "support.hpp"

namespace a2::redis_test {
namespace {
using namespace a2::conformance;

// Loops reclaim until done; returns {total deleted, calls that deleted something}.
std::pair<std::int64_t, int> reclaim_all(Store& store, const std::string& s = "s") {
  std::int64_t total = 0;
  int deleting = 0;
  for (int calls = 0; calls < 1000; ++calls) {
    auto r = store.reclaim(s);
    total += r.deleted;
    if (r.deleted > 0) ++deleting;
    if (r.done) {
      CHECK(store.reclaim(s).deleted == 0);
      return {total, deleting};
    }
  }
  FAIL("reclaim never reported done");
  return {total, deleting};
}

std::int64_t field_index(const std::string& field) {
  return std::stoll(field.substr(0, field.find(':')));
}

// Every remaining trace of an index below `boundary` in the session's keys.
std::vector<std::string> old_traces(Raw& raw, const std::string& p, std::int64_t boundary) {
  std::vector<std::string> traces;
  for (const auto& key : raw.keys(p + ":s:meta*")) {
    if (key == p + ":s:meta-split") continue;
    auto kv = raw.list({"HGETALL", key});
    for (std::size_t i = 0; i + 1 < kv.size(); i += 2) {
      const auto& field = kv[i];
      if (field.rfind("__lane:", 0) == 0) {
        if (std::stoll(kv[i + 1]) < boundary) traces.push_back(key + " " + field + "=" + kv[i + 1]);
      } else if (field_index(field) < boundary) {
        traces.push_back(key + " " + field);
      }
    }
  }
  for (const auto& key : raw.keys(p + ":s:snapshot-pins:*"))
    if (std::stoll(key.substr(key.rfind(':') + 1)) < boundary) traces.push_back(key);
  for (const auto& key : raw.keys(p + ":s:cleared:*")) traces.push_back(key);
  if (raw.integer({"EXISTS", p + ":s:cleared"}) != 0) traces.push_back(p + ":s:cleared");
  for (const auto& key : raw.keys(p + ":ids:*")) {
    auto record = Json::parse(*raw.get({"GET", key}));
    if (record[0] == "s" && record[1].get<std::int64_t>() < boundary)
      traces.push_back(key + " -> " + record.dump());
  }
  return traces;
}

TEST_CASE("reclaim sweeps old checkpoints, pins and pin counts", "[redis][reclaim][S125]") {
  const auto p = unique_prefix("sweep");
  auto f = open_fixture(p);
  Raw raw;
  (void)f->append("s", evs(10));
  f->put_snapshots("s", "r", {{.index = 6, .state = "six", .pin_event_indexes = {8}}});
  f->put_snapshots("s", "r", {{.index = 9, .state = "nine", .pin_event_indexes = {}}});
  REQUIRE(raw.integer({"ZCARD", p + ":s:snap-history:r"}) == 1);
  REQUIRE(raw.integer({"HLEN", p + ":s:snapshot-pin-counts"}) == 1);
  REQUIRE(clear(*f).clear_index == 11);
  (void)f->append("s", evs(2));
  f->put_snapshots("s", "r", {{.index = 12, .state = "twelve", .pin_event_indexes = {13}}});
  f->put_snapshots("s", "r", {{.index = 13, .state = "thirteen", .pin_event_indexes = {}}});
  auto state = [&] {
    auto st =
        f->read_state("s", "r", {.through_index = std::nullopt, .snapshot_through_index = 12});
    Json events = Json::array();
    for (const auto& e : st.events) events.push_back(e.index);
    return Json{{"head", st.head_index ? Json(*st.head_index) : Json()},
                {"snapshot", st.snapshot ? Json{st.snapshot->index, st.snapshot->state} : Json()},
                {"events", events},
                {"clear", st.clear_index ? Json(*st.clear_index) : Json()}};
  };
  auto before = state();
  CHECK(before["snapshot"] == Json{12, "twelve"});
  auto [deleted, calls] = reclaim_all(*f);
  CHECK(deleted == 10);
  CHECK(calls >= 1);
  CHECK(state() == before);
  // No checkpoint below the boundary remains, and no stale pin or pin count.
  auto head = raw.get({"GET", p + ":s:snap:r"});
  REQUIRE(head.has_value());
  CHECK(Json::parse(*head)["index"] == 13);
  CHECK(raw.list({"ZRANGEBYSCORE", p + ":s:snap-history:r", "-inf", "(11"}).empty());
  CHECK(raw.integer({"ZCARD", p + ":s:snap-history:r"}) == 1);  // 12, pinned by 13.
  auto counts = raw.list({"HGETALL", p + ":s:snapshot-pin-counts"});
  REQUIRE(counts.size() == 2);
  CHECK(Json::parse(counts[0])[1] == "12");
  CHECK(raw.integer({"EXISTS", p + ":s:snapshot-pins:8"}) == 0);
  CHECK(raw.integer({"EXISTS", p + ":s:snapshot-pins:13"}) == 1);
  CHECK(old_traces(raw, p, 11).empty());
}

TEST_CASE("reclaim leaves no metadata, lane pointer, pin set, id record or moved log",
          "[redis][reclaim][S129]") {
  const auto p = unique_prefix("traces");
  auto f = open_fixture(p);
  Raw raw;
  (void)f->append("s", {in_lane(ev(), "L"), in_lane(ev(), "L"), in_lane(ev(), "M:x"), ev(), ev(),
                        settled(ev())});
  auto claimed = claim(*f);
  REQUIRE(claimed.verdict == ClaimVerdict::claimed);
  (void)complete(
      *f, "s", 1, 1,
      {child("c1"),
       ChildEvent{.id = "c2",
                  .type = "t",
                  .payload = nullptr,
                  .lane = "L",
                  .settled = false,
                  .available_at_ms = 4'000'000'000'000}});  // Stores av: reclaim deletes it.
  (void)fail(*f, "s", 4, 1, 1);                             // Dead letter.
  (void)fail(*f, "s", 5, 1, 3);
  f->put_snapshots("s", "r",
                   {{.index = 3, .state = 3, .pin_event_indexes = {2, 5}},
                    {.index = 6, .state = 6, .pin_event_indexes = {}}});
  auto first = clear(*f);
  (void)f->append("s", {in_lane(ev(), "L")});  // The new lifetime reuses lane L.
  (void)f->append("s", evs(2));
  auto second = clear(*f);                                  // Two moved logs.
  (void)f->append("s", {in_lane(ev(), "L"), ev_id("c1")});  // An old id reused.
  REQUIRE(second.clear_index > first.clear_index);
  auto [deleted, calls] = reclaim_all(*f);
  CHECK(deleted == second.clear_index - 1);
  CHECK(calls >= 1);
  auto traces = old_traces(raw, p, second.clear_index);
  INFO(Json(traces).dump());
  CHECK(traces.empty());
  // The new lifetime is intact: its lane head, the reused id's record.
  CHECK(raw.get({"HGET", p + ":s:meta", "__lane:1:L:head"}) ==
        std::to_string(second.clear_index + 1));
  CHECK(raw.get({"GET", p + ":ids:\"c1\""}) ==
        "[\"s\"," + std::to_string(second.clear_index + 2) + "]");
  auto c = claim(*f);
  REQUIRE(c.verdict == ClaimVerdict::claimed);
  CHECK(indexes_of(c.events) ==
        std::vector<std::int64_t>{second.clear_index + 1, second.clear_index + 2});
}

TEST_CASE("reclaim of 2500 old events empties chunks 0 and 1 and leaves the marker's field",
          "[redis][reclaim][S130]") {
  const auto p = unique_prefix("big");
  auto f = open_fixture(p);
  Raw raw;
  std::vector<NewEvent> batch;
  for (int i = 1; i <= 2500; ++i) {
    NewEvent e = ev();
    if (i % 7 == 0) e.lane = "L" + std::to_string(i % 3);
    if (i % 11 == 0) e.settled = true;
    batch.push_back(std::move(e));
  }
  (void)f->append("s", std::move(batch));
  auto claimed = claim(*f);
  REQUIRE(claimed.verdict == ClaimVerdict::claimed);
  int n = 0;
  for (const auto& e : claimed.events) {
    if (++n % 5 == 0)
      (void)fail(*f, "s", e.index, 1, n % 10 == 0 ? 1 : 3);
    else if (n % 5 == 1)
      (void)complete(*f, "s", e.index, 1);
  }
  REQUIRE(raw.integer({"EXISTS", p + ":s:meta:0"}) == 1);
  REQUIRE(raw.integer({"EXISTS", p + ":s:meta:2"}) == 1);
  REQUIRE(clear(*f).clear_index == 2501);
  auto [deleted, calls] = reclaim_all(*f);
  CHECK(deleted == 2500);
  CHECK(calls >= 10);
  CHECK(raw.integer({"EXISTS", p + ":s:meta:0"}) == 0);
  CHECK(raw.integer({"EXISTS", p + ":s:meta:1"}) == 0);
  CHECK(raw.list({"HKEYS", p + ":s:meta:2"}) == std::vector<std::string>{"2501:p"});
  CHECK(old_traces(raw, p, 2501).empty());
}

}  // namespace
}  // namespace a2::redis_test
