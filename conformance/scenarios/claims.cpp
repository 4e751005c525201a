// SPDX-License-Identifier: MIT
// Conformance scenarios 43-62 (docs/semantics.md#claim-and-renewal-scenarios): claim_available and
// renew_claims.

#include "support/claims.hpp"

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "harness.hpp"
#include "support/support.hpp"

using namespace a2::conformance;
using a2::ClaimVerdict;
using a2::CompleteVerdict;
using a2::FailVerdict;
using a2::Json;

namespace {

using Indexes = std::vector<std::int64_t>;

// REQUIREs the lease fields of a row claimed once by `holder` at `at` until `until`.
void require_claimed(const a2::StoredEvent& e, std::int64_t attempt, const std::string& holder,
                     std::int64_t first_at, std::int64_t last_at, std::int64_t until) {
  INFO("index " << e.index);
  REQUIRE(e.attempt_count == attempt);
  REQUIRE(e.claim_holder == holder);
  REQUIRE(e.claim_expires_at == until);
  REQUIRE(e.first_claimed_at == first_at);
  REQUIRE(e.last_claimed_at == last_at);
  REQUIRE_FALSE(e.processed_at.has_value());
  REQUIRE_FALSE(e.processed_by_attempt.has_value());
  REQUIRE_FALSE(e.returned_event_ids.has_value());
  REQUIRE_FALSE(e.failed_at.has_value());
}

}  // namespace

TEST_CASE("claim_available on a new session is settled", "[claim][S43]") {
  auto f = a2::conformance::fresh();
  auto c = claim(*f);
  REQUIRE(c.verdict == ClaimVerdict::settled);
  REQUIRE(c.events.empty());
  REQUIRE(f->read("s").empty());
}

TEST_CASE("claim_available claims every ready event with a fresh lease", "[claim][S44]") {
  auto f = a2::conformance::fresh();
  given(*f, {ev("t", Json{{"n", 1}}), ev("t", Json{{"n", 2}}), ev("t", Json{{"n", 3}})});
  auto c = claim(*f);
  REQUIRE(c.verdict == ClaimVerdict::claimed);
  REQUIRE(indexes_of(c.events) == range(1, 3));
  for (const auto& e : c.events) {
    require_claimed(e, 1, "w1", kT0, kT0, kT0 + kTtl);
    CHECK(e.failure_count == 0);
    CHECK_FALSE(e.last_error.has_value());
    CHECK_FALSE(e.last_failed_at.has_value());
    CHECK_FALSE(e.last_failed_attempt.has_value());
    CHECK_FALSE(e.clear_index.has_value());
    CHECK(e.session_id == "s");
    CHECK(e.type == "t");
    CHECK(e.payload == Json{{"n", e.index}});
    CHECK(e.created_at == kT0);
  }
  for (const auto& e : f->read("s")) require_claimed(e, 1, "w1", kT0, kT0, kT0 + kTtl);
}

TEST_CASE("claim_available reports busy until the earliest live lease ends", "[claim][S45]") {
  auto f = a2::conformance::fresh();
  given(*f, evs(3));
  REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);
  auto busy = claim(*f);
  REQUIRE(busy.verdict == ClaimVerdict::busy);
  REQUIRE(busy.retry_at == kT0 + kTtl);
  REQUIRE(busy.events.empty());
  f.clock->advance(kTtl - 1);
  auto still = claim(*f, "s", "w2");
  REQUIRE(still.verdict == ClaimVerdict::busy);
  REQUIRE(still.retry_at == kT0 + kTtl);
  for (const auto& e : f->read("s")) REQUIRE(e.attempt_count == 1);

  // Staggered leases (session s2): retry_at is the earliest expiry, not the first claim's.
  const auto t = kT0 + kTtl - 1;
  given(*f, {ev()}, "s2");
  REQUIRE(claim(*f, "s2").verdict == ClaimVerdict::claimed);  // Lease until t+30000.
  f.clock->advance(1000);
  given(*f, {ev()}, "s2");
  auto second = claim_until(*f, t + 5000, "s2");
  REQUIRE(indexes_of(second.events) == Indexes{2});
  f.clock->advance(1000);
  given(*f, {ev()}, "s2");
  auto third = claim(*f, "s2");  // Lease until t+2000+30000.
  REQUIRE(indexes_of(third.events) == Indexes{3});
  auto b = claim(*f, "s2");
  REQUIRE(b.verdict == ClaimVerdict::busy);
  REQUIRE(b.retry_at == t + 5000);
}

