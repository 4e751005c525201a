// SPDX-License-Identifier: MIT
// Live feeds on Redis (docs/semantics.md#subscribe,
// docs/redis-layout.md#live-feeds): wake-ups deliver inline events, oversized or
// non-continuous wake-ups fall back to XRANGE, lost wake-ups only delay (safety poll), and
// cancel() wakes a waiting next().
#include <sstream>
#include <thread>

#include "support.hpp"

namespace a2::redis_test {
namespace {
using namespace a2::conformance;
using namespace std::chrono_literals;

Fixture open_with_poll(const std::string& prefix, std::chrono::milliseconds poll,
                       const std::string& url = "") {
  Fixture f{std::make_shared<ManualClock>(kT0), std::make_shared<SequentialIdSource>("g"), nullptr};
  auto o = options_for(url.empty() ? a2::test::RedisServer::shared().url() : url, prefix);
  o.clock = f.clock;
  o.ids = f.ids;
  o.feed_safety_poll = poll;
  f.store = a2::redis::open(o);
  return f;
}

long long xrange_calls(Raw& raw) {
  auto info = raw.get({"INFO", "commandstats"}).value_or("");
  std::istringstream lines(info);
  std::string line;
  while (std::getline(lines, line))
    if (line.rfind("cmdstat_xrange:calls=", 0) == 0) return std::stoll(line.substr(21));
  return 0;
}

// Collects batches until `n` events arrived or `timeout` passed.
std::vector<Event> collect(Feed& feed, std::size_t n, std::chrono::milliseconds timeout) {
  std::vector<Event> out;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (out.size() < n && std::chrono::steady_clock::now() < deadline) {
    auto batch = feed.next(200ms);
    out.insert(out.end(), batch.begin(), batch.end());
  }
  return out;
}

TEST_CASE("a caught-up feed applies wake-ups without reading the stream", "[redis][feed]") {
  auto f = open_with_poll(unique_prefix("feed"), 60s);
  Raw raw;
  (void)f->append("s", evs(2));
  auto feed = f->subscribe("s", 0);
  REQUIRE(indexes_of(collect(*feed, 2, 5s)) == std::vector<std::int64_t>{1, 2});
  REQUIRE(raw.get({"CONFIG", "RESETSTAT"}) == "OK");
  auto start = std::chrono::steady_clock::now();
  (void)f->append("s", {ev("t", Json{{"x", 1}}), ev("u")});
  auto events = collect(*feed, 2, 5s);
  CHECK(std::chrono::steady_clock::now() - start < 3s);  // Not the 60 s safety poll.
  REQUIRE(indexes_of(events) == std::vector<std::int64_t>{3, 4});
  CHECK(events[0].payload == Json{{"x", 1}});
  CHECK(events[0].created_at == kT0);
  CHECK(events[1].type == "u");
  CHECK(events[0].session_id == "s");
  CHECK(xrange_calls(raw) == 0);  // Delivered from the wake-up itself.
  CHECK(feed->cursor() == 4);
}

TEST_CASE("a frontier-only wake-up makes the feed catch up with XRANGE", "[redis][feed]") {
  auto f = open_with_poll(unique_prefix("feedbig"), 60s);
  auto feed = f->subscribe("s", 0);
  CHECK(feed->next(300ms).empty());
  (void)f->append("s", {ev("t", std::string(40000, 'z')), ev("t", 1)});
  auto events = collect(*feed, 2, 5s);
  REQUIRE(indexes_of(events) == std::vector<std::int64_t>{1, 2});
  CHECK(events[0].payload == std::string(40000, 'z'));
}

TEST_CASE("with wake-ups lost, the safety poll still delivers", "[redis][feed]") {
  const auto p = unique_prefix("feedpoll");
  Raw raw;
  const std::string user = p + "user";
  REQUIRE(raw.get({"ACL", "SETUSER", user, "on", ">pw", "~*", "&*", "+@all", "-publish"}) == "OK");
  auto port = std::to_string(a2::test::RedisServer::shared().port());
  auto writer = open_with_poll(p, 60s, "redis://" + user + ":pw@127.0.0.1:" + port);
  auto reader = open_with_poll(p, 300ms);
  auto feed = reader->subscribe("s", 0);
  CHECK(feed->next(100ms).empty());
  (void)writer->append("s", evs(3));  // Publishes nothing.
  auto events = collect(*feed, 3, 5s);
  CHECK(indexes_of(events) == std::vector<std::int64_t>{1, 2, 3});
  raw.cmd({"ACL", "DELUSER", user});
}

TEST_CASE("a feed yields the marker after a clear and skips cleared events", "[redis][feed]") {
  auto f = open_with_poll(unique_prefix("feedclear"), 60s);
  (void)f->append("s", evs(2));
  auto feed = f->subscribe("s", 0);
  REQUIRE(collect(*feed, 2, 5s).size() == 2);
  (void)clear(*f);  // Marker 3, delivered by its wake-up.
  auto marker = collect(*feed, 1, 5s);
  REQUIRE(indexes_of(marker) == std::vector<std::int64_t>{3});
  CHECK(marker[0].type == kClearEventType);
  // A feed whose cursor lies below the boundary resumes at the marker.
  auto late = f->subscribe("s", 1);
  CHECK(indexes_of(collect(*late, 1, 5s)) == std::vector<std::int64_t>{3});
}

TEST_CASE("cancel wakes a waiting next promptly", "[redis][feed]") {
  auto f = open_with_poll(unique_prefix("feedcancel"), 60s);
  auto feed = f->subscribe("s", 0);
  std::vector<Event> got{Event{}};
  auto start = std::chrono::steady_clock::now();
  std::thread waiter([&] { got = feed->next(20s); });
  std::this_thread::sleep_for(200ms);
  feed->cancel();
  waiter.join();
  CHECK(got.empty());
  CHECK(std::chrono::steady_clock::now() - start < 2s);
  CHECK(feed->cancelled());
  CHECK(feed->next(1s).empty());
}

}  // namespace
}  // namespace a2::redis_test
