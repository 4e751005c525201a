// SPDX-License-Identifier: MIT
// Data written by the original TypeScript package that a2 itself never writes: lone UTF-16
// surrogate escapes in payloads (JSON.stringify writes "\ud800"), fractional milliseconds in
// time fields (a ttlMs of 60000.3333), the JSON text a2 writes compared with JSON.stringify's,
// and a2's work extensions (bounded claims, release_claims, held_claims, head) on such data.
// Every case is written raw, as the original package lays it out.
#include <map>

#include "a2/detail/json_text.hpp"
#include "support.hpp"

namespace a2::redis_test {
namespace {
using namespace a2::conformance;

constexpr std::int64_t kNow = 1'700'000'000'000;  // A realistic clock: 13 digits.

// Writes event `index` of session `s` as the original package's append does (a new session:
// split 0, metadata in chunks), unsettled and ready.
void write_ts_event(Raw& raw, const std::string& p, const std::string& s, std::int64_t index,
                    const std::string& id, const std::string& payload,
                    const std::string& created_at) {
  const std::string i = std::to_string(index);
  raw.cmd({"XADD", p + ":" + s + ":log", i + "-0", "id", id, "type", "t", "payload", payload,
           "created_at", created_at, "cause", "", "lane", ""});
  raw.cmd({"SET", p + ":" + s + ":count", i});
  raw.cmd({"SET", p + ":" + s + ":meta-split", "0"});
  raw.cmd({"ZADD", p + ":" + s + ":pending", i, i});
  raw.cmd({"ZADD", p + ":" + s + ":ready", i, i});
  raw.cmd({"SET", p + ":ids:\"" + id + "\"", "[\"" + s + "\"," + i + "]"});
}

const std::string kSurrogatePayload =
    R"({"b":"x\ud800y","a":[1,"\uDC00"],"pair":"\ud83d\ude00","esc":"\\ud800"})";
const std::string kFffd = "\xEF\xBF\xBD";

Json surrogate_payload_decoded() {
  Json j;
  j["b"] = "x" + kFffd + "y";
  j["a"] = Json::array({1, kFffd});
  j["pair"] = "\xF0\x9F\x98\x80";  // A valid pair is one code point (U+1F600).
  j["esc"] = "\\ud800";            // An escaped backslash: text, not a surrogate.
  return j;
}

TEST_CASE("reads, the feed and claim_available decode a lone surrogate as U+FFFD",
          "[redis][legacy]") {
  const auto p = unique_prefix("sur");
  auto f = open_fixture(p);
  f.clock->set(kNow);
  Raw raw;
  write_ts_event(raw, p, "s", 1, "e1", kSurrogatePayload, std::to_string(kNow));
  const Json expected = surrogate_payload_decoded();

  auto rows = f->read("s");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].payload == expected);  // Ordered: the members keep the stored order.
  auto history = f->read_history("s");
  REQUIRE(history.size() == 1);
  CHECK(history[0].payload == expected);
  auto state = f->read_state("s", "r");
  REQUIRE(state.events.size() == 1);
  CHECK(state.events[0].payload == expected);
  // The serialized feed row keeps the stored text byte for byte.
  auto page = f->read_feed_page("s", 0);
  REQUIRE(page.size() == 1);
  CHECK(page[0].payload_json == kSurrogatePayload);
  auto feed = f->subscribe("s", 0);
  auto delivered = feed->next(std::chrono::milliseconds(5000));
  REQUIRE(delivered.size() == 1);
  CHECK(delivered[0].payload == expected);

  auto c = claim(*f);
  REQUIRE(c.verdict == ClaimVerdict::claimed);
  REQUIRE(c.events.size() == 1);
  CHECK(c.events[0].payload == expected);
  CHECK(c.events[0].attempt_count == 1);
  CHECK(complete(*f, "s", 1, 1).verdict == CompleteVerdict::completed);
  CHECK(claim(*f).verdict == ClaimVerdict::settled);
}

