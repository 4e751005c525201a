// SPDX-License-Identifier: MIT
// The store's clock (Options::clock) as input (docs/semantics.md#input-limits): a reading outside
// 0..2^53-1 fails the call that made it and changes nothing (S251); a lease end or presence
// expiry past 2^53-1 is 2^53-1 (S252).

#include <catch2/catch.hpp>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "support/bad_input.hpp"
#include "support/support.hpp"

namespace a2::conformance {
namespace {

TEST_CASE(
    "a clock reading outside 0..2^53-1 fails the call with invalid_argument, changing nothing",
    "[clock][bad_input][S251]") {
  auto f = fresh();
  Store& s = *f;
  (void)s.append("s", {ev_id("a"), ev_id("b"), ev_id("c")});
  REQUIRE(claim(s).events.size() == 3);
  REQUIRE(fail(s, "s", 3, 1, 1).verdict == FailVerdict::dead_lettered);
  s.put_snapshots("s", "r", {{1, Json{{"n", 1}}, {}}});
  (void)s.append("s2", {ev_id("x")});
  (void)s.patch_presence("s", {.participant = "p1", .state = Json(1), .ttl_ms = 60000});
  const std::int64_t good = f.clock->now_ms();

  const std::vector<std::pair<std::string, std::function<void()>>> calls{
      {"append", [&] { (void)s.append("s", {ev_id("new")}); }},
      {"append to a new session", [&] { (void)s.append("s3", {ev_id("new")}); }},
      {"claim_available", [&] { (void)claim(s, "s2"); }},
      {"renew_claims",
       [&] {
         (void)s.renew_claims(
             {.session_id = "s", .holder = "w1", .claims = {{1, 1}}, .ttl_ms = kTtl});
       }},
      {"release_claims",
       [&] {
         (void)s.release_claims({.session_id = "s", .holder = "w1", .claims = {{1, 1}}});
       }},
      {"held_claims", [&] { (void)s.held_claims("s", "w1"); }},
      {"complete_attempt", [&] { (void)complete(s, "s", 1, 1, {child("c1")}); }},
      {"complete_attempts",
       [&] {
         (void)s.complete_attempts(
             {.session_id = "s", .completions = {{.index = 2, .attempt = 1, .events = {}}}});
       }},
      {"fail_attempt", [&] { (void)fail(s, "s", 1, 1); }},
      {"redrive",
       [&] { (void)s.redrive({.session_id = "s", .index = 3, .action = RedriveAction::retry}); }},
      {"put_snapshots",
       [&] {
         s.put_snapshots("s", "r", {{2, Json{{"n", 2}}, {}}});
       }},
      {"clear", [&] { (void)s.clear({.session_id = "s"}); }},
      {"patch_presence",
       [&] {
         (void)s.patch_presence("s", {.participant = "p2", .state = Json(2), .ttl_ms = 1000});
       }},
      {"read_presence", [&] { (void)s.read_presence("s"); }},
      {"inspect_session", [&] { (void)s.inspect_session("s"); }},
      {"list_sessions", [&] { (void)s.list_sessions({}); }},
  };
  for (const std::int64_t bad :
       {std::int64_t{-1}, kBeyondSafe, std::numeric_limits<std::int64_t>::min(),
        std::numeric_limits<std::int64_t>::max()}) {
    for (const auto& [name, call] : calls) {
      INFO(name << " with the clock at " << bad);
      const Json before = world(s);
      f.clock->set(bad);
      require_error(ErrorCode::invalid_argument, call);
      f.clock->set(good);
      REQUIRE(world(s) == before);
    }
  }
  // The store's own time reads through the same check.
  f.clock->set(-1);
  require_error(ErrorCode::invalid_argument, [&] { (void)s.now_ms(); });
  f.clock->set(good);
  REQUIRE(s.now_ms() == good);
}

TEST_CASE("a lease end or presence expiry past 2^53-1 is 2^53-1", "[clock][claim][S252]") {
  auto f = fresh();
  Store& s = *f;
  f.clock->set(kMaxSafeInteger - 1000);
  (void)s.append("s", {ev_id("a"), ev_id("b")});
  auto c = s.claim_available({.session_id = "s", .holder = "w1", .ttl_ms = 5000, .max_events = 1});
  REQUIRE(c.verdict == ClaimVerdict::claimed);
  REQUIRE(c.events.at(0).claim_expires_at == kMaxSafeInteger);
  REQUIRE(row(s, "s", 1).claim_expires_at == kMaxSafeInteger);
  auto r = s.renew_claims(
      {.session_id = "s", .holder = "w1", .claims = {{1, 1}}, .ttl_ms = kMaxSafeInteger});
  REQUIRE(r.renewed.size() == 1);
  REQUIRE(row(s, "s", 1).claim_expires_at == kMaxSafeInteger);
  // claim_next computes its lease the same way.
  auto done = s.complete_attempt({.session_id = "s",
                                  .index = 1,
                                  .attempt = 1,
                                  .events = {},
                                  .claim_next = ClaimNext{.holder = "w1", .ttl_ms = 2000}});
  REQUIRE(done.verdict == CompleteVerdict::completed);
  REQUIRE(done.next.has_value());
  REQUIRE(done.next->events.at(0).index == 2);
  REQUIRE(row(s, "s", 2).claim_expires_at == kMaxSafeInteger);

  (void)s.patch_presence("s", {.participant = "p1", .state = Json(1), .ttl_ms = 5000});
  f.clock->advance(999);  // 2^53-2: the entry, expiring at 2^53-1, still lives.
  REQUIRE(s.read_presence("s").count("p1") == 1);
  f.clock->advance(1);  // 2^53-1: expired.
  REQUIRE(s.read_presence("s").count("p1") == 0);
}

}  // namespace
}  // namespace a2::conformance
