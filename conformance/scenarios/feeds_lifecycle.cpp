// SPDX-License-Identifier: MIT
// docs/semantics.md#feed-presence-and-lifecycle-scenarios: feeds, presence and lifecycle (scenarios
// 148-151).

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "support/as_json.hpp"
#include "support/lifecycle.hpp"
#include "support/support.hpp"

namespace a2::conformance {
namespace {

using std::chrono::milliseconds;

std::vector<std::int64_t> feed_indexes(const std::vector<Event>& events) {
  return indexes_of(events);
}

TEST_CASE("subscribe yields the catch-up, then new events in order, then the clear marker",
          "[subscribe][S148]") {
  auto f = fresh();
  (void)f->append("s", {ev_id("a", "t", Json{{"n", 1}}), ev_id("b", "u", Json::array({1, 2})),
                        settled(ev_id("c"))});
  auto feed = f->subscribe("s", 0);
  REQUIRE(feed->cursor() == 0);
  REQUIRE_FALSE(feed->cancelled());

  auto first = collect(*feed, 3);
  REQUIRE(feed_indexes(first) == range(1, 3));
  auto stored = f->read_history("s");
  for (std::size_t i = 0; i < 3; ++i) REQUIRE(event_json(first[i]) == event_json(stored[i]));
  REQUIRE(feed->cursor() == 3);

  SECTION("new events, the marker, and nothing twice") {
    (void)f->append("s", {ev_id("d"), ev_id("e")});
    REQUIRE(feed_indexes(collect(*feed, 2)) == range(4, 5));

    // An append from another thread wakes a waiting next().
    std::thread writer([&] {
      std::this_thread::sleep_for(milliseconds(30));
      (void)f->append("s", {ev_id("f", "t", "late")});
    });
    auto woken = collect(*feed, 1);
    writer.join();
    REQUIRE(feed_indexes(woken) == std::vector<std::int64_t>{6});
    REQUIRE(woken[0].payload == "late");

    REQUIRE(clear(*f).clear_index == 7);
    auto marker = collect(*feed, 1);
    REQUIRE(feed_indexes(marker) == std::vector<std::int64_t>{7});
    REQUIRE(marker[0].type == kClearEventType);
    REQUIRE(marker[0].payload.is_null());

    (void)f->append("s", {ev_id("g")});
    REQUIRE(feed_indexes(collect(*feed, 1)) == std::vector<std::int64_t>{8});
    REQUIRE(feed->next(milliseconds(30)).empty());  // No duplicates, nothing more.
    REQUIRE(feed->cursor() == 8);
    feed->cancel();
    REQUIRE(feed->cancelled());
    REQUIRE(feed->next(milliseconds(30)).empty());
  }
  SECTION("cancel wakes a waiting next() and is idempotent") {
    std::vector<Event> got{Event{}};
    auto started = std::chrono::steady_clock::now();
    std::thread reader([&] { got = feed->next(milliseconds(20000)); });
    std::this_thread::sleep_for(milliseconds(50));
    feed->cancel();
    reader.join();
    auto waited = std::chrono::steady_clock::now() - started;
    REQUIRE(got.empty());
    REQUIRE(waited < std::chrono::seconds(5));
    feed->cancel();
    REQUIRE(feed->cancelled());
    (void)f->append("s", {ev_id("d")});
    REQUIRE(feed->next(milliseconds(30)).empty());
  }
  SECTION("a second feed from a later cursor sees only the later events") {
    auto later = f->subscribe("s", 2);
    REQUIRE(later->cursor() == 2);
    REQUIRE(feed_indexes(collect(*later, 1)) == std::vector<std::int64_t>{3});
    (void)f->append("s", {ev_id("d")});
    REQUIRE(feed_indexes(collect(*later, 1)) == std::vector<std::int64_t>{4});
    REQUIRE(feed_indexes(collect(*feed, 1)) == std::vector<std::int64_t>{4});
    later->cancel();
    feed->cancel();
  }
}

TEST_CASE("subscribe with a cursor below the boundary resumes at the marker", "[subscribe][S149]") {
  auto f = fresh();
  (void)f->append("s", evs_with_ids("e", 5));
  REQUIRE(clear(*f).clear_index == 6);
  (void)f->append("s", {ev_id("x"), ev_id("y")});

  SECTION("cursor 0") {
    auto feed = f->subscribe("s", 0);
    auto got = collect(*feed, 3);
    REQUIRE(feed_indexes(got) == range(6, 8));
    REQUIRE(got[0].type == kClearEventType);
    REQUIRE(feed->next(milliseconds(30)).empty());
    feed->cancel();
  }
  SECTION("a cursor inside the old lifetime") {
    auto feed = f->subscribe("s", 3);
    auto got = collect(*feed, 3);
    REQUIRE(feed_indexes(got) == range(6, 8));
    REQUIRE(got[0].type == kClearEventType);
    feed->cancel();
  }
  SECTION("a cursor just below the marker") {
    auto feed = f->subscribe("s", 5);
    REQUIRE(feed_indexes(collect(*feed, 3)) == range(6, 8));
    feed->cancel();
  }
  SECTION("a cursor at the marker skips it") {
    auto feed = f->subscribe("s", 6);
    REQUIRE(feed_indexes(collect(*feed, 2)) == range(7, 8));
    REQUIRE(feed->next(milliseconds(30)).empty());
    feed->cancel();
  }
}

TEST_CASE("patch_presence lists participants until their ttl lapses, unaffected by clear",
          "[presence][S150]") {
  auto f = fresh();
  auto live =
      f->patch_presence("s", {.participant = "p1", .state = Json{{"name", "a"}}, .ttl_ms = 1000});
  REQUIRE(live.size() == 1);
  REQUIRE(live.at("p1") == Json{{"name", "a"}});
  REQUIRE(f->read_presence("s") == live);
  REQUIRE(f->read_presence("s2").empty());

  f.clock->advance(500);
  REQUIRE(f->read_presence("s").count("p1") == 1);
  f.clock->advance(501);  // T0 + 1001: past the expiry.
  REQUIRE(f->read_presence("s").empty());

  live =
      f->patch_presence("s", {.participant = "p1", .state = Json{{"name", "b"}}, .ttl_ms = 5000});
  REQUIRE(live.at("p1") == Json{{"name", "b"}});
  live = f->patch_presence("s", {.participant = "p2", .state = Json(true), .ttl_ms = 5000});
  REQUIRE(live.size() == 2);
  live = f->patch_presence("s", {.participant = "p1", .state = nullptr, .ttl_ms = 0});
  REQUIRE(live.size() == 1);
  REQUIRE(live.at("p2") == Json(true));
  REQUIRE(f->read_presence("s") == live);

  (void)f->append("s", evs_with_ids("e", 3));
  REQUIRE(clear(*f).cleared);
  REQUIRE(f->read_presence("s") == live);
  (void)reclaim_all(*f);
  REQUIRE(f->read_presence("s") == live);
  REQUIRE(f->read_presence("s2").empty());
  // Presence is not in the log.
  REQUIRE(indexes_of(f->read("s")) == std::vector<std::int64_t>{4});
}

TEST_CASE("close is idempotent and every operation afterwards throws store_unavailable",
          "[close][S151]") {
  auto f = fresh();
  SECTION("a store with data and an open feed") {
    (void)f->append("s", {ev_id("a"), ev_id("b")});
    REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);
    auto feed = f->subscribe("s", 0);
    REQUIRE(feed_indexes(collect(*feed, 2)) == range(1, 2));
    f->close();
    REQUIRE(f->closed());
    // A feed of a closed store reports the store as unavailable (feed.hpp).
    require_error(ErrorCode::store_unavailable, [&] { (void)feed->next(milliseconds(30)); });
    feed.reset();
  }
  SECTION("an empty store") {
    REQUIRE_FALSE(f->closed());
    f->close();
  }
  f->close();  // A second close is fine.
  REQUIRE(f->closed());

