// SPDX-License-Identifier: MIT
// Races placed exactly with the backend's test hook (src/redis/test_hooks.hpp): a clear between a
// read's bounds and its pages (docs/redis-layout.md#range-gaps) and between a replay verdict and
// its read (docs/semantics.md#append step 5, docs/semantics.md#complete_attempt step 3).
#include <atomic>

#include "hook_guard.hpp"
#include "redis/test_hooks.hpp"
#include "support.hpp"

namespace a2::redis_test {
namespace {
using namespace a2::conformance;

TEST_CASE("read retries once from fresh bounds when a clear moved the log", "[redis][read][S40]") {
  auto f = open_fixture(unique_prefix("gap"));
  (void)f->append("s", evs(3));
  std::atomic<int> clears{0};
  SECTION("read") {
    HookGuard hook([&](std::string_view stage, const std::string& s) {
      if (stage == "read_bounds" && s == "s" && clears.fetch_add(1) == 0) (void)clear(*f);
    });
    auto rows = f->read("s");
    REQUIRE(indexes_of(rows) == std::vector<std::int64_t>{4});
    CHECK(rows[0].type == kClearEventType);
  }
  SECTION("read_history") {
    HookGuard hook([&](std::string_view stage, const std::string& s) {
      if (stage == "read_bounds" && s == "s" && clears.fetch_add(1) == 0) (void)clear(*f);
    });
    CHECK(indexes_of(f->read_history("s")) == std::vector<std::int64_t>{4});
  }
  SECTION("read_range") {
    HookGuard hook([&](std::string_view stage, const std::string& s) {
      if (stage == "read_bounds" && s == "s" && clears.fetch_add(1) == 0) (void)clear(*f);
    });
    CHECK(indexes_of(f->read_range("s", 0)) == std::vector<std::int64_t>{4});
  }
  CHECK(clears.load() == 2);  // The hook ran for the first read and for its one retry.
}

TEST_CASE("read fails with Unavailable when the retry meets a second gap", "[redis][read][S40]") {
  auto f = open_fixture(unique_prefix("gap2"));
  (void)f->append("s", evs(3));
  std::atomic<int> calls{0};
  HookGuard hook([&](std::string_view stage, const std::string& s) {
    if (stage != "read_bounds" || s != "s") return;
    ++calls;
    (void)f->append("s", evs(1));
    (void)clear(*f);
  });
  require_error(ErrorCode::store_unavailable, [&] { (void)f->read("s"); });
  CHECK(calls.load() == 2);  // One retry, not more.
  calls = 0;
  require_error(ErrorCode::store_unavailable, [&] { (void)f->read_history("s"); });
  CHECK(calls.load() == 2);
}

TEST_CASE("an append replay racing a clear asks for a retry, which appends after the marker",
          "[redis][append][S136]") {
  auto f = open_fixture(unique_prefix("race136"));
  REQUIRE(f->append("s", {ev_id("k")}).events.at(0).index == 1);
  {
    std::atomic<int> clears{0};
    HookGuard hook([&](std::string_view stage, const std::string& s) {
      if (stage == "append_replay" && s == "s" && clears.fetch_add(1) == 0) (void)clear(*f);
    });
    try {
      (void)f->append("s", {ev_id("k")});
      FAIL("the replay did not notice the clear");
    } catch (const Unavailable& e) {
      CHECK(std::string(e.what()).find(
                "session 's' was cleared while an append retry replayed; retry it") !=
            std::string::npos);
    }
    CHECK(clears.load() == 1);
  }
  auto retry = f->append("s", {ev_id("k")});
  REQUIRE(retry.events.size() == 1);
  CHECK(retry.events[0].index == 3);  // After the marker at 2.
  CHECK(indexes_of(f->read("s")) == std::vector<std::int64_t>{2, 3});
}

TEST_CASE("a completion replay racing a clear is superseded", "[redis][complete][S137]") {
  auto f = open_fixture(unique_prefix("race137"));
  (void)f->append("s", evs(1));
  REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);
  REQUIRE(complete(*f, "s", 1, 1, {child("c1")}).verdict == CompleteVerdict::completed);
  std::atomic<int> clears{0};
  HookGuard hook([&](std::string_view stage, const std::string& s) {
    if (stage == "complete_replay" && s == "s" && clears.fetch_add(1) == 0) (void)clear(*f);
  });
  auto r = complete(*f, "s", 1, 1, {child("c1")});
  CHECK(r.verdict == CompleteVerdict::superseded);
  CHECK(r.events.empty());
  CHECK(clears.load() == 1);
}

TEST_CASE("replays without a race return the stored rows", "[redis][append][complete]") {
  auto f = open_fixture(unique_prefix("replay"));
  std::atomic<int> replays{0};
  HookGuard hook([&](std::string_view stage, const std::string&) {
    if (stage == "append_replay" || stage == "complete_replay") ++replays;
  });
  (void)f->append("s", {ev_id("a"), ev_id("b")});
  REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);
  auto again = f->append("s", {ev_id("a"), ev_id("b")});
  CHECK(indexes_of(again.events) == std::vector<std::int64_t>{1, 2});
  CHECK(again.events[0].attempt_count == 1);
  (void)complete(*f, "s", 1, 1, {child("c1"), child("c2")});
  auto replay = complete(*f, "s", 1, 1, {child("c1"), child("c2")});
  REQUIRE(replay.verdict == CompleteVerdict::completed);
  CHECK(indexes_of(replay.events) == std::vector<std::int64_t>{3, 4});
  CHECK(replay.events[0].cause == std::optional<EventCause>(EventCause{1, 1}));
  CHECK(replays.load() == 2);
}

}  // namespace
}  // namespace a2::redis_test
