// SPDX-License-Identifier: MIT
// The script reply decoders are total over the shapes the original package's data gives: numbers
// as integers or as text (fractional, exponent form), nil optional columns, short column lists,
// payloads with lone surrogates. A decoder that threw after a script changed the store would
// commit and then fail the call.
#include <catch2/catch.hpp>

#include "redis/codec.hpp"
#include "redis/scripts/claim_available.hpp"
#include "redis/scripts/renew_claims.hpp"

namespace a2::redis_test {
namespace {

using a2::redis::detail::Reply;
namespace codec = a2::redis::detail;

Reply s(std::string v) {
  Reply r;
  r.type = Reply::Type::string;
  r.str = std::move(v);
  return r;
}
Reply i(long long v) {
  Reply r;
  r.type = Reply::Type::integer;
  r.integer = v;
  return r;
}
Reply nil() { return Reply{}; }
Reply a(std::vector<Reply> elements) {
  Reply r;
  r.type = Reply::Type::array;
  r.elements = std::move(elements);
  return r;
}
// A stream entry [id, [field, value, ...]].
Reply entry(std::int64_t index, const std::string& payload, const std::string& created_at,
            const std::string& cause = "") {
  return a({s(std::to_string(index) + "-0"),
            a({s("id"), s("e" + std::to_string(index)), s("type"), s("t"), s("payload"), s(payload),
               s("created_at"), s(created_at), s("cause"), s(cause), s("lane"), s("")})});
}

TEST_CASE("number decodes integers, decimal text, exponent form and fractions",
          "[redis][decoder]") {
  CHECK(codec::number("op", i(7)) == 7);
  CHECK(codec::number("op", s("7")) == 7);
  CHECK(codec::number("op", s("1e+15")) == 1'000'000'000'000'000);
  CHECK(codec::number("op", s("1700000060000.3333")) == 1700000060000);
  CHECK(codec::number("op", s("1.7000000600003e+12")) == 1700000060000);
  CHECK(codec::number("op", s("-2.5")) == -2);  // Toward zero.
  CHECK(codec::number("op", s("9007199254740991")) == 9007199254740991);
  CHECK(codec::optional_number("op", nil()) == std::nullopt);
  for (const char* bad :
       {"", "abc", "1.", ".5", "1e", "0x10", " 1", "inf", "nan", "1e400", "9007199254740993"})
    CHECK_THROWS_AS(codec::number("op", s(bad)), Unavailable);
  // Stored indexes stay strict.
  CHECK(codec::parse_integer("1.5") == std::nullopt);
  CHECK(codec::parse_integer("12") == 12);
}

TEST_CASE("claim_result decodes the claimed shapes of the original package's data",
          "[redis][decoder]") {
  // { 'claimed', count, now, holder, expiresAt, boundary, (entry, row) x count }, entry the
  // stream id and six values or the entry whole. Two claimed events: a fresh one (row nil) as
  // values, and one whole whose row holds fractional times, counters as text and integers, with
  // a lone surrogate in its payload, a fractional created_at and a cause written by cjson in
  // another key order; the shared lease end is fractional.
  Reply r = a({s("claimed"), s("2"), s("1700000000001"), s("w"), s("1700000060000.3333"), s("0"),
               s("1-0"), s("e1"), s("t"), s("{\"b\":1,\"a\":2}"), s("999"), s(""), s(""), nil(),
               entry(2, "\"\\ud800\"", "1700000000000.75", "{\"attempt\":1,\"index\":1}"),
               // attempt, failures, lastError, firstClaimed, lastFailed, lastFailedAttempt,
               // availableAt
               a({i(3), s("2"), s("boom"), s("1700000000000.25"), s("1700000000000.9"), s("2"),
                  s("1700000000500.5")})});
  auto result = codec::claim_result("claim_available", "s", r);
  REQUIRE(result.verdict == ClaimVerdict::claimed);
  REQUIRE(result.events.size() == 2);
  const auto& first = result.events[0];
  CHECK(first.index == 1);
  CHECK(first.id == "e1");
  CHECK(first.type == "t");
  CHECK(first.payload.begin().key() == "b");
  CHECK(first.created_at == 999);
  CHECK(first.cause == std::nullopt);
  CHECK(first.lane == std::nullopt);
  CHECK(first.attempt_count == 1);
  CHECK(first.failure_count == 0);
  CHECK(first.last_error == std::nullopt);
  CHECK(first.first_claimed_at == 1700000000001);
  CHECK(first.last_claimed_at == 1700000000001);
  CHECK(first.last_failed_at == std::nullopt);
  CHECK(first.last_failed_attempt == std::nullopt);
  CHECK(first.claim_holder == std::optional<std::string>("w"));
  CHECK(first.claim_expires_at == 1700000060000);
  CHECK(first.clear_index == std::nullopt);
  CHECK(first.available_at == std::nullopt);
  const auto& second = result.events[1];
  CHECK(second.payload == Json("\xEF\xBF\xBD"));
  CHECK(second.created_at == 1700000000000);
  CHECK(second.cause == std::optional<EventCause>(EventCause{1, 1}));
  CHECK(second.attempt_count == 3);
  CHECK(second.failure_count == 2);
  CHECK(second.last_error == std::optional<std::string>("boom"));
  CHECK(second.first_claimed_at == 1700000000000);
  CHECK(second.last_claimed_at == 1700000000001);
  CHECK(second.last_failed_at == 1700000000000);
  CHECK(second.last_failed_attempt == 2);
  CHECK(second.claim_expires_at == 1700000060000);
  CHECK(second.available_at == 1700000000500);

  // Integers in the header and the row, a row of nils, and a clear boundary.
  Reply bounded = a({s("claimed"), i(1), i(5), s("w"), i(9), s("3"), entry(4, "null", "5"),
                     a({s("2"), i(0), nil(), nil(), nil(), nil(), nil()})});
  const auto bounded_result = codec::claim_result("claim_available", "s", bounded);
  const auto& one = bounded_result.events.at(0);
  CHECK(one.clear_index == 3);
  CHECK(one.attempt_count == 2);
  CHECK(one.failure_count == 0);
  CHECK(one.first_claimed_at == std::nullopt);
  CHECK(one.last_claimed_at == 5);
  CHECK(one.claim_expires_at == 9);

  // Values with a lane and a cause.
  Reply values = a({s("claimed"), s("1"), s("5"), s("w"), s("9"), s("0"), s("7-0"), s("e7"), s("t"),
                    s("7"), s("5"), s("{\"index\":2,\"attempt\":3}"), s("L"), nil()});
  const auto with_values = codec::claim_result("claim_available", "s", values);
  const auto& seventh = with_values.events.at(0);
  CHECK(seventh.index == 7);
  CHECK(seventh.cause == std::optional<EventCause>(EventCause{2, 3}));
  CHECK(seventh.lane == std::optional<std::string>("L"));

  // A reply of another shape is a failure of the store, not a crash.
  for (const Reply& bad :
       {a({s("claimed"), s("1"), s("5"), s("w"), s("9"), s("0"), entry(4, "null", "5")}),
        a({s("claimed"), s("1"), s("5"), s("w"), s("9"), s("0"), s("4-0"), s("e4"), s("t"),
           s("null"), s("5"), s(""), nil()}),
        a({s("claimed"), s("1"), s("5"), s("w"), s("9"), s("0"), s("4-0"), s("e4"), s("t"),
           s("null"), s("5"), s(""), i(1), nil()}),
        a({s("claimed"), s("1"), s("5"), s("w"), s("9"), s("0"), s("4-0"), s("e4"), s("t"),
           s("null"), s("5"), s(""), s(""), nil(), nil()}),
        a({s("claimed"), s("1"), s("5"), s("w"), s("9"), s("0"), s("x-0"), s("e4"), s("t"),
           s("null"), s("5"), s(""), s(""), nil()}),
        a({s("claimed"), s("1"), s("5"), s("w"), s("9"), s("0"), entry(4, "null", "5"),
           a({s("2")})}),
        a({s("claimed"), s("2"), s("5"), s("w"), s("9"), s("0"), entry(4, "null", "5"), nil()}),
        a({s("claimed"), s("0"), s("5"), s("w"), s("9"), s("0")}),
        a({s("claimed"), s("4503599627370496"), s("5"), s("w"), s("9"), s("0"),
           entry(4, "null", "5"), nil()})})
    CHECK_THROWS_AS(codec::claim_result("claim_available", "s", bad), Unavailable);

  auto busy = codec::claim_result("claim_available", "s", a({s("busy"), s("1700000060000.3")}));
  CHECK(busy.verdict == ClaimVerdict::busy);
  CHECK(busy.retry_at == 1700000060000);
  CHECK(codec::claim_result("claim_available", "s", a({s("busy"), i(5)})).retry_at == 5);
  CHECK(codec::claim_result("claim_available", "s", a({s("settled")})).verdict ==
        ClaimVerdict::settled);
}

TEST_CASE("renew_result decodes counts and indexes as integers or text", "[redis][decoder]") {
  auto r = codec::renew_result("renew_claims", a({s("2"), i(1), s("2"), s("3")}));
  CHECK(r.renewed == std::vector<std::int64_t>{1, 2});
  CHECK(r.superseded == std::vector<std::int64_t>{3});
  auto none = codec::renew_result("renew_claims", a({i(0)}));
  CHECK(none.renewed.empty());
  CHECK(none.superseded.empty());
}

TEST_CASE("apply_columns reads the original package's metadata columns", "[redis][decoder]") {
  // p, pa, ri, ch, ce, f, fc, lc, lf, lfa, d, a, e, then a2's av
  std::vector<Reply> values = {s("1700000000005.999"),
                               s("1"),
                               s("{}"),
                               nil(),
                               nil(),
                               s("1700000000004.9"),
                               s("1700000000000.5"),
                               s("1700000000003"),
                               s("1.7000000000049e+12"),
                               i(3),
                               s("3"),
                               s("3"),
                               s("boom \xE2\x9C\x93"),
                               s("1700000000010.7")};
  std::array<const Reply*, 14> columns{};
  for (std::size_t c = 0; c < 14; ++c) columns[c] = &values[c];
  StoredEvent e;
  codec::apply_columns("read", e, columns);
  CHECK(e.processed_at == 1700000000005);
  CHECK(e.processed_by_attempt == 1);
  CHECK(e.returned_event_ids == std::optional<std::vector<std::string>>(
                                    std::vector<std::string>{}));  // cjson's empty table.
  CHECK(e.claim_holder == std::nullopt);
  CHECK(e.failed_at == 1700000000004);
  CHECK(e.first_claimed_at == 1700000000000);
  CHECK(e.last_failed_at == 1700000000004);
  CHECK(e.last_failed_attempt == 3);
  CHECK(e.attempt_count == 3);
  CHECK(e.failure_count == 3);
  CHECK(e.available_at == 1700000000010);  // Lenient like the other times: truncated.
  // Every column absent: defaults.
  Reply absent;
  for (auto& c : columns) c = &absent;
  StoredEvent empty;
  codec::apply_columns("read", empty, columns);
  CHECK(empty.attempt_count == 0);
  CHECK(empty.returned_event_ids == std::nullopt);
  CHECK(empty.available_at == std::nullopt);
}

TEST_CASE("stream entries decode fractional created_at, any cause key order and surrogates",
          "[redis][decoder]") {
  auto e = codec::to_stored_event(
      "read", "s", entry(3, R"({"z":"\udfff","a":1.0})", "12.9", R"({"index":2.0,"attempt":1})"));
  CHECK(e.created_at == 12);
  CHECK(e.cause == std::optional<EventCause>(EventCause{2, 1}));
  CHECK(e.payload.begin().key() == "z");
  CHECK(e.payload["z"] == "\xEF\xBF\xBD");
  auto row = codec::to_serialized_event("read_feed_page", "s", entry(3, R"("\ud800")", "7.5"));
  CHECK(row.payload_json == R"("\ud800")");  // Raw text, untouched.
  CHECK(row.created_at == 7);
}

}  // namespace
}  // namespace a2::redis_test