TEST_CASE("the feed decodes a wake-up carrying a lone surrogate", "[redis][legacy]") {
  const auto p = unique_prefix("surwake");
  auto f = open_fixture(p);
  Raw raw;
  auto feed = f->subscribe("s", 0);
  CHECK(feed->next(std::chrono::milliseconds(50)).empty());
  // The original's append: the entry, then the wake-up with the payload inlined.
  write_ts_event(raw, p, "s", 1, "e1", kSurrogatePayload, std::to_string(kNow));
  raw.cmd({"PUBLISH", p + ":s:notify",
           "{\"f\":1,\"t\":" + std::to_string(kNow) + ",\"e\":[[1,\"e1\",\"t\"," +
               kSurrogatePayload + "]]}"});
  auto delivered = feed->next(std::chrono::milliseconds(5000));
  REQUIRE(delivered.size() == 1);
  CHECK(delivered[0].payload == surrogate_payload_decoded());
}

TEST_CASE("reads and work calls accept fractional milliseconds, truncated toward zero",
          "[redis][legacy]") {
  const auto p = unique_prefix("frac");
  auto f = open_fixture(p);
  f.clock->set(kNow);
  Raw raw;
  // Event 1: claimed by a TypeScript worker with ttlMs 60000.3333 and a clock with fractions.
  write_ts_event(raw, p, "s", 1, "e1", "{\"n\":1}", "1700000000000.75");
  // Event 2: dead-lettered at a fractional time.
  write_ts_event(raw, p, "s", 2, "e2", "null", "1700000000001.5");
  // Event 3: completed at a fractional time.
  write_ts_event(raw, p, "s", 3, "e3", "3", "1700000000002.25");
  raw.cmd({"ZREM", p + ":s:ready", "2", "3"});
  raw.cmd({"ZREM", p + ":s:pending", "3"});
  raw.cmd({"HSET",  p + ":s:meta:0",  //
           "1:d",   "1",
           "1:fc",  "1700000000000.25",
           "1:lc",  "1700000000000.25",  //
           "1:ch",  "ts-worker",
           "1:ce",  "1700000060000.3333",  //
           "2:d",   "3",
           "2:a",   "3",
           "2:fc",  "1700000000001.5",
           "2:lc",  "1700000000003.5",
           "2:lf",  "1700000000004.9",
           "2:lfa", "3",
           "2:e",   "boom",
           "2:f",   "1700000000004.9",
           "3:d",   "1",
           "3:fc",  "1700000000002.5",
           "3:lc",  "1700000000002.5",
           "3:p",   "1700000000005.999",
           "3:pa",  "1",
           "3:ri",  "[]"});
  raw.cmd({"SET", p + ":s:snap:r",
           R"({"index":3,"state":{"z":1,"a":0.5},"updatedAt":1700000000006.5,"r":1})"});

  auto rows = f->read("s");
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].created_at == 1700000000000);
  CHECK(rows[0].first_claimed_at == 1700000000000);
  CHECK(rows[0].last_claimed_at == 1700000000000);
  CHECK(rows[0].claim_expires_at == 1700000060000);
  CHECK(rows[0].claim_holder == std::optional<std::string>("ts-worker"));
  CHECK(rows[1].created_at == 1700000000001);
  CHECK(rows[1].failed_at == 1700000000004);
  CHECK(rows[1].last_failed_at == 1700000000004);
  CHECK(rows[1].last_failed_attempt == 3);
  CHECK(rows[1].failure_count == 3);
  CHECK(rows[2].processed_at == 1700000000005);
  CHECK(rows[2].returned_event_ids ==
        std::optional<std::vector<std::string>>(std::vector<std::string>{}));
  CHECK(f->read_history("s").at(2).created_at == 1700000000002);
  auto state = f->read_state("s", "r");
  REQUIRE(state.snapshot.has_value());
  CHECK(state.snapshot->index == 3);
  CHECK(a2::detail::json_text(state.snapshot->state) == R"({"z":1,"a":0.5})");
  auto dead = f->dead_letters("s");
  REQUIRE(dead.size() == 1);
  CHECK(dead[0].failed_at == 1700000000004);

  // The TypeScript lease has not ended: busy until its (truncated) end.
  auto busy = claim(*f);
  REQUIRE(busy.verdict == ClaimVerdict::busy);
  CHECK(busy.retry_at == 1700000060000);
  f.clock->set(1700000060001);
  auto c = claim(*f);
  REQUIRE(c.verdict == ClaimVerdict::claimed);
  REQUIRE(c.events.size() == 1);
  CHECK(c.events[0].attempt_count == 2);
  CHECK(c.events[0].created_at == 1700000000000);
  CHECK(c.events[0].first_claimed_at == 1700000000000);
  CHECK(c.events[0].last_claimed_at == 1700000060001);
  auto renewed = f->renew_claims({.session_id = "s",
                                  .holder = "w1",
                                  .claims = {{.index = 1, .attempt = 2}},
                                  .ttl_ms = kTtl,
                                  .expires_at_ms = std::nullopt});
  CHECK(renewed.renewed == std::vector<std::int64_t>{1});
  CHECK(fail(*f, "s", 1, 2).verdict == FailVerdict::failed);
  CHECK(redrive(*f, "s", 2, RedriveAction::retry).redriven);
  CHECK(f->read("s").at(1).failed_at == std::nullopt);
}