TEST_CASE("claim_available takes over expired leases with a new attempt", "[claim][S46]") {
  auto f = a2::conformance::fresh();
  given(*f, evs(3));
  REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);
  f.clock->advance(kTtl);  // Exactly at the lease end: expired.
  auto now = kT0 + kTtl;
  auto c = claim(*f, "s", "w2");
  REQUIRE(c.verdict == ClaimVerdict::claimed);
  REQUIRE(indexes_of(c.events) == range(1, 3));
  for (const auto& e : c.events) require_claimed(e, 2, "w2", kT0, now, now + kTtl);
  for (const auto& e : f->read("s")) require_claimed(e, 2, "w2", kT0, now, now + kTtl);
}

TEST_CASE("claim_available ignores excluded events entirely", "[claim][S47]") {
  auto f = a2::conformance::fresh();
  given(*f, evs(3));
  auto only3 = claim(*f, "s", "w1", {1, 2});
  REQUIRE(only3.verdict == ClaimVerdict::claimed);
  REQUIRE(indexes_of(only3.events) == Indexes{3});
  auto none = claim(*f, "s", "w1", {1, 2, 3});
  REQUIRE(none.verdict == ClaimVerdict::settled);
  auto busy = claim(*f, "s", "w1", {1, 2});
  REQUIRE(busy.verdict == ClaimVerdict::busy);
  REQUIRE(busy.retry_at == kT0 + kTtl);
  auto rows = f->read("s");
  REQUIRE(rows[0].attempt_count == 0);
  REQUIRE(rows[1].attempt_count == 0);
  REQUIRE(rows[2].attempt_count == 1);
}

TEST_CASE("claim_available excluding the only held event is settled, not busy", "[claim][S48]") {
  auto f = a2::conformance::fresh();
  given(*f, {ev()});
  REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);
  auto c = claim(*f, "s", "w1", {1});
  REQUIRE(c.verdict == ClaimVerdict::settled);
  REQUIRE(c.events.empty());
}

TEST_CASE("claim_available with only a dead letter pending is settled", "[claim][S49]") {
  auto f = a2::conformance::fresh();
  given(*f, {ev()});
  REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);
  REQUIRE(fail(*f, "s", 1, 1, 1).verdict == FailVerdict::dead_lettered);
  REQUIRE(claim(*f).verdict == ClaimVerdict::settled);
  f.clock->advance(kTtl + 1);
  REQUIRE(claim(*f).verdict == ClaimVerdict::settled);
  REQUIRE(has_pending(*f));
  REQUIRE(row(*f, "s", 1).attempt_count == 1);
}

TEST_CASE("claim_available serializes the events of a lane", "[claim][S50]") {
  auto f = a2::conformance::fresh();
  given(*f, {in_lane(ev(), "L"), in_lane(ev(), "L"), in_lane(ev(), "L")});
  for (std::int64_t i = 1; i <= 3; ++i) {
    INFO("lane step " << i);
    auto c = claim(*f);
    REQUIRE(c.verdict == ClaimVerdict::claimed);
    REQUIRE(indexes_of(c.events) == Indexes{i});
    REQUIRE(c.events[0].lane == "L");
    if (i < 3) {
      // The next lane event waits while its predecessor is held.
      auto busy = claim(*f);
      REQUIRE(busy.verdict == ClaimVerdict::busy);
    }
    REQUIRE(complete(*f, "s", i, 1).verdict == CompleteVerdict::completed);
  }
  REQUIRE(claim(*f).verdict == ClaimVerdict::settled);
}

TEST_CASE("claim_available returns every lane head and unlaned event at once", "[claim][S51]") {
  auto f = a2::conformance::fresh();
  given(*f, {in_lane(ev(), "L"), in_lane(ev(), "M"), in_lane(ev(), "L"), in_lane(ev(), "M"), ev()});
  auto c = claim(*f);
  REQUIRE(c.verdict == ClaimVerdict::claimed);
  REQUIRE(indexes_of(c.events) == Indexes{1, 2, 5});
  REQUIRE(c.events[0].lane == "L");
  REQUIRE(c.events[1].lane == "M");
  REQUIRE_FALSE(c.events[2].lane.has_value());
}

TEST_CASE("claim_available returns a failed event with its failure bookkeeping", "[claim][S52]") {
  auto f = a2::conformance::fresh();
  given(*f, {ev()});
  REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);
  f.clock->advance(100);
  auto failed = fail(*f, "s", 1, 1, 3, "handler exploded");
  REQUIRE(failed.verdict == FailVerdict::failed);
  REQUIRE(failed.failure_count == 1);
  f.clock->advance(100);
  auto c = claim(*f);
  REQUIRE(c.verdict == ClaimVerdict::claimed);
  REQUIRE(c.events.size() == 1);
  const auto& e = c.events[0];
  require_claimed(e, 2, "w1", kT0, kT0 + 200, kT0 + 200 + kTtl);
  REQUIRE(e.failure_count == 1);
  REQUIRE(e.last_error == "handler exploded");
  REQUIRE(e.last_failed_at == kT0 + 100);
  REQUIRE(e.last_failed_attempt == 1);
}

