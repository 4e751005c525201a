// SPDX-License-Identifier: MIT
// The shared validator (a2/detail/validate.hpp), called directly: what every backend accepts and
// what it rejects with InvalidArgument before any I/O.

#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include <catch2/catch.hpp>

#include "a2/detail/json_text.hpp"
#include "a2/detail/validate.hpp"
#include "a2/types.hpp"

namespace {

using a2::detail::check_session_id;
using a2::detail::valid_utf8;

constexpr std::string_view kOp = "unit";

// True if `f` throws a2::InvalidArgument with code invalid_argument; false if it returns.
// Any other exception escapes and fails the test.
template <class F>
bool rejects(F&& f) {
  try {
    f();
  } catch (const a2::InvalidArgument& e) {
    return e.code() == a2::ErrorCode::invalid_argument;
  }
  return false;
}

bool session_ok(std::string_view s) { return !rejects([&] { check_session_id(kOp, s); }); }

a2::NewEvent event(std::optional<std::string> id, std::string type = "t") {
  a2::NewEvent e;
  e.id = std::move(id);
  e.type = std::move(type);
  return e;
}

}  // namespace

TEST_CASE("check_session_id accepts ids of name characters in ':' segments", "[validate]") {
  CHECK(session_ok("s"));
  CHECK(session_ok("chat-42"));
  CHECK(session_ok("tenant:user:session"));
  CHECK(session_ok("a.b~c@d+e=f/g_h-i"));
  CHECK(session_ok("A:Z:0:9"));
  CHECK(session_ok(std::string(a2::kMaxSessionIdBytes, 'x')));
  CHECK(session_ok("x:" + std::string(a2::kMaxSessionIdBytes - 2, 'y')));
}

TEST_CASE("check_session_id rejects empty, oversized and malformed ids", "[validate]") {
  CHECK_FALSE(session_ok(""));
  CHECK_FALSE(session_ok(std::string(a2::kMaxSessionIdBytes + 1, 'x')));
  CHECK_FALSE(session_ok(":a"));
  CHECK_FALSE(session_ok("a:"));
  CHECK_FALSE(session_ok("a::b"));
  CHECK_FALSE(session_ok(":"));
  CHECK_FALSE(session_ok("a b"));
  CHECK_FALSE(session_ok("a*b"));
  CHECK_FALSE(session_ok("a{b}"));
  CHECK_FALSE(session_ok("caf\xC3\xA9"));
  CHECK_FALSE(session_ok(std::string("a\0b", 3)));
  CHECK_FALSE(session_ok("a\nb"));
}

TEST_CASE("check_session_id rejects reserved key words after the first segment", "[validate]") {
  const char* reserved[] = {"log",   "count",   "meta",          "meta-split",          "pending",
                            "ready", "snap",    "snap-history",  "snapshot-pins",       "snapshot-pin-counts",
                            "clear", "cleared", "snap-reducers", "presence",            "notify"};
  for (const char* word : reserved) {
    INFO("reserved word " << word);
    CHECK(a2::detail::reserved_key_word(word));
    CHECK_FALSE(session_ok(std::string("s:") + word));
    CHECK_FALSE(session_ok(std::string("a:") + word + ":b"));
    CHECK(session_ok(word));                      // The first segment may be anything.
    CHECK(session_ok(std::string(word) + ":x"));
    CHECK(session_ok(std::string("s:") + word + "s"));  // Only whole segments are reserved.
  }
  CHECK_FALSE(a2::detail::reserved_key_word("logs"));
  CHECK_FALSE(a2::detail::reserved_key_word("Log"));
  CHECK(session_ok("s:Log"));
}

TEST_CASE("check_reducer accepts name characters without ':'", "[validate]") {
  auto ok = [](std::string_view r) { return !rejects([&] { a2::detail::check_reducer(kOp, r); }); };
  CHECK(ok("counter"));
  CHECK(ok("v2/event-counter.x"));
  CHECK(ok(std::string(a2::kMaxReducerBytes, 'r')));
  CHECK_FALSE(ok(""));
  CHECK_FALSE(ok(std::string(a2::kMaxReducerBytes + 1, 'r')));
  CHECK_FALSE(ok("a:b"));
  CHECK_FALSE(ok("a b"));
}