TEST_CASE("a claim reply with a fractional lease end of the caller's own clock decodes",
          "[redis][legacy]") {
  // The busy path formats the stored lease end with Lua's tostring (14 significant digits).
  const auto p = unique_prefix("fracbusy");
  auto f = open_fixture(p);
  f.clock->set(kNow);
  Raw raw;
  write_ts_event(raw, p, "s", 1, "e1", "1", std::to_string(kNow));
  raw.cmd({"HSET", p + ":s:meta:0", "1:d", "1", "1:ch", "ts", "1:ce", "1700000000123.25"});
  auto busy = claim(*f);
  REQUIRE(busy.verdict == ClaimVerdict::busy);
  CHECK(busy.retry_at == 1700000000123);
}

TEST_CASE("a claim decodes stream entries in any field order, with fields missing or added",
          "[redis][legacy]") {
  // A claim's reply carries an entry with a2's and the original package's six fields in their
  // order as its values alone, and any other entry whole (lua/lib/entries.lua put_entry). Session
  // s: 1 in that order, 2 in another order without lane, 3 with a field added, 4 without cause
  // and lane; session one: a single ready event in another order (the claim's one-event branch).
  const auto p = unique_prefix("order");
  auto f = open_fixture(p);
  f.clock->set(kNow);
  Raw raw;
  const std::string now = std::to_string(kNow);
  write_ts_event(raw, p, "s", 1, "e1", "{\"n\":1}", now);
  write_ts_event(raw, p, "s", 4, "e4", "4", now);
  raw.cmd({"DEL", p + ":s:log"});
  raw.cmd({"XADD", p + ":s:log", "1-0", "id", "e1", "type", "t", "payload", "{\"n\":1}",
           "created_at", now, "cause", "", "lane", "L"});
  raw.cmd({"XADD", p + ":s:log", "2-0", "type", "u", "id", "e2", "created_at", now, "payload",
           "[2]", "cause", R"({"index":1,"attempt":1})"});
  raw.cmd({"XADD", p + ":s:log", "3-0", "id", "e3", "type", "t", "payload", "3", "created_at", now,
           "cause", "", "lane", "", "origin", "x"});
  raw.cmd(
      {"XADD", p + ":s:log", "4-0", "id", "e4", "type", "t", "payload", "4", "created_at", now});
  for (const char* i : {"2", "3"}) {
    raw.cmd({"ZADD", p + ":s:pending", i, i});
    raw.cmd({"ZADD", p + ":s:ready", i, i});
    raw.cmd({"SET", p + ":ids:\"e" + std::string(i) + "\"", "[\"s\"," + std::string(i) + "]"});
  }
  write_ts_event(raw, p, "one", 1, "o1", "1", now);
  raw.cmd({"DEL", p + ":one:log"});
  raw.cmd({"XADD", p + ":one:log", "1-0", "payload", "{}", "id", "o1", "lane", "", "type", "v",
           "created_at", now, "cause", ""});

  const auto stored = f->read("s");
  REQUIRE(stored.size() == 4);
  CHECK(stored[0].lane == std::optional<std::string>("L"));
  CHECK(stored[1].cause == std::optional<EventCause>(EventCause{1, 1}));
  auto c = claim(*f);
  REQUIRE(c.verdict == ClaimVerdict::claimed);
  REQUIRE(c.events.size() == 4);
  for (std::size_t i = 0; i < 4; ++i) {
    INFO("event " << i + 1);
    const auto& e = c.events[i];
    CHECK(e.index == stored[i].index);
    CHECK(e.id == stored[i].id);
    CHECK(e.type == stored[i].type);
    CHECK(e.payload == stored[i].payload);
    CHECK(e.created_at == stored[i].created_at);
    CHECK(e.cause == stored[i].cause);
    CHECK(e.lane == stored[i].lane);
    CHECK(e.attempt_count == 1);
    CHECK(e.claim_expires_at > kNow);
  }
  auto single = f->claim_available({.session_id = "one",
                                    .holder = "w",
                                    .ttl_ms = 60000,
                                    .expires_at_ms = std::nullopt,
                                    .exclude_indexes = {},
                                    .max_events = std::nullopt});
  REQUIRE(single.verdict == ClaimVerdict::claimed);
  REQUIRE(single.events.size() == 1);
  CHECK(single.events[0].id == "o1");
  CHECK(single.events[0].type == "v");
  CHECK(single.events[0].payload == Json::object());
  CHECK(single.events[0].lane == std::nullopt);
  CHECK(single.events[0].cause == std::nullopt);
}

