// SPDX-License-Identifier: MIT
// Wake-up messages on <p>:<S>:notify (docs/redis-layout.md#wake-up-messages,
// scenarios docs/semantics.md#S142 to S147), read by a raw subscriber.
#include "support.hpp"

namespace a2::redis_test {
namespace {
using namespace a2::conformance;
using namespace std::chrono_literals;

std::string message(Raw& sub) {
  auto m = sub.next_message(5000ms);
  REQUIRE(m.has_value());
  return *m;
}

// A sentinel append's message must be the next one: nothing was published in between.
void require_silence_then_sentinel(Store& store, Raw& sub, const std::string& s = "s") {
  auto r = store.append(s, {ev_id("sentinel-" + std::to_string(std::rand()), "sentinel")});
  auto j = Json::parse(message(sub));
  REQUIRE(j.contains("e"));
  CHECK(j["e"][0][2] == "sentinel");
  CHECK(j["e"][0][0] == r.events.at(0).index);
}

TEST_CASE("append publishes its events inline with the stored payload text",
          "[redis][wake][S142]") {
  const auto p = unique_prefix("wake");
  auto f = open_fixture(p);
  Raw sub;
  sub.subscribe(p + ":s:notify");
  Json p1 = {{"a", 1}, {"text", "h\xc3\xa9/\"q\""}};
  Json p2 = Json::array({1, 2.5, nullptr, true});
  (void)f->append("s", {ev("t", p1), ev("t", p2)});
  auto m = message(sub);
  CHECK(m == "{\"f\":2,\"t\":" + std::to_string(kT0) + ",\"e\":[[1,\"g1\",\"t\"," + p1.dump() +
                 "],[2,\"g2\",\"t\"," + p2.dump() + "]]}");
  Raw raw;
  auto stored = raw.cmd({"XRANGE", p + ":s:log", "1-0", "1-0"});
  auto* fields = stored->element[0]->element[1];
  for (std::size_t i = 0; i + 1 < fields->elements; i += 2)
    if (std::string(fields->element[i]->str) == "payload")
      CHECK(m.find(std::string(fields->element[i + 1]->str, fields->element[i + 1]->len)) !=
            std::string::npos);
  auto j = Json::parse(m);
  CHECK(j["e"][0][3] == p1);
  CHECK(j["e"][1][3] == p2);
}

TEST_CASE("a batch over 32768 payload bytes publishes only the frontier", "[redis][wake][S143]") {
  const auto p = unique_prefix("big");
  auto f = open_fixture(p);
  Raw sub;
  sub.subscribe(p + ":s:notify");
  (void)f->append("s", {ev("t", std::string(20000, 'a')), ev("t", std::string(20000, 'b'))});
  CHECK(message(sub) == "{\"f\":2}");
  (void)f->append("s", {ev("t", std::string(40000, 'c'))});
  CHECK(message(sub) == "{\"f\":3}");
}

TEST_CASE("the inline limit counts entry bytes plus one per entry", "[redis][wake][S144]") {
  // One entry [1,"x","t",<payload>] of 32767 bytes: 32767 + 1 = 32768, the limit itself.
  const std::string prefix_text = "[1,\"x\",\"t\",";
  const std::size_t payload_bytes = 32767 - prefix_text.size() - 1;
  SECTION("at the limit: the full form") {
    const auto p = unique_prefix("edge");
    auto f = open_fixture(p);
    Raw sub;
    sub.subscribe(p + ":s:notify");
    Json payload = std::string(payload_bytes - 2, 'a');  // Quotes included in the JSON text.
    REQUIRE(payload.dump().size() == payload_bytes);
    (void)f->append("s", {ev_id("x", "t", payload)});
    auto m = message(sub);
    CHECK(m == "{\"f\":1,\"t\":" + std::to_string(kT0) + ",\"e\":[" + prefix_text + payload.dump() +
                   "]]}");
  }
  SECTION("one byte more: only the frontier") {
    const auto p = unique_prefix("edge");
    auto f = open_fixture(p);
    Raw sub;
    sub.subscribe(p + ":s:notify");
    Json payload = std::string(payload_bytes - 1, 'a');
    (void)f->append("s", {ev_id("x", "t", payload)});
    CHECK(message(sub) == "{\"f\":1}");
  }
}

TEST_CASE("only operations that add events or make work claimable sooner publish",
          "[redis][wake][S145][S146]") {
  const auto p = unique_prefix("quiet");
  auto f = open_fixture(p);
  (void)f->append("s", evs(3));
  Raw sub;
  sub.subscribe(p + ":s:notify");
  REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);
  (void)f->renew_claims({.session_id = "s",
                         .holder = "w1",
                         .claims = {{1, 1}},
                         .ttl_ms = kTtl,
                         .expires_at_ms = std::nullopt});
  (void)complete(*f, "s", 2, 1);  // No children.
  (void)fail(*f, "s", 3, 1, 1);
  // A redrive makes work claimable again: its work signal is the frontier alone (I19).
  (void)redrive(*f, "s", 3, RedriveAction::retry);
  CHECK(message(sub) == "{\"f\":3}");
  f->put_snapshots("s", "r", {{.index = 1, .state = 1, .pin_event_indexes = {1}}});
  require_silence_then_sentinel(*f, sub);

  // A completion with children publishes exactly its children.
  f.clock->advance(5);
  (void)complete(*f, "s", 1, 1, {child("c1", "child", Json{{"k", "v"}})});
  CHECK(message(sub) == "{\"f\":5,\"t\":" + std::to_string(kT0 + 5) +
                            ",\"e\":[[5,\"c1\",\"child\",{\"k\":\"v\"}]]}");

  // A clear publishes its marker.
  f.clock->advance(5);
  auto cleared = clear(*f);
  REQUIRE(cleared.clear_index == 6);
  auto marker = f->read("s").at(0);
  CHECK(message(sub) == "{\"f\":6,\"t\":" + std::to_string(kT0 + 10) + ",\"e\":[[6,\"" + marker.id +
                            "\",\"" + kClearEventType + "\",null]]}");
  // Reclaim publishes nothing.
  while (!f->reclaim("s").done) {
  }
  require_silence_then_sentinel(*f, sub);
}

TEST_CASE("appends succeed when PUBLISH fails", "[redis][wake][S147]") {
  const auto p = unique_prefix("nopub");
  Raw raw;
  // A user that may do everything but PUBLISH: the scripts' redis.pcall('PUBLISH') fails.
  const std::string user = p + "user";
  REQUIRE(raw.get({"ACL", "SETUSER", user, "on", ">pw", "~*", "&*", "+@all", "-publish"}) == "OK");
  auto port = std::to_string(a2::test::RedisServer::shared().port());
  auto f = open_fixture(p, "redis://" + user + ":pw@127.0.0.1:" + port);
  auto privileged = open_fixture(p);
  Raw sub;
  sub.subscribe(p + ":s:notify");
  auto r = f->append("s", evs(2));
  REQUIRE(indexes_of(r.events) == std::vector<std::int64_t>{1, 2});
  REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);
  auto done = complete(*f, "s", 1, 1, {child("c1")});
  CHECK(done.verdict == CompleteVerdict::completed);
  CHECK(clear(*f).cleared);
  CHECK(f->read("s").size() == 1);
  // Nothing was published by the restricted store; the privileged one's sentinel comes first.
  require_silence_then_sentinel(*privileged, sub);
  raw.cmd({"ACL", "DELUSER", user});
}

}  // namespace
}  // namespace a2::redis_test