TEST_CASE("valid_utf8 accepts well-formed UTF-8", "[validate][utf8]") {
  CHECK(valid_utf8(""));
  CHECK(valid_utf8("plain ascii"));
  CHECK(valid_utf8("caf\xC3\xA9"));            // 2 bytes: é
  CHECK(valid_utf8("\xE6\x97\xA5\xE6\x9C\xAC"));  // 3 bytes: 日本
  CHECK(valid_utf8("\xF0\x9F\x98\x80"));        // 4 bytes: U+1F600
  CHECK(valid_utf8("\xF4\x8F\xBF\xBF"));        // U+10FFFF, the last code point
  CHECK(valid_utf8("\xEF\xBF\xBF"));            // U+FFFF
  CHECK(valid_utf8(std::string_view("\0", 1)));  // NUL is UTF-8 (check_text rejects it).
}

TEST_CASE("valid_utf8 rejects malformed UTF-8", "[validate][utf8]") {
  CHECK_FALSE(valid_utf8("\x80"));              // Lone continuation byte.
  CHECK_FALSE(valid_utf8("\xC3"));              // Truncated 2-byte sequence.
  CHECK_FALSE(valid_utf8("abc\xE6\x97"));       // Truncated 3-byte sequence at the end.
  CHECK_FALSE(valid_utf8("\xC3\x28"));          // Bad continuation byte.
  CHECK_FALSE(valid_utf8("\xC0\xAF"));          // Overlong '/'.
  CHECK_FALSE(valid_utf8("\xE0\x80\xAF"));      // Overlong, 3 bytes.
  CHECK_FALSE(valid_utf8("\xF0\x80\x80\xAF"));  // Overlong, 4 bytes.
  CHECK_FALSE(valid_utf8("\xED\xA0\x80"));      // UTF-16 surrogate U+D800.
  CHECK_FALSE(valid_utf8("\xED\xBF\xBF"));      // UTF-16 surrogate U+DFFF.
  CHECK_FALSE(valid_utf8("\xF4\x90\x80\x80"));  // U+110000, beyond Unicode.
  CHECK_FALSE(valid_utf8("\xF8\x88\x80\x80\x80"));  // 5-byte form.
  CHECK_FALSE(valid_utf8("\xFF"));
  CHECK_FALSE(valid_utf8("\xFE"));
}

TEST_CASE("check_text enforces non-empty, the byte limit, no NUL and UTF-8", "[validate]") {
  auto ok = [](std::string_view s, std::size_t max, bool allow_empty = false) {
    return !rejects([&] { a2::detail::check_text(kOp, "text", s, max, allow_empty); });
  };
  CHECK(ok("x", 1));
  CHECK(ok("caf\xC3\xA9", 5));
  CHECK_FALSE(ok("caf\xC3\xA9", 4));  // The limit counts bytes, not characters.
  CHECK_FALSE(ok("", 10));
  CHECK(ok("", 10, /*allow_empty=*/true));
  CHECK_FALSE(ok("toolong", 6));
  CHECK_FALSE(ok(std::string_view("a\0b", 3), 10));
  CHECK_FALSE(ok(std::string_view("a\0b", 3), 10, /*allow_empty=*/true));
  CHECK_FALSE(ok("bad \xFF byte", 100));
  CHECK_FALSE(ok("\xED\xA0\x80", 100));
}

TEST_CASE("check_integer keeps values within the 2^53-1 safe range", "[validate]") {
  auto ok = [](std::int64_t v, std::int64_t min) {
    return !rejects([&] { a2::detail::check_integer(kOp, "n", v, min); });
  };
  auto ok_default = [](std::int64_t v) {
    return !rejects([&] { a2::detail::check_integer(kOp, "n", v); });
  };
  CHECK(ok_default(0));
  CHECK(ok_default(a2::kMaxSafeInteger));
  CHECK_FALSE(ok_default(a2::kMaxSafeInteger + 1));
  CHECK(ok_default(-a2::kMaxSafeInteger));
  CHECK_FALSE(ok_default(-a2::kMaxSafeInteger - 1));
  CHECK_FALSE(ok_default(std::numeric_limits<std::int64_t>::max()));
  CHECK_FALSE(ok_default(std::numeric_limits<std::int64_t>::min()));
  CHECK(ok(1, 1));
  CHECK_FALSE(ok(0, 1));
  CHECK(ok(0, 0));
  CHECK_FALSE(ok(-1, 0));
}