TEST_CASE("bounded claims, release_claims, held_claims and head work on the original's data",
          "[redis][legacy]") {
  // docs/semantics.md#extensions-beyond-the-original-package: they read only fields the original
  // package writes (no `av`). Session s: chunked metadata (split 0), event 1 held by a TypeScript
  // worker with a fractional lease end, 2..4 ready. Session old: metadata in the base hash of a
  // session that predates chunking (no split), cleared once at 1 (the marker), 2 held by w1, 3
  // ready.
  const auto p = unique_prefix("ext");
  auto f = open_fixture(p);
  f.clock->set(kNow);
  Raw raw;
  for (int i = 1; i <= 4; ++i)
    write_ts_event(raw, p, "s", i, "e" + std::to_string(i), "{}", "1700000000000.5");
  raw.cmd({"HSET", p + ":s:meta:0", "1:d", "1", "1:fc", "1699999999000.5", "1:lc",
           "1699999999000.5", "1:ch", "ts-worker", "1:ce", "1700000060000.3333"});
  for (int i = 1; i <= 3; ++i) {
    const std::string n = std::to_string(i);
    raw.cmd({"XADD", p + ":old:log", n + "-0", "id", "o" + n, "type", i == 1 ? "a2.clear" : "t",
             "payload", "null", "created_at", "1699999990000", "cause", "", "lane", ""});
    raw.cmd({"SET", p + ":ids:\"o" + n + "\"", "[\"old\"," + n + "]"});
  }
  raw.cmd({"SET", p + ":old:count", "3"});
  raw.cmd({"SET", p + ":old:clear", "1"});
  raw.cmd({"ZADD", p + ":old:pending", "2", "2", "3", "3"});
  raw.cmd({"ZADD", p + ":old:ready", "2", "2", "3", "3"});
  raw.cmd({"HSET", p + ":old:meta", "1:p", "1699999990000", "2:d", "2", "2:fc", "1699999990000",
           "2:lc", "1699999995000", "2:ch", "w1", "2:ce", "1700000030000.5"});

  // head: one MGET of the count and the boundary.
  auto h = f->head("s");
  CHECK(h.head_index == 4);
  CHECK(h.clear_index == 0);
  h = f->head("old");
  CHECK(h.head_index == 3);
  CHECK(h.clear_index == 1);

  // held_claims reads the original's lease (truncated) in chunks and in the base hash.
  auto held = f->held_claims("s", "ts-worker");
  REQUIRE(held.size() == 1);
  CHECK(held[0].index == 1);
  CHECK(held[0].attempt == 1);
  CHECK(held[0].expires_at == 1700000060000);
  held = f->held_claims("old", "w1");
  REQUIRE(held.size() == 1);
  CHECK(held[0].index == 2);
  CHECK(held[0].attempt == 2);
  CHECK(held[0].expires_at == 1700000030000);
  CHECK(f->held_claims("old", "ts-worker").empty());

  // A bounded claim passes the TypeScript lease and takes the lowest free events.
  auto two = f->claim_available({.session_id = "s",
                                 .holder = "w1",
                                 .ttl_ms = kTtl,
                                 .expires_at_ms = std::nullopt,
                                 .exclude_indexes = {},
                                 .max_events = 2});
  REQUIRE(two.verdict == ClaimVerdict::claimed);
  CHECK(indexes_of(two.events) == std::vector<std::int64_t>{2, 3});
  CHECK(two.events[0].attempt_count == 1);
  CHECK(two.events[0].available_at == std::nullopt);
  held = f->held_claims("s", "w1");
  REQUIRE(held.size() == 2);
  CHECK(held[1].index == 3);
  CHECK(held[1].expires_at == kNow + kTtl);

  // Releasing the TypeScript worker's lease (as that holder): the next claim is attempt 2.
  auto released = f->release_claims(
      {.session_id = "s", .holder = "ts-worker", .claims = {{.index = 1, .attempt = 1}}});
  CHECK(released.released == std::vector<std::int64_t>{1});
  CHECK(released.not_held.empty());
  auto row = f->read("s").at(0);
  CHECK(row.claim_holder == std::nullopt);
  CHECK(row.claim_expires_at == std::nullopt);
  CHECK(row.attempt_count == 1);
  CHECK(row.first_claimed_at == 1699999999000);
  CHECK(row.failure_count == 0);
  CHECK(raw.list({"HKEYS", p + ":s:meta:0"}).size() == 3 + 5 * 2);  // 1: d fc lc; 2, 3: 5 each.
  auto one = f->claim_available({.session_id = "s",
                                 .holder = "w2",
                                 .ttl_ms = kTtl,
                                 .expires_at_ms = std::nullopt,
                                 .exclude_indexes = {},
                                 .max_events = 1});
  REQUIRE(one.verdict == ClaimVerdict::claimed);
  CHECK(indexes_of(one.events) == std::vector<std::int64_t>{1});
  CHECK(one.events[0].attempt_count == 2);

  // In the base hash: a release splits into both lists; the released event is claimable.
  released = f->release_claims(
      {.session_id = "old",
       .holder = "w1",
       .claims = {
           {.index = 3, .attempt = 1}, {.index = 2, .attempt = 2}, {.index = 1, .attempt = 0}}});
  CHECK(released.released == std::vector<std::int64_t>{2});
  CHECK(released.not_held == std::vector<std::int64_t>{1, 3});
  CHECK(raw.get({"HGET", p + ":old:meta", "2:ch"}) == std::nullopt);
  CHECK(raw.get({"HGET", p + ":old:meta", "2:d"}) == "2");
  CHECK(f->held_claims("old", "w1").empty());
  auto again = f->claim_available({.session_id = "old",
                                   .holder = "w3",
                                   .ttl_ms = kTtl,
                                   .expires_at_ms = std::nullopt,
                                   .exclude_indexes = {},
                                   .max_events = 1});
  REQUIRE(again.verdict == ClaimVerdict::claimed);
  CHECK(indexes_of(again.events) == std::vector<std::int64_t>{2});
  CHECK(again.events[0].attempt_count == 3);
  CHECK(again.events[0].clear_index == 1);
  CHECK(f->head("old").head_index == 3);  // Work changes neither.
}