  const auto unavailable = [](auto&& op) { require_error(ErrorCode::store_unavailable, op); };
  unavailable([&] { (void)f->append("s", {ev_id("z")}); });
  unavailable([&] { (void)f->append("s", {}); });
  unavailable([&] { (void)f->read("s"); });
  unavailable([&] { (void)f->read("s", {.after_index = 2, .through_index = 1}); });
  unavailable([&] { (void)f->read_history("s"); });
  unavailable([&] { (void)f->read_range("s", 0, 2); });
  unavailable([&] { (void)f->read_tail("s", 1); });
  unavailable([&] { (void)f->read_events("s", 0); });
  unavailable([&] { (void)f->read_feed_page("s", 0); });
  unavailable([&] { (void)claim(*f); });
  unavailable([&] {
    (void)f->renew_claims({.session_id = "s",
                           .holder = "w1",
                           .claims = {{1, 1}},
                           .ttl_ms = kTtl,
                           .expires_at_ms = std::nullopt});
  });
  unavailable([&] { (void)complete(*f, "s", 1, 1); });
  unavailable([&] { (void)fail(*f, "s", 1, 1); });
  unavailable([&] { (void)f->dead_letters("s"); });
  unavailable([&] { (void)redrive(*f, "s", 1, RedriveAction::retry); });
  unavailable([&] { (void)f->read_state("s", "r"); });
  unavailable([&] {
    (void)f->read_states("r", {{.session_id = "s",
                                .through_index = std::nullopt,
                                .snapshot_through_index = std::nullopt}});
  });
  unavailable([&] { (void)f->read_states("r", {}); });
  unavailable([&] { f->put_snapshots("s", "r", {{1, Json(1), {}}}); });
  unavailable([&] { f->put_snapshots("s", "r", {}); });
  unavailable([&] { (void)clear(*f); });
  unavailable([&] { (void)clear(*f, "s", 2); });
  unavailable([&] { (void)f->reclaim("s"); });
  unavailable([&] { (void)f->subscribe("s", 0); });
  unavailable([&] {
    (void)f->patch_presence("s", {.participant = "p", .state = Json(1), .ttl_ms = 1000});
  });
  unavailable([&] { (void)f->read_presence("s"); });
  f->close();
  REQUIRE(f->closed());
}

}  // namespace
}  // namespace a2::conformance
