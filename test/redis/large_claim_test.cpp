// SPDX-License-Identifier: MIT
// Claims of long ready sets (lua/lib/claim.lua, docs/redis-layout.md#claim_availablelua): the
// general path reads each run of candidates in one metadata hash with one read (none when the
// hash is empty, the whole hash when it is small, else by names) and the entries of the picked
// events by runs of XRANGE. Every claim below runs on the Redis store and on the memory
// reference store with the same clock and arguments and must return the same result: two
// metadata chunks, held leases and delays between the picked events (runs with gaps), failed
// attempts, exclusions, bounded and unbounded claims, a hash read whole and one read by names.
// A ready event without a stream entry fails the claim and changes nothing (Q25).

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "a2/memory.hpp"
#include "support.hpp"

namespace a2::large_claim_test {

using a2::redis_test::open_fixture;
using a2::redis_test::Raw;
using a2::redis_test::unique_prefix;

std::string opt(const std::optional<std::int64_t>& v) { return v ? std::to_string(*v) : "-"; }
std::string opt(const std::optional<std::string>& v) { return v ? *v : "-"; }

// Every column of a claim result, as text (a mismatch shows the first differing event).
std::vector<std::string> rows_of(const ClaimResult& r) {
  std::vector<std::string> out{std::string(to_string(r.verdict)) + " retry " +
                               std::to_string(r.retry_at)};
  for (const auto& e : r.events) {
    std::ostringstream row;
    row << e.index << ' ' << e.id << ' ' << e.type << ' ' << e.payload.dump() << " attempt "
        << e.attempt_count << " failures " << e.failure_count << " error " << opt(e.last_error)
        << " first " << opt(e.first_claimed_at) << " last " << opt(e.last_claimed_at) << " failed "
        << opt(e.last_failed_at) << '/' << opt(e.last_failed_attempt) << " holder "
        << opt(e.claim_holder) << " until " << opt(e.claim_expires_at) << " available "
        << opt(e.available_at) << " lane " << opt(e.lane) << " clear " << opt(e.clear_index);
    out.push_back(row.str());
  }
  return out;
}

std::vector<NewEvent> work(int n, int base, bool settled = false) {
  std::vector<NewEvent> out;
  for (int i = 0; i < n; ++i)
    out.push_back({.id = std::nullopt,
                   .type = "t",
                   .payload = Json{{"n", base + i}},
                   .cause = std::nullopt,
                   .lane = std::nullopt,
                   .settled = settled});
  return out;
}

// The Redis store and the memory store side by side, on one manual clock.
struct Pair {
  std::shared_ptr<ManualClock> clock = std::make_shared<ManualClock>(a2::conformance::kT0);
  conformance::Fixture redis = open_fixture(unique_prefix("large"));
  std::unique_ptr<Store> memory =
      a2::memory::open({.clock = clock,
                        .ids = std::make_shared<SequentialIdSource>("g"),
                        .clear_event_type = kClearEventType,
                        .observe = {}});
  void append(const std::string& s, const std::vector<NewEvent>& events) {
    (void)redis->append(s, events);
    (void)memory->append(s, events);
  }
  std::vector<std::string> claim(const ClaimRequest& request) {
    auto expected = rows_of(memory->claim_available(request));
    auto got = rows_of(redis->claim_available(request));
    REQUIRE(got.size() == expected.size());
    for (std::size_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == expected[i]);
    return got;
  }
  void fail(const std::string& s, std::int64_t index, std::optional<std::int64_t> retry_at) {
    FailRequest request{.session_id = s,
                        .index = index,
                        .attempt = 1,
                        .error = "boom " + std::to_string(index),
                        .max_failures = 5,
                        .retry_at_ms = retry_at};
    REQUIRE(redis->fail_attempt(request).verdict == memory->fail_attempt(request).verdict);
  }
  void advance(std::int64_t ms) {
    clock->advance(ms);
    redis.clock->advance(ms);
  }
};

ClaimRequest request(const std::string& s, const std::string& holder,
                     std::optional<std::int64_t> max_events,
                     std::vector<std::int64_t> excluded = {}) {
  return {.session_id = s,
          .holder = holder,
          .ttl_ms = 1000,
          .expires_at_ms = std::nullopt,
          .exclude_indexes = std::move(excluded),
          .max_events = max_events};
}

TEST_CASE("claims of long ready sets equal the memory store's", "[redis][claim]") {
  Pair p;
  const std::string s = "s";
  // 1,100 ready events: metadata chunks 0 (1..1000) and 1 (1001..1100).
  for (int at = 0; at < 1100; at += 100) p.append(s, work(100, at));
  // Never-claimed candidates: the hashes are empty and not read.
  CHECK(p.claim(request(s, "a", 30)).size() == 31);
  // Failed attempts: the odd ones claimable at once, the even ones delayed.
  for (std::int64_t i = 5; i <= 14; ++i)
    p.fail(s, i,
           i % 2 == 0 ? std::optional<std::int64_t>(a2::conformance::kT0 + 500) : std::nullopt);
  // Held leases and delays between the picked events; a bounded claim stops at its limit.
  CHECK(p.claim(request(s, "b", 5)).size() == 6);
  CHECK(p.claim(request(s, "b", 20, {31, 32, 40, 1050})).size() == 21);
  p.advance(600);  // The delays are over; the leases (1,000 ms) are live.
  // Everything else, over both chunks, with held events in between (runs of entries with gaps).
  auto all = p.claim(request(s, "c", std::nullopt));
  CHECK(all.size() > 1000);
  CHECK(p.claim(request(s, "c", std::nullopt)).front().rfind("busy", 0) == 0);
  p.advance(2000);  // Every lease expired: the claims are taken over (chunk 0 read whole).
  CHECK(p.claim(request(s, "d", std::nullopt, {7, 1099})).size() == 1099);
  CHECK(p.claim(request(s, "e", 3, {})).size() == 3);  // The two excluded before.

  // A hash with more than 8 fields per candidate (failed events of its chunk) is read by names.
  const std::string t = "t";
  p.append(t, work(60, 0));
  CHECK(p.claim(request(t, "a", std::nullopt)).size() == 61);
  for (std::int64_t i = 1; i <= 40; ++i) p.fail(t, i, std::nullopt);
  p.append(t, work(20, 60));
  CHECK(p.claim(request(t, "b", 2)).size() == 3);  // The failed 1 and 2.
  // 16 candidates (1..16) in a hash of about 400 fields: read by names; 4..11 claimed.
  CHECK(p.claim(request(t, "b", 8, {3})).size() == 9);
  // The rest but 3 (41..60 are held by a): 12..40 and 61..80, the hash read whole.
  CHECK(p.claim(request(t, "c", std::nullopt, {3})).size() == 50);
}

TEST_CASE("a long claim whose ready event has no stream entry changes nothing", "[redis][claim]") {
  const std::string prefix = unique_prefix("large-missing");
  auto f = open_fixture(prefix);
  const std::string s = "s";
  (void)f->append(s, work(300, 0));
  Raw raw;
  REQUIRE(raw.integer({"XDEL", prefix + ":" + s + ":log", "150-0"}) == 1);
  const auto meta_before = raw.integer({"EXISTS", prefix + ":" + s + ":meta:0"});
  for (std::optional<std::int64_t> max_events :
       std::vector<std::optional<std::int64_t>>{200, std::nullopt}) {
    try {
      (void)f->claim_available(request(s, "w", max_events));
      FAIL("the claim did not fail");
    } catch (const Unavailable& e) {
      CHECK(std::string(e.what()).find("ready event 150 ") != std::string::npos);
    }
    CHECK(raw.integer({"EXISTS", prefix + ":" + s + ":meta:0"}) == meta_before);
  }
  // A bound that stops before the missing entry claims.
  auto r = f->claim_available(request(s, "w", 149));
  REQUIRE(r.verdict == ClaimVerdict::claimed);
  CHECK(r.events.size() == 149);
}

}  // namespace a2::large_claim_test