TEST_CASE("check_json rejects NaN and infinity anywhere in a payload", "[validate][json]") {
  auto ok = [](const a2::Json& j) { return !rejects([&] { a2::detail::check_json(kOp, "payload", j); }); };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(ok(nullptr));
  CHECK(ok(1.5));
  CHECK(ok(-0.0));
  CHECK(ok(std::numeric_limits<double>::max()));
  CHECK(ok(a2::Json{{"a", {1, 2.5, "x", nullptr, true}}, {"b", a2::Json::object()}}));
  CHECK_FALSE(ok(nan));
  CHECK_FALSE(ok(inf));
  CHECK_FALSE(ok(-inf));
  CHECK_FALSE(ok(a2::Json{{"a", nan}}));
  CHECK_FALSE(ok(a2::Json::array({1, 2, inf})));
  CHECK_FALSE(ok(a2::Json{{"deep", {{"er", a2::Json::array({a2::Json{{"x", nan}}})}}}}));
}

TEST_CASE("check_json rejects binary values and strings that are not UTF-8", "[validate][json]") {
  auto ok = [](const a2::Json& j) { return !rejects([&] { a2::detail::check_json(kOp, "payload", j); }); };
  CHECK_FALSE(ok(a2::Json::binary({1, 2, 3})));
  CHECK_FALSE(ok(a2::Json{{"blob", a2::Json::binary({1})}}));
  CHECK_FALSE(ok(a2::Json("\xFF")));
  CHECK_FALSE(ok(a2::Json{{"k", "bad \xC3"}}));
  CHECK(ok(a2::Json("caf\xC3\xA9")));
}

TEST_CASE("check_json limits the serialized size", "[validate][json]") {
  auto ok = [](const a2::Json& j) { return !rejects([&] { a2::detail::check_json(kOp, "payload", j); }); };
  // A JSON string serializes with two quotes.
  CHECK(ok(a2::Json(std::string(a2::kMaxPayloadBytes - 2, 'a'))));
  CHECK_FALSE(ok(a2::Json(std::string(a2::kMaxPayloadBytes - 1, 'a'))));
}

namespace {
// `depth` arrays (or objects under key "k") nested in each other around `leaf`, built without
// recursion. Pass it on by reference or move: copying, comparing or dumping it recurses.
a2::Json nested(std::size_t depth, bool objects = false, a2::Json leaf = 1) {
  a2::Json root = leaf;
  for (std::size_t i = 0; i < depth; ++i) {
    a2::Json outer = objects ? a2::Json::object() : a2::Json::array();
    if (objects)
      outer["k"] = std::move(root);
    else
      outer.push_back(std::move(root));
    root = std::move(outer);
  }
  return root;
}
}  // namespace

