// SPDX-License-Identifier: MIT
// The stored layout is the original package's (docs/redis-layout.md#keys): key names, id keys and
// their escaping, owner records, metadata chunks and split, lane pointers, stored integers.
#include <map>

#include "redis/keys.hpp"
#include "support.hpp"

namespace a2::redis_test {
namespace {
using namespace a2::conformance;
using a2::redis::detail::escape_id;

TEST_CASE("escape_id reproduces JSON.stringify with ':' as \\u003a", "[redis][layout][S27]") {
  CHECK(escape_id("a:b") == "\"a\\u003ab\"");
  CHECK(escape_id("q\"uote") == "\"q\\\"uote\"");
  CHECK(escape_id("back\\slash") == "\"back\\\\slash\"");
  CHECK(escape_id("tab\t") == "\"tab\\t\"");
  CHECK(escape_id("\b\f\n\r") == "\"\\b\\f\\n\\r\"");
  CHECK(escape_id(std::string("\x01\x1f", 2)) == "\"\\u0001\\u001f\"");
  CHECK(escape_id("\x7f") == "\"\x7f\"");                          // U+007F unchanged.
  CHECK(escape_id("\xe2\x80\xa8") == "\"\xe2\x80\xa8\"");          // U+2028 unchanged.
  CHECK(escape_id("\xf0\x9f\x98\x80") == "\"\xf0\x9f\x98\x80\"");  // Emoji unchanged.
  CHECK(escape_id("\xef\xbb\xbf"
                  "bom") ==
        "\"\xef\xbb\xbf"
        "bom\"");  // BOM is data.
  CHECK(escape_id("ids:count") == "\"ids\\u003acount\"");
}

TEST_CASE("an id key escapes the id's ':' only, after a prefix that may hold ':'",
          "[redis][layout][S27]") {
  const a2::redis::detail::Keys keys{"app:v1"};
  CHECK(keys.id("a:b") == "app:v1:ids:\"a\\u003ab\"");
  CHECK(keys.id("plain") == "app:v1:ids:\"plain\"");
  std::string out = "x:";
  keys.put_id(out, "q\":");
  CHECK(out == "x:app:v1:ids:\"q\\\"\\u003a\"");
  // A session key's pieces join to its name.
  const auto pieces = keys.log<a2::redis::detail::KeyPieces>("s:1");
  std::string joined;
  for (auto piece : pieces) joined += piece;
  CHECK(joined == keys.log("s:1"));
  CHECK(joined == "app:v1:s:1:log");
}

TEST_CASE("append writes the original key layout", "[redis][layout][S27]") {
  const auto p = unique_prefix("lay");
  auto f = open_fixture(p);
  Raw raw;
  auto r = f->append("s", {ev_id("a:b", "t", Json{{"k", 1}}), in_lane(ev("u"), "L")});
  REQUIRE(r.events.size() == 2);
  // [R] the key of id a:b is p:ids:"a\u003ab", holding the owner record ["s",1].
  CHECK(raw.get({"GET", p + ":ids:\"a\\u003ab\""}) == "[\"s\",1]");
  CHECK(raw.get({"GET", p + ":ids:\"g1\""}) == "[\"s\",2]");
  CHECK(raw.get({"GET", p + ":s:count"}) == "2");
  // A new session stores split 0: all its metadata lives in chunks.
  CHECK(raw.get({"GET", p + ":s:meta-split"}) == "0");
  CHECK(raw.get({"TYPE", p + ":s:log"}) == "stream");
  auto entry = raw.list({"XRANGE", p + ":s:log", "1-0", "1-0"});
  REQUIRE(entry.size() == 1);  // Nested reply: fields checked below through XRANGE of one field.
  auto pending = raw.list({"ZRANGE", p + ":s:pending", "0", "-1"});
  CHECK(pending == std::vector<std::string>{"1", "2"});
  auto ready = raw.list({"ZRANGE", p + ":s:ready", "0", "-1"});
  CHECK(ready == std::vector<std::string>{"1", "2"});
  // The laned event: its lane copy in chunk 0, the lane pointers (byte length 1) in the base hash.
  CHECK(raw.get({"HGET", p + ":s:meta:0", "2:l"}) == "L");
  CHECK(raw.get({"HGET", p + ":s:meta", "__lane:1:L:head"}) == "2");
  CHECK(raw.get({"HGET", p + ":s:meta", "__lane:1:L:tail"}) == "2");
  // Claims write chunk metadata.
  (void)claim(*f);
  CHECK(raw.get({"HGET", p + ":s:meta:0", "1:d"}) == "1");
  CHECK(raw.get({"HGET", p + ":s:meta:0", "1:ch"}) == "w1");
  CHECK(raw.get({"HGET", p + ":s:meta:0", "1:ce"}) == std::to_string(kT0 + kTtl));
}

TEST_CASE("stream entries hold the original fields", "[redis][layout]") {
  const auto p = unique_prefix("fields");
  auto f = open_fixture(p);
  Raw raw;
  (void)f->append("s", {ev_id("x", "t", Json{{"a", 1}})});
  (void)claim(*f);
  (void)complete(*f, "s", 1, 1, {child("c1", "child", Json::array({1, 2}))});
  auto r = raw.cmd({"XRANGE", p + ":s:log", "-", "+"});
  REQUIRE(r->elements == 2);
  auto fields = [&](std::size_t i) {
    std::map<std::string, std::string> m;
    auto* values = r->element[i]->element[1];
    for (std::size_t k = 0; k + 1 < values->elements; k += 2)
      m[std::string(values->element[k]->str, values->element[k]->len)] =
          std::string(values->element[k + 1]->str, values->element[k + 1]->len);
    return m;
  };
  auto first = fields(0);
  CHECK(std::string(r->element[0]->element[0]->str) == "1-0");
  CHECK(first["id"] == "x");
  CHECK(first["type"] == "t");
  CHECK(first["payload"] == "{\"a\":1}");
  CHECK(first["created_at"] == std::to_string(kT0));
  CHECK(first["cause"] == "");
  CHECK(first["lane"] == "");
  auto second = fields(1);
  CHECK(Json::parse(second["cause"]) == Json{{"index", 1}, {"attempt", 1}});
  CHECK(second["payload"] == "[1,2]");
  CHECK(raw.get({"HGET", p + ":s:meta:0", "1:ri"}) == "[\"c1\"]");
  CHECK(raw.get({"HGET", p + ":s:meta:0", "1:pa"}) == "1");
}

TEST_CASE("a session named ids with id count collides with nothing", "[redis][layout][S27]") {
  const auto p = unique_prefix("ids");
  auto f = open_fixture(p);
  Raw raw;
  (void)f->append("ids", {ev_id("count")});
  (void)f->append("s", {ev_id("ids:count")});
  CHECK(raw.get({"GET", p + ":ids:count"}) == "1");  // The session's counter.
  CHECK(raw.get({"GET", p + ":ids:\"count\""}) == "[\"ids\",1]");
  CHECK(raw.get({"GET", p + ":ids:\"ids\\u003acount\""}) == "[\"s\",1]");
  CHECK(f->read("ids").at(0).id == "count");
  CHECK(f->append("s", {ev_id("ids:count")}).events.at(0).index == 1);  // Replay.
}

TEST_CASE("metadata goes to 1000-index chunks above the split", "[redis][layout]") {
  const auto p = unique_prefix("chunk");
  auto f = open_fixture(p);
  Raw raw;
  (void)f->append("s", evs(1001));
  (void)claim(*f, "s", "w1", {});
  CHECK(raw.get({"HGET", p + ":s:meta:0", "1000:d"}) == "1");
  CHECK(raw.get({"HGET", p + ":s:meta:1", "1001:d"}) == "1");
  CHECK_FALSE(raw.get({"HGET", p + ":s:meta", "1001:d"}).has_value());
}

TEST_CASE("data written before chunking (split set) stays readable from the base hash",
          "[redis][layout]") {
  // A session written by an older version: metadata of indexes <= split in the base hash.
  const auto p = unique_prefix("legacy");
  auto f = open_fixture(p);
  Raw raw;
  (void)f->append("s", evs(3));
  // Move index 1..3 metadata to the base hash as a pre-chunking store would have it.
  raw.cmd({"SET", p + ":s:meta-split", "3"});
  raw.cmd({"HSET", p + ":s:meta", "2:d", "4", "2:ch", "old", "2:ce", std::to_string(kT0 + 5)});
  auto rows = f->read("s");
  REQUIRE(rows.size() == 3);
  CHECK(rows[1].attempt_count == 4);
  CHECK(rows[1].claim_holder == std::optional<std::string>("old"));
}

TEST_CASE("a payload nested deeper than kMaxJsonDepth, as another writer may store it, reads back "
          "as its text",
          "[redis][layout][values]") {
  // The TypeScript package has no depth limit. 100,000 levels: a recursive walk of the decoded
  // tree (copy, compare, dump) would overflow the stack, so it is returned as a JSON string.
  const auto p = unique_prefix("deep");
  auto f = open_fixture(p);
  Raw raw;
  const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  raw.cmd({"XADD", p + ":s:log", "1-0", "id", "e1", "type", "t", "payload", deep, "created_at",
           "1000", "cause", "", "lane", ""});
  raw.cmd({"SET", p + ":s:count", "1"});
  auto history = f->read_history("s");
  REQUIRE(history.size() == 1);
  REQUIRE(history[0].payload.is_string());
  REQUIRE(history[0].payload.get_ref<const std::string&>() == deep);
  auto rows = f->read("s");
  REQUIRE(rows.size() == 1);
  REQUIRE(rows[0].payload == Json(deep));
  auto page = f->read_feed_page("s", 0);
  REQUIRE(page.size() == 1);
  REQUIRE(page[0].payload_json == deep);
}

TEST_CASE("read rejects an invalid stored count, split or boundary", "[redis][layout][S41]") {
  const auto p = unique_prefix("bad");
  auto f = open_fixture(p);
  Raw raw;
  (void)f->append("s", evs(2));
  raw.cmd({"SET", p + ":s:count", "abc"});
  try {
    (void)f->read("s");
    FAIL("read accepted an invalid count");
  } catch (const Unavailable& e) {
    CHECK(std::string(e.what()).find("redis event count for session 's' is invalid") !=
          std::string::npos);
  }
  raw.cmd({"SET", p + ":s:count", "2"});
  raw.cmd({"SET", p + ":s:meta-split", "-1"});
  require_error(ErrorCode::store_unavailable, [&] { (void)f->read("s"); });
  raw.cmd({"SET", p + ":s:meta-split", "0"});
  raw.cmd({"SET", p + ":s:clear", "1.5"});
  require_error(ErrorCode::store_unavailable, [&] { (void)f->read("s"); });
  raw.cmd({"DEL", p + ":s:clear"});
  CHECK(f->read("s").size() == 2);
}

TEST_CASE("clear refuses a marker id that already has an owner record", "[redis][clear][S119]") {
  const auto p = unique_prefix("marker");
  auto f = open_fixture(p);
  Raw raw;
  // The IdSource's next id is g1: make it owned first.
  (void)f->append("s", {ev_id("g1"), ev_id("x")});
  auto before = observe(*f);
  try {
    (void)clear(*f);
    FAIL("clear accepted a taken marker id");
  } catch (const PartialDuplicateBatch& e) {
    CHECK(std::string(e.what()).find("the clear marker id 'g1' already exists") !=
          std::string::npos);
  }
  CHECK(observe(*f) == before);
  CHECK_FALSE(raw.get({"GET", p + ":s:clear"}).has_value());
  CHECK(raw.get({"GET", p + ":s:count"}) == "2");
  CHECK(raw.integer({"EXISTS", p + ":s:cleared"}) == 0);
}

}  // namespace
}  // namespace a2::redis_test