TEST_CASE("payload and checkpoint text are written as JSON.stringify writes them",
          "[redis][legacy][layout]") {
  const auto p = unique_prefix("text");
  auto f = open_fixture(p);
  Raw raw;
  Json payload;
  payload["z"] = 1;
  payload["a"] = Json{{"y", 1.0}, {"b", -0.0}};
  payload["n"] = Json::array({1e20, 1e21, 1.5e-7, 0.1, 123.456, -5, 1e-6, 1e-7, 9007199254740992.0,
                              -1.25e-300, 5e-324, 1.7976931348623157e308, 0.5});
  payload["s"] = "q\"\\/\b\f\n\r\t\x01\x7f\xE2\x80\xA8\xC3\xA9";
  const std::string expected =
      "{\"z\":1,\"a\":{\"y\":1,\"b\":0},\"n\":[100000000000000000000,1e+21,1.5e-7,0.1,123.456,-5,"
      "0.000001,1e-7,9007199254740992,-1.25e-300,5e-324,1.7976931348623157e+308,0.5],"
      "\"s\":\"q\\\"\\\\/\\b\\f\\n\\r\\t\\u0001\x7f\xE2\x80\xA8\xC3\xA9\"}";
  (void)f->append("s", {ev_id("x", "t", payload)});
  auto entry = raw.cmd({"XRANGE", p + ":s:log", "1-0", "1-0"});
  REQUIRE(entry->elements == 1);
  std::map<std::string, std::string> fields;
  auto* values = entry->element[0]->element[1];
  for (std::size_t k = 0; k + 1 < values->elements; k += 2)
    fields[std::string(values->element[k]->str, values->element[k]->len)] =
        std::string(values->element[k + 1]->str, values->element[k + 1]->len);
  CHECK(fields["payload"] == expected);
  // Read back in the written order, and equal as a value.
  auto back = f->read("s").at(0).payload;
  CHECK(a2::detail::json_text(back) == expected);
  CHECK(back.begin().key() == "z");

  f->put_snapshots("s", "r", {{.index = 1, .state = payload, .pin_event_indexes = {}}});
  CHECK(raw.get({"GET", p + ":s:snap:r"}) == "{\"index\":1,\"state\":" + expected +
                                                 ",\"updatedAt\":" + std::to_string(kT0) +
                                                 ",\"r\":1}");
  auto state = f->read_state("s", "r");
  REQUIRE(state.snapshot.has_value());
  CHECK(a2::detail::json_text(state.snapshot->state) == expected);

  // Completion children go through the same writer.
  (void)claim(*f);
  (void)complete(*f, "s", 1, 1, {child("c1", "child", Json{{"k", 2.0}, {"a", 1e21}})});
  auto child_entry = raw.cmd({"XRANGE", p + ":s:log", "2-0", "2-0"});
  REQUIRE(child_entry->elements == 1);
  auto* child_values = child_entry->element[0]->element[1];
  std::string child_payload;
  for (std::size_t k = 0; k + 1 < child_values->elements; k += 2)
    if (std::string(child_values->element[k]->str) == "payload")
      child_payload =
          std::string(child_values->element[k + 1]->str, child_values->element[k + 1]->len);
  CHECK(child_payload == "{\"k\":2,\"a\":1e+21}");
}

