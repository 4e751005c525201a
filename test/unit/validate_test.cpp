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