TEST_CASE("claim_available marks claimed events with the clear boundary", "[claim][S53]") {
  auto f = a2::conformance::fresh();
  given(*f, evs(2));
  auto before = claim(*f);
  REQUIRE(before.verdict == ClaimVerdict::claimed);
  for (const auto& e : before.events) REQUIRE_FALSE(e.clear_index.has_value());
  auto c = clear(*f);
  REQUIRE(c.clear_index == 3);
  given(*f, evs(2));
  auto after = claim(*f);
  REQUIRE(after.verdict == ClaimVerdict::claimed);
  REQUIRE(indexes_of(after.events) == Indexes{4, 5});
  for (const auto& e : after.events) {
    REQUIRE(e.clear_index == 3);
    REQUIRE(e.attempt_count == 1);
  }
}

TEST_CASE("claim_available after a clear ignores the old lifetime's work", "[claim][S54]") {
  auto f = a2::conformance::fresh();
  given(*f, {ev(), in_lane(ev(), "L"), in_lane(ev(), "L")});
  REQUIRE(clear(*f).clear_index == 4);
  REQUIRE(claim(*f).verdict == ClaimVerdict::settled);
  REQUIRE_FALSE(has_pending(*f));
  given(*f, {ev(), in_lane(ev(), "L")});
  auto c = claim(*f);
  REQUIRE(c.verdict == ClaimVerdict::claimed);
  REQUIRE(indexes_of(c.events) == Indexes{5, 6});
  for (const auto& e : c.events) REQUIRE(e.clear_index == 4);
}

TEST_CASE("claim_available with an absolute expiry uses it verbatim", "[claim][S55]") {
  auto f = a2::conformance::fresh();
  given(*f, evs(2));
  auto c = f->claim_available({.session_id = "s",
                               .holder = "w1",
                               .ttl_ms = 5,  // expires_at_ms wins.
                               .expires_at_ms = kT0 + 12345,
                               .exclude_indexes = {2}});
  REQUIRE(c.verdict == ClaimVerdict::claimed);
  REQUIRE(indexes_of(c.events) == Indexes{1});
  require_claimed(c.events[0], 1, "w1", kT0, kT0, kT0 + 12345);
  auto second = claim_until(*f, kT0 + 777);
  REQUIRE(indexes_of(second.events) == Indexes{2});
  require_claimed(second.events[0], 1, "w1", kT0, kT0, kT0 + 777);
  REQUIRE(row(*f, "s", 1).claim_expires_at == kT0 + 12345);
  REQUIRE(row(*f, "s", 2).claim_expires_at == kT0 + 777);
  auto busy = claim(*f);
  REQUIRE(busy.verdict == ClaimVerdict::busy);
  REQUIRE(busy.retry_at == kT0 + 777);
}