// The same value and the same JSON types (an unsigned, signed or float number) as nlohmann's
// parser.
bool same_json(const Json& a, const Json& b) {
  if (a.type() != b.type() || a.size() != b.size()) return false;
  if (a.is_object()) {
    for (auto x = a.begin(), y = b.begin(); x != a.end(); ++x, ++y)
      if (x.key() != y.key() || !same_json(*x, *y)) return false;
    return true;
  }
  if (a.is_array()) {
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!same_json(a[i], b[i])) return false;
    return true;
  }
  return a == b;
}

TEST_CASE("stored payloads decode to the value nlohmann's parser gives, plain or not",
          "[redis][legacy]") {
  const auto p = unique_prefix("pjson");
  auto f = open_fixture(p);
  f.clock->set(kNow);
  Raw raw;
  std::string deep;  // Deeper than the plain-text fast path (64 levels), within kMaxJsonDepth.
  for (int i = 0; i < 70; ++i) deep += "[";
  deep += "1";
  for (int i = 0; i < 70; ++i) deep += "]";
  const std::vector<std::string> payloads = {
      R"({"n":1,"text":"benchmark event"})",
      " { \"a\" : [ 1 , -2 , 0 , -0 , 999999999999999999 ] ,\n\t\"b\" : true , \"c\" : null , "
      "\"d\" : false , \"e\" : { } , \"f\" : [ ] } ",
      R"({"k":1,"j":2,"k":3})",  // A repeated key keeps its first place and takes the last value.
      R"({"big":18446744073709551615,"neg":-9223372036854775808,"f":1.5,"e":1e3,"z":-0.0})",
      R"(["\u00e9","a\nb","\"",1234567890123456789])",
      "{\"caf\xC3\xA9\":\"\xE2\x82\xAC\"}",
      "123",
      "\"s\"",
      "null",
      deep};
  for (std::size_t i = 0; i < payloads.size(); ++i)
    write_ts_event(raw, p, "s", static_cast<std::int64_t>(i + 1), "e" + std::to_string(i),
                   payloads[i], std::to_string(kNow));
  auto rows = f->read("s");
  REQUIRE(rows.size() == payloads.size());
  for (std::size_t i = 0; i < payloads.size(); ++i) {
    INFO(payloads[i]);
    CHECK(same_json(rows[i].payload, Json::parse(payloads[i])));
  }
  CHECK(rows[0].payload["n"].is_number_unsigned());
  CHECK(rows[2].payload.dump() == R"({"k":3,"j":2})");
  auto history = f->read_history("s");
  REQUIRE(history.size() == payloads.size());
  for (std::size_t i = 0; i < payloads.size(); ++i)
    CHECK(same_json(history[i].payload, rows[i].payload));
}

}  // namespace
}  // namespace a2::redis_test
