// SPDX-License-Identifier: MIT
// Races placed exactly with the backend's test hook (src/redis/test_hooks.hpp): a clear between a
// read's bounds and its pages (docs/redis-layout.md#range-gaps). Replays read nothing after their
// script (docs/semantics.md#S136, #S137: conformance/scenarios/observe.cpp).
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

}  // namespace
}  // namespace a2::redis_test