TEST_CASE("check_json limits the nesting depth to kMaxJsonDepth without recursing",
          "[validate][json][depth]") {
  auto ok = [](const a2::Json& j) { return !rejects([&] { a2::detail::check_json(kOp, "payload", j); }); };
  CHECK(ok(nested(1)));
  CHECK(ok(nested(a2::kMaxJsonDepth)));
  CHECK(ok(nested(a2::kMaxJsonDepth, true)));
  CHECK(ok(nested(a2::kMaxJsonDepth - 1, false, a2::Json::array())));  // The leaf [] is level 512.
  CHECK_FALSE(ok(nested(a2::kMaxJsonDepth, false, a2::Json::array())));
  CHECK_FALSE(ok(nested(a2::kMaxJsonDepth + 1)));
  CHECK_FALSE(ok(nested(a2::kMaxJsonDepth + 1, true)));
  CHECK_FALSE(ok(nested(a2::kMaxJsonDepth - 1, false, a2::Json::array({a2::Json::object()}))));
  // Deep enough to overflow any recursive walk (about 8 MB of stack at 100,000 levels).
  CHECK_FALSE(ok(nested(30'000)));
  CHECK_FALSE(ok(nested(100'000, true)));
  // A wide value is not deep.
  a2::Json wide = a2::Json::array();
  for (int i = 0; i < 10'000; ++i) wide.push_back(a2::Json::array({i}));
  CHECK(ok(wide));
}

TEST_CASE("check_json rejects U+0000 in strings and keys", "[validate][json][nul]") {
  auto ok = [](const a2::Json& j) { return !rejects([&] { a2::detail::check_json(kOp, "payload", j); }); };
  CHECK_FALSE(ok(a2::Json(std::string("a\0b", 3))));
  CHECK_FALSE(ok(a2::Json(std::string(1, '\0'))));
  CHECK_FALSE(ok(a2::Json{{"k", a2::Json::array({"x", std::string("\0", 1)})}}));
  CHECK_FALSE(ok(a2::Json{{std::string("k\0", 2), 1}}));
  CHECK_FALSE(ok(a2::Json::parse(R"({"a": {"b\u0000": null}})")));
  CHECK_FALSE(ok(a2::Json::parse(R"(["\u0000"])")));
  CHECK(ok(a2::Json::parse(R"(["\u0001", "\\u0000"])")));  // Other controls, and escaped text.
}

TEST_CASE("plain_decimal_length is the length Postgres numeric prints", "[validate][json][numbers]") {
  using a2::detail::plain_decimal_length;
  CHECK(plain_decimal_length("0") == 1);
  CHECK(plain_decimal_length("-12") == 3);
  CHECK(plain_decimal_length("123.45") == 6);
  CHECK(plain_decimal_length("1.0") == 3);
  CHECK(plain_decimal_length("-0.0") == 3);               // 0.0: numeric has no -0
  CHECK(plain_decimal_length("1e308") == 309);
  CHECK(plain_decimal_length("1e+308") == 309);
  CHECK(plain_decimal_length("1E3") == 4);
  CHECK(plain_decimal_length("-1.5e+20") == 22);           // -150000000000000000000
  CHECK(plain_decimal_length("1.5e-3") == 6);              // 0.0015
  CHECK(plain_decimal_length("1e-05") == 7);               // 0.00001
  CHECK(plain_decimal_length("5e-324") == 326);            // 0.(323 zeros)5
  CHECK(plain_decimal_length("1.7976931348623157e+308") == 309);
  CHECK(plain_decimal_length("0.5e3") == 3);               // 500
}

TEST_CASE("check_json counts numbers at their plain decimal length toward kMaxPayloadBytes",
          "[validate][json][numbers]") {
  auto ok = [](const a2::Json& j) { return !rejects([&] { a2::detail::check_json(kOp, "payload", j); }); };
  // 1e308 serializes in a few bytes but counts 309: 13,000 of them (with 12,999 commas and the
  // brackets) are 4,030,001 bytes, under the limit; 14,000 are 4,340,001, over it.
  auto of = [](std::size_t n) {
    a2::Json a = a2::Json::array();
    for (std::size_t i = 0; i < n; ++i) a.push_back(1e308);
    return a;
  };
  CHECK(of(13'000).dump().size() < 200'000);
  CHECK(ok(of(13'000)));
  CHECK_FALSE(ok(of(14'000)));
  // At the byte: a string filling the limit less one 1e-3 (counted 5 bytes as 0.001) and a comma.
  auto filled = [](std::size_t string_bytes) {
    return a2::Json::array({std::string(string_bytes, 's'), 1e-3});
  };
  const std::size_t room = a2::kMaxPayloadBytes - 2 /*[]*/ - 2 /*""*/ - 1 /*,*/ - 5 /*0.001*/;
  CHECK(ok(filled(room)));
  CHECK_FALSE(ok(filled(room + 1)));
  // Integers are printed as written.
  CHECK(ok(a2::Json::array({std::string(a2::kMaxPayloadBytes - 2 - 2 - 1 - 16, 's'),
                            9007199254740991})));
}

TEST_CASE("check_lease needs a positive ttl or a non-negative expiry", "[validate]") {
  auto ok = [](std::optional<std::int64_t> ttl, std::optional<std::int64_t> at) {
    return !rejects([&] { a2::detail::check_lease(kOp, ttl, at); });
  };
  CHECK_FALSE(ok(std::nullopt, std::nullopt));
  CHECK(ok(1, std::nullopt));
  CHECK_FALSE(ok(0, std::nullopt));
  CHECK_FALSE(ok(-5, std::nullopt));
  CHECK(ok(std::nullopt, 0));
  CHECK_FALSE(ok(std::nullopt, -1));
  CHECK(ok(1000, 2000));
  CHECK_FALSE(ok(0, 2000));  // A bad ttl is an error even when expires_at_ms wins.
}

TEST_CASE("lease_expires_at: expires_at_ms wins, else now + ttl_ms", "[validate]") {
  CHECK(a2::detail::lease_expires_at(1000, 500, std::nullopt) == 1500);
  CHECK(a2::detail::lease_expires_at(1000, std::nullopt, 7) == 7);
  CHECK(a2::detail::lease_expires_at(1000, 500, 7) == 7);
  CHECK(a2::detail::lease_expires_at(1000, 500, 0) == 0);  // An expiry of 0 is given, not absent.
}

TEST_CASE("every Redis key word is a reserved session id segment", "[validate]") {
  for (auto word : a2::detail::redis_key_words::kAll) {
    CHECK(rejects([&] { check_session_id(kOp, "s:" + std::string(word)); }));
    CHECK_FALSE(rejects([&] { check_session_id(kOp, std::string(word) + ":s"); }));
  }
}

TEST_CASE("check_batch_size and check_list_size enforce their limits", "[validate]") {
  CHECK_FALSE(rejects([] { a2::detail::check_batch_size(kOp, a2::kMaxBatchEvents); }));
  CHECK(rejects([] { a2::detail::check_batch_size(kOp, a2::kMaxBatchEvents + 1); }));
  CHECK_FALSE(rejects([] { a2::detail::check_list_size(kOp, "l", a2::kMaxListedIndexes); }));
  CHECK(rejects([] { a2::detail::check_list_size(kOp, "l", a2::kMaxListedIndexes + 1); }));
}

TEST_CASE("check_event rejects duplicate ids in a batch and bad fields", "[validate]") {
  std::set<std::string> seen;
  CHECK_FALSE(rejects([&] { a2::detail::check_event(kOp, event("e1"), seen); }));
  CHECK_FALSE(rejects([&] { a2::detail::check_event(kOp, event("e2"), seen); }));
  CHECK_FALSE(rejects([&] { a2::detail::check_event(kOp, event(std::nullopt), seen); }));
  CHECK(rejects([&] { a2::detail::check_event(kOp, event("e1"), seen); }));
  CHECK(seen == std::set<std::string>{"e1", "e2"});

  std::set<std::string> fresh;
  CHECK(rejects([&] { a2::detail::check_event(kOp, event(""), fresh); }));
  CHECK(rejects([&] { a2::detail::check_event(kOp, event(std::string(a2::kMaxEventIdBytes + 1, 'i')), fresh); }));
  CHECK(rejects([&] { a2::detail::check_event(kOp, event("ok", ""), fresh); }));
  CHECK(rejects([&] { a2::detail::check_event(kOp, event("ok2", "bad\xFF"), fresh); }));

  a2::NewEvent empty_lane = event("lane-empty");
  empty_lane.lane = "";
  CHECK_FALSE(rejects([&] { a2::detail::check_event(kOp, empty_lane, fresh); }));
  a2::NewEvent long_lane = event("lane-long");
  long_lane.lane = std::string(a2::kMaxLaneBytes + 1, 'l');
  CHECK(rejects([&] { a2::detail::check_event(kOp, long_lane, fresh); }));
  a2::NewEvent nan_payload = event("nan");
  nan_payload.payload = {{"x", std::nan("")}};
  CHECK(rejects([&] { a2::detail::check_event(kOp, nan_payload, fresh); }));
}

TEST_CASE("parse_stored_json keeps text nested deeper than kMaxJsonDepth as a string",
          "[validate][json][depth]") {
  using a2::detail::json_text_depth;
  using a2::detail::parse_stored_json;
  CHECK(json_text_depth("1", 600) == 0);
  CHECK(json_text_depth(R"({"a": [1, {"b": []}]})", 600) == 4);
  CHECK(json_text_depth(R"(["[[[{{{", "\"[[", {}])", 600) == 2);  // Brackets in strings.
  const std::string at_limit =
      std::string(a2::kMaxJsonDepth, '[') + "1" + std::string(a2::kMaxJsonDepth, ']');
  const std::string over = "[" + at_limit + "]";
  CHECK(parse_stored_json(at_limit) == nested(a2::kMaxJsonDepth));
  CHECK(parse_stored_json(over) == a2::Json(over));
  // 100,000 levels, as another writer could store: no tree is built, nothing recurses.
  const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  CHECK(json_text_depth(deep, a2::kMaxJsonDepth + 1) == a2::kMaxJsonDepth + 1);
  CHECK(parse_stored_json(deep).get_ref<const std::string&>() == deep);
  CHECK(parse_stored_json(R"({"k": "v"})") == a2::Json{{"k", "v"}});
}
