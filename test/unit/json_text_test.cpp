// SPDX-License-Identifier: MIT
// a2::Json keeps insertion order; json_text() writes what JSON.stringify writes;
// parse_stored_json() reads what JSON.stringify writes (lone surrogates included).
#include "a2/detail/json_text.hpp"

#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <map>
#include <string>

#include "a2/types.hpp"

namespace {

using a2::Json;
using a2::detail::json_text;
using a2::detail::parse_stored_json;

std::string number(double d) { return json_text(Json(d)); }

TEST_CASE("json_text writes numbers as ECMAScript Number::toString", "[json]") {
  CHECK(number(1.0) == "1");
  CHECK(number(-0.0) == "0");
  CHECK(number(0.0) == "0");
  CHECK(number(1e20) == "100000000000000000000");
  CHECK(number(1e21) == "1e+21");
  CHECK(number(1.5e-7) == "1.5e-7");
  CHECK(number(1e-6) == "0.000001");
  CHECK(number(1.5e-6) == "0.0000015");
  CHECK(number(1e-7) == "1e-7");
  CHECK(number(0.1) == "0.1");
  CHECK(number(0.1 + 0.2) == "0.30000000000000004");
  CHECK(number(123.456) == "123.456");
  CHECK(number(-5.5) == "-5.5");
  CHECK(number(1e100) == "1e+100");
  CHECK(number(1.7976931348623157e308) == "1.7976931348623157e+308");
  CHECK(number(5e-324) == "5e-324");
  CHECK(number(-1.25e-300) == "-1.25e-300");
  CHECK(number(123456789012345680000.0) == "123456789012345680000");
  CHECK(number(9007199254740993.0) == "9007199254740992");
  CHECK(number(std::nan("")) == "null");
  CHECK(json_text(Json(std::int64_t{-42})) == "-42");
  CHECK(json_text(Json(std::uint64_t{18446744073709551615ULL})) == "18446744073709551615");
}

TEST_CASE("json_text keeps insertion order and escapes strings as JSON.stringify", "[json]") {
  Json j;
  j["z"] = 1;
  j["a"] = Json::array({true, false, nullptr, "x"});
  j["m"] = Json::object();
  j["e"] = Json::array();
  CHECK(json_text(j) == R"({"z":1,"a":[true,false,null,"x"],"m":{},"e":[]})");
  CHECK(json_text(Json("q\"\\/\b\f\n\r\t\x01\x1f\x7f\xE2\x80\xA8\xF0\x9F\x98\x80")) ==
        "\"q\\\"\\\\/\\b\\f\\n\\r\\t\\u0001\\u001f\x7f\xE2\x80\xA8\xF0\x9F\x98\x80\"");
  CHECK_THROWS_AS(json_text(Json(std::string("bad\xC3"))), Json::type_error);
  CHECK_THROWS_AS(json_text(Json(std::string("\xED\xA0\x80"))), Json::type_error);  // Surrogate.
  Json keys;
  keys["a\nb"] = 1;
  CHECK(json_text(keys) == R"({"a\nb":1})");
}

TEST_CASE("TextSize counts exactly the bytes json_text writes", "[json]") {
  // The validator's payload limit counts with TextSize; the stores write json_text.
  Json j;
  j["plain"] = "text";
  j["escaped \"key\"\n"] = "q\"\\/\b\f\n\r\t\x01\x1f\x7f\xE2\x80\xA8\xF0\x9F\x98\x80";
  j["numbers"] = Json::array({0, -0.0, 1, -7, 123456789012345LL, 18446744073709551615ULL, 0.5, 1e21,
                              1.5e-7, 0.000001, -2.5e300, 1e-300, 100.25});
  j["nested"] = Json::array(
      {Json::object(), Json::array(), nullptr, true, false, Json{{"a", Json::array({1, "x"})}}});
  for (const Json& value : {j, Json(1), Json("s"), Json(nullptr), Json::array(), Json(3.25)}) {
    a2::detail::TextSize size;
    a2::detail::append_json_text(size, value);
    INFO(json_text(value));
    CHECK(size.bytes == json_text(value).size());
  }
  a2::detail::TextSize bad;
  CHECK_THROWS_AS(a2::detail::append_json_text(bad, Json(std::string("bad\xC3"))),
                  Json::type_error);
}

TEST_CASE("append_json_text appends after what the output holds", "[json]") {
  std::string out = "prefix:";
  a2::detail::append_json_text(out, Json{{"k", "v"}});
  CHECK(out == R"(prefix:{"k":"v"})");
}

TEST_CASE("json_text of a deep value uses no recursion", "[json]") {
  Json deep = 1;
  for (int i = 0; i < 100000; ++i) deep = Json::array({std::move(deep)});
  const std::string text = json_text(deep);
  CHECK(text.size() == 200001);
}

TEST_CASE("a2::Json objects keep the first position and the last value of a repeated key",
          "[json]") {
  const std::string text = R"({"b":1,"a":2,"b":3})";
  auto j = parse_stored_json(text);
  CHECK(json_text(j) == R"({"b":3,"a":2})");  // JSON.parse's rule.
  CHECK(j == parse_stored_json(R"({"b":3,"a":2})"));
  CHECK_FALSE(j == parse_stored_json(R"({"a":2,"b":3})"));  // Equality follows the order.
}

TEST_CASE("a2::Json objects stay consistent across inserts, erases and copies", "[json]") {
  Json j = Json::object();
  for (int i = 0; i < 100; ++i) j[std::to_string(99 - i)] = i;
  CHECK(j.begin().key() == "99");
  CHECK(j.at("0") == 99);
  CHECK(j.erase("50") == 1);
  CHECK_FALSE(j.contains("50"));
  CHECK(j.at("49") == 50);
  CHECK(j.at("51") == 48);
  Json copy = j;
  copy["new"] = 1;
  CHECK(copy.size() == 100);
  CHECK(j.size() == 99);
  CHECK(copy.find("new") != copy.end());
  CHECK(j.find("new") == j.end());
  j.erase(j.begin());
  CHECK_FALSE(j.contains("99"));
  CHECK(j.at("98") == 1);
  std::map<std::string, Json> m{{"b", 1}, {"a", 2}};
  Json from_map = m;
  CHECK(from_map.get<std::map<std::string, Json>>() == m);
}

TEST_CASE("parsing a large flat object costs linear time", "[json]") {
  // nlohmann::ordered_json searched keys linearly: this object took minutes.
  std::string text = "{";
  for (int i = 0; i < 200000; ++i) text += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":1";
  text += "}";
  const auto start = std::chrono::steady_clock::now();
  auto j = parse_stored_json(text);
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK(j.size() == 200000);
  CHECK(j.at("k199999") == 1);
  CHECK(took < std::chrono::seconds(10));
}

TEST_CASE("parse_stored_json decodes lone surrogate escapes as U+FFFD", "[json]") {
  const std::string fffd = "\xEF\xBF\xBD";
  CHECK(parse_stored_json(R"("\ud800")") == Json(fffd));
  CHECK(parse_stored_json(R"("\uDBFF\u0041")") == Json(fffd + "A"));
  CHECK(parse_stored_json(R"("\udc00\ud800")") == Json(fffd + fffd));
  CHECK(parse_stored_json(R"("a\ud83d\ude00b")") == Json("a\xF0\x9F\x98\x80"
                                                         "b"));
  CHECK(parse_stored_json(R"("\ud800\ud83d\ude00")") == Json(fffd + "\xF0\x9F\x98\x80"));
  CHECK(parse_stored_json(R"("\\ud800")") == Json("\\ud800"));  // An escaped backslash.
  CHECK(parse_stored_json(R"({"\ud800":"\\\ud800"})") == Json{{fffd, "\\" + fffd}});
  CHECK_THROWS_AS(parse_stored_json(R"("\ud800)"), Json::parse_error);  // Unterminated.
}

}  // namespace
