// SPDX-License-Identifier: MIT
// The range read's pages (docs/redis-layout.md#reads): a 10k-event read is the bounds, then a
// staged pipeline of XRANGE pages and one HGETALL/HMGET per metadata hash (batches of two pages,
// each sent once the previous one is answered), returns what reads of small ranges (HMGET of
// each index's fields) return, on chunked metadata and on metadata that predates chunking (the
// split), keeps the range-gap rule (docs/redis-layout.md#range-gaps) when a clear lands between
// the bounds and the pages, and never leaves unread replies on a pooled connection.
#include <algorithm>
#include <atomic>

#include "hook_guard.hpp"
#include "redis/test_hooks.hpp"
#include "support.hpp"
#include "support/recorder.hpp"

namespace a2::redis_test {
namespace {
using namespace a2::conformance;

// The rows of `s` read in ranges of 100 events: each range covers less than half of a metadata
// chunk, so its fields come from HMGET.
Json rows_in_small_ranges(Store& store, const std::string& s, std::int64_t count) {
  Json rows = Json::array();
  for (std::int64_t after = 0; after < count; after += 100)
    for (const auto& e : store.read_range(s, after, std::min(after + 100, count)))
      rows.push_back(to_json(e));
  return rows;
}

Json rows_of(const std::vector<StoredEvent>& events) {
  Json rows = Json::array();
  for (const auto& e : events) rows.push_back(to_json(e));
  return rows;
}

TEST_CASE("a read of 10k events is one round trip per two pages and equals reads of small ranges",
          "[redis][read]") {
  auto recorder = std::make_shared<Recorder>();
  const auto prefix = unique_prefix("pages");
  Fixture f{std::make_shared<ManualClock>(kT0), std::make_shared<SequentialIdSource>("g"), nullptr};
  auto options = options_for(a2::test::RedisServer::shared().url(), prefix);
  options.observe.observer = recorder;
  options.clock = f.clock;
  options.ids = f.ids;
  f.store = a2::redis::open(options);
  Store& store = *f.store;

  // 10,000 events: settled ones (`p`), three unsettled ones (7, 1500, 9999: completed with a
  // child, dead-lettered, held), laned ones, payloads of every JSON kind.
  const std::vector<std::int64_t> work = {7, 1500, 9999};
  for (std::int64_t first = 1; first <= 10000; first += 1000) {
    std::vector<NewEvent> batch;
    for (std::int64_t i = first; i < first + 1000; ++i) {
      NewEvent e = ev("t" + std::to_string(i % 3), Json{{"n", i}, {"s", "x"}, {"a", {1, 2.5}}});
      if (i % 7 == 0) e.lane = "lane" + std::to_string(i % 2);
      if (std::find(work.begin(), work.end(), i) == work.end()) e = settled(std::move(e));
      batch.push_back(std::move(e));
    }
    (void)store.append("s", batch);
  }
  auto claimed = claim(store);  // All three, attempt 1.
  REQUIRE(indexes_of(claimed.events) == work);
  REQUIRE(complete(store, "s", 7, 1, {child("c1")}).verdict == CompleteVerdict::completed);
  REQUIRE(fail(store, "s", 1500, 1, 1, "bad").verdict == FailVerdict::dead_lettered);
  const std::int64_t count = 10001;  // With the child.

  // Expected rows from ranges of 100 (HMGET), compared with one read() (HGETALL of each chunk).
  const Json expected = rows_in_small_ranges(store, "s", count);
  // `round_trips`: the bounds (MGET), then one per batch of two pages; a page is at most one
  // metadata hash's events.
  auto check = [&](int round_trips) {
    recorder->clear();
    auto rows = store.read("s");
    REQUIRE(recorder->last().operation == "read");
    CHECK(recorder->last().round_trips == round_trips);
    REQUIRE(rows.size() == static_cast<std::size_t>(count));
    const Json got = rows_of(rows);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      INFO("index " << i + 1);
      REQUIRE(got[i] == expected[i]);
    }
    auto history = store.read_history("s");
    CHECK(recorder->last().round_trips == 7);  // The bounds, then 6 batches of 2 XRANGE pages.
    REQUIRE(history.size() == rows.size());
    CHECK(history.back().id == rows.back().id);
    CHECK(history[4321].payload == rows[4321].payload);
    CHECK(got[6]["returned_event_ids"] == Json::array({"c1"}));
    CHECK(got[1499]["last_error"] == "bad");
    CHECK(got[9998]["claim_holder"] == "w1");
    CHECK(got[8]["processed_at"] != nullptr);
    // A range within one chunk, more than half of it: HGETALL, fields of other indexes ignored.
    CHECK(rows_of(store.read_range("s", 1200, 1900)) ==
          Json(std::vector<Json>(expected.begin() + 1200, expected.begin() + 1900)));
  };
  check(7);  // Pages 1-999, 1000-1999, ..., 9000-9999, 10000-10001: 11 pages, 6 batches.
  // As a session that predates chunking left it: the metadata of indexes <= 1500 in p:S:meta
  // (HMGET of the base hash, then HGETALL of the chunks above the split).
  Raw raw;
  const std::string meta = prefix + ":s:meta";
  for (const std::string chunk : {"0", "1"}) {
    auto fields = raw.list({"HGETALL", meta + ":" + chunk});
    std::vector<std::string> hset{"HSET", meta};
    std::vector<std::string> hdel{"HDEL", meta + ":" + chunk};
    for (std::size_t at = 0; at + 1 < fields.size(); at += 2) {
      if (std::stoll(fields[at].substr(0, fields[at].find(':'))) > 1500) continue;
      hset.insert(hset.end(), {fields[at], fields[at + 1]});
      hdel.push_back(fields[at]);
    }
    REQUIRE(hset.size() > 2);
    (void)raw.integer(hset);
    (void)raw.integer(hdel);
  }
  REQUIRE(raw.get({"SET", prefix + ":s:meta-split", "1500"}) == "OK");
  check(7);  // Pages 1-999, 1000-1500 (the base hash), 1501-1999, ...: 12 pages, 6 batches.
}

TEST_CASE("a read that fails with a batch in flight does not leave its replies to the next call",
          "[redis][read]") {
  // Default pool options: the failed read's connection would be the next call's (the most
  // recently given back) if it went back to the pool.
  const auto prefix = unique_prefix("pagesinflight");
  auto f = open_fixture(prefix);
  for (int i = 0; i < 5; ++i) (void)f->append("g", std::vector<NewEvent>(1000, settled(ev())));
  (void)f->append("other", evs(3));
  // A stream entry missing from the first page: its decoding fails (a range gap, retried once)
  // while the second batch's replies are still on the way.
  Raw raw;
  REQUIRE(raw.integer({"XDEL", prefix + ":g:log", "500-0"}) == 1);
  CHECK_THROWS_AS(f->read("g"), a2::Unavailable);
  for (int i = 0; i < 8; ++i) {  // Every connection of the pool, in turn.
    CHECK(indexes_of(f->read("other")) == range(1, 3));
    CHECK(indexes_of(f->read_range("g", 1000, 1003)) == range(1001, 1003));
  }
  CHECK_THROWS_AS(f->read("g"), a2::Unavailable);  // The same gap, reported again.
}

TEST_CASE("a read of many pages keeps its bounds and the range-gap rule", "[redis][read][S40]") {
  auto f = open_fixture(unique_prefix("pagesgap"));
  (void)f->append("s", std::vector<NewEvent>(1000, settled(ev())));
  (void)f->append("s", std::vector<NewEvent>(1000, settled(ev())));
  (void)f->append("s", std::vector<NewEvent>(500, settled(ev())));
  std::atomic<int> calls{0};
  SECTION("events appended after the bounds are not read") {
    HookGuard hook([&](std::string_view stage, const std::string& s) {
      if (stage == "read_bounds" && s == "s" && calls.fetch_add(1) == 0)
        (void)f->append("s", evs(10));
    });
    CHECK(indexes_of(f->read("s")) == range(1, 2500));
    CHECK(f->read("s").size() == 2510);
  }
  SECTION("a clear after the bounds: one retry from fresh bounds") {
    HookGuard hook([&](std::string_view stage, const std::string& s) {
      if (stage == "read_bounds" && s == "s" && calls.fetch_add(1) == 0) (void)clear(*f);
    });
    CHECK(indexes_of(f->read("s")) == std::vector<std::int64_t>{2501});
    CHECK(calls.load() == 2);
  }
}

}  // namespace
}  // namespace a2::redis_test