TEST_CASE("renew_claims extends a live lease of its holder", "[renew][S56]") {
  auto f = a2::conformance::fresh();
  given(*f, evs(2));
  REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);
  f.clock->advance(10'000);
  auto r = renew(*f, {{.index = 1, .attempt = 1}});
  REQUIRE(r.renewed == Indexes{1});
  REQUIRE(r.superseded.empty());
  auto one = row(*f, "s", 1);
  REQUIRE(one.claim_expires_at == kT0 + 10'000 + kTtl);
  REQUIRE(one.attempt_count == 1);
  REQUIRE(one.claim_holder == "w1");
  REQUIRE(row(*f, "s", 2).claim_expires_at == kT0 + kTtl);  // Not listed: unchanged.
  auto both =
      renew_until(*f, {{.index = 2, .attempt = 1}, {.index = 1, .attempt = 1}}, kT0 + 99'999);
  REQUIRE(sorted(both.renewed) == Indexes{1, 2});
  REQUIRE(both.superseded.empty());
  REQUIRE(row(*f, "s", 1).claim_expires_at == kT0 + 99'999);
  REQUIRE(row(*f, "s", 2).claim_expires_at == kT0 + 99'999);
  // The renewed lease keeps other workers out past the original expiry.
  f.clock->advance(kTtl);
  auto busy = claim(*f, "s", "w2");
  REQUIRE(busy.verdict == ClaimVerdict::busy);
  REQUIRE(busy.retry_at == kT0 + 99'999);
}

TEST_CASE("renew_claims by another holder renews nothing and supersedes nothing", "[renew][S57]") {
  auto f = a2::conformance::fresh();
  given(*f, {ev()});
  REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);
  f.clock->advance(1000);
  auto r = renew(*f, {{.index = 1, .attempt = 1}}, "w2");
  REQUIRE(r.renewed.empty());
  REQUIRE(r.superseded.empty());
  auto e = row(*f, "s", 1);
  REQUIRE(e.claim_holder == "w1");
  REQUIRE(e.claim_expires_at == kT0 + kTtl);
}

TEST_CASE("renew_claims of a lapsed lease renews nothing", "[renew][S58]") {
  auto f = a2::conformance::fresh();
  given(*f, {ev()});
  REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);
  f.clock->advance(kTtl);  // The lease ends now: no longer live.
  auto r = renew(*f, {{.index = 1, .attempt = 1}});
  REQUIRE(r.renewed.empty());
  REQUIRE(r.superseded.empty());
  REQUIRE(row(*f, "s", 1).claim_expires_at == kT0 + kTtl);
  f.clock->advance(1);
  auto later = renew(*f, {{.index = 1, .attempt = 1}});
  REQUIRE(later.renewed.empty());
  REQUIRE(later.superseded.empty());
  REQUIRE(row(*f, "s", 1).claim_expires_at == kT0 + kTtl);
}

TEST_CASE("renew_claims of a re-claimed attempt is superseded", "[renew][S59]") {
  auto f = a2::conformance::fresh();
  given(*f, {ev()});
  REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);
  f.clock->advance(kTtl + 1);
  auto again = claim(*f, "s", "w2");
  REQUIRE(again.events.front().attempt_count == 2);
  auto r = renew(*f, {{.index = 1, .attempt = 1}});
  REQUIRE(r.renewed.empty());
  REQUIRE(r.superseded == Indexes{1});
  // Even the new holder cannot renew with the old attempt.
  auto by_w2 = renew(*f, {{.index = 1, .attempt = 1}}, "w2");
  REQUIRE(by_w2.renewed.empty());
  REQUIRE(by_w2.superseded == Indexes{1});
  auto e = row(*f, "s", 1);
  REQUIRE(e.claim_holder == "w2");
  REQUIRE(e.claim_expires_at == kT0 + kTtl + 1 + kTtl);
}

TEST_CASE("renew_claims of a completed event or a dead letter renews nothing", "[renew][S60]") {
  auto f = a2::conformance::fresh();
  given(*f, evs(2));
  REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);
  REQUIRE(complete(*f, "s", 1, 1).verdict == CompleteVerdict::completed);
  REQUIRE(fail(*f, "s", 2, 1, 1).verdict == FailVerdict::dead_lettered);
  auto before = observe(*f);
  auto r = renew(*f, {{.index = 1, .attempt = 1}, {.index = 2, .attempt = 1}});
  REQUIRE(r.renewed.empty());
  REQUIRE(r.superseded.empty());
  REQUIRE(observe(*f) == before);
  REQUIRE_FALSE(row(*f, "s", 1).claim_expires_at.has_value());
  REQUIRE_FALSE(row(*f, "s", 2).claim_expires_at.has_value());
}

TEST_CASE("renew_claims at or below the boundary is superseded, beyond the head ignored",
          "[renew][S61]") {
  auto f = a2::conformance::fresh();
  given(*f, evs(2));
  REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);
  REQUIRE(clear(*f).clear_index == 3);
  auto r = renew(*f, {{.index = 1, .attempt = 1},
                      {.index = 2, .attempt = 1},
                      {.index = 3, .attempt = 0},
                      {.index = 9, .attempt = 1}});
  REQUIRE(r.renewed.empty());
  REQUIRE(sorted(r.superseded) == Indexes{1, 2, 3});
  // A live claim of the new lifetime renews alongside.
  given(*f, {ev()});
  auto c = claim(*f);
  REQUIRE(indexes_of(c.events) == Indexes{4});
  f.clock->advance(50);
  auto mixed = renew(
      *f, {{.index = 4, .attempt = 1}, {.index = 1, .attempt = 1}, {.index = 5, .attempt = 1}});
  REQUIRE(mixed.renewed == Indexes{4});
  REQUIRE(mixed.superseded == Indexes{1});
  REQUIRE(row(*f, "s", 4).claim_expires_at == kT0 + 50 + kTtl);
}

TEST_CASE("renew_claims with an expiry not after now renews nothing", "[renew][S62]") {
  auto f = a2::conformance::fresh();
  given(*f, {ev()});
  REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);
  f.clock->advance(1000);
  auto now = kT0 + 1000;
  auto at_now = renew_until(*f, {{.index = 1, .attempt = 1}}, now);
  REQUIRE(at_now.renewed.empty());
  REQUIRE(at_now.superseded.empty());
  auto past = renew_until(*f, {{.index = 1, .attempt = 1}}, now - 1);
  REQUIRE(past.renewed.empty());
  REQUIRE(past.superseded.empty());
  REQUIRE(row(*f, "s", 1).claim_expires_at == kT0 + kTtl);
  auto ok = renew_until(*f, {{.index = 1, .attempt = 1}}, now + 1);
  REQUIRE(ok.renewed == Indexes{1});
  REQUIRE(row(*f, "s", 1).claim_expires_at == now + 1);
}
