// SPDX-License-Identifier: MIT
#pragma once

// Invalid inputs and the check that they change nothing, for the bad-input and value scenarios
// (docs/semantics.md#scenarios).

#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "a2/store.hpp"
#include "harness.hpp"
#include "support/as_json.hpp"
#include "support/support.hpp"

namespace a2::conformance {

// A whole-store picture for the bad-input tests: sessions "s" and "s2" (rows, dead letters,
// pending flag), reducer "r" of "s", and the presence of "s".
inline Json world(Store& store) {
  Json presence = Json::object();
  for (const auto& [participant, state] : store.read_presence("s")) presence[participant] = state;
  return {{"s", observe(store, "s")},
          {"s2", observe(store, "s2")},
          {"state", state_json(store.read_state("s", "r"))},
          {"presence", presence}};
}

// Runs `f`, REQUIREs invalid_argument, and REQUIREs that world() did not change.
template <class F>
void require_invalid_and_unchanged(Store& store, F&& f) {
  auto before = world(store);
  require_error(ErrorCode::invalid_argument, std::forward<F>(f));
  REQUIRE(world(store) == before);
}

// Strings a text field of `max` bytes must refuse: empty, one byte too long, a NUL byte,
// invalid UTF-8 (a stray continuation byte, a truncated sequence, an overlong encoding, a
// surrogate).
inline std::vector<std::string> bad_texts(std::size_t max, bool allow_empty = false) {
  std::vector<std::string> out;
  if (!allow_empty) out.emplace_back();
  out.push_back(std::string(max + 1, 'x'));
  out.push_back(std::string("a\0b", 3));
  out.push_back("a\x80z");
  out.push_back("a\xE2\x82");
  out.push_back("\xC0\xAF");
  out.push_back("\xED\xA0\x80");
  out.push_back("\xFF");
  return out;
}

// Session ids the validator must refuse (docs/redis-layout.md#keys: no id may spell another
// session's keys).
inline std::vector<std::string> bad_session_ids() {
  return {"",           std::string(kMaxSessionIdBytes + 1, 's'),
          "a b",        "a'b",
          "a\"b",       "a*",
          "a{b}",       "a[b]",
          "a?b",        "a\\b",
          "s:snap",     "s:log",
          "s:count",    "s:clear",
          "s:presence", "s:notify",
          "a::b",       ":a",
          "a:",         std::string("s\0x", 3),
          "s\xFF",
          "s\xC3\xA9",  // Valid UTF-8, but not an allowed character.
          "s\n"};
}

// Reducer names the validator must refuse.
inline std::vector<std::string> bad_reducers() {
  return {
      "",     std::string(kMaxReducerBytes + 1, 'r'), "r:x", "r b", "r*", std::string("r\0x", 3),
      "r\xFF"};
}

// JSON values a payload or checkpoint state must refuse.
inline std::vector<Json> bad_json() {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  return {Json(nan),
          Json(inf),
          Json(-inf),
          Json{{"a", Json::array({1, nan})}},
          Json::array({Json{{"deep", Json{{"x", inf}}}}}),
          Json("bad \xFF utf-8"),
          Json{{"k", std::string(kMaxPayloadBytes, 'p')}}};
}

// A string with control and non-ASCII bytes escaped, for INFO messages.
inline std::string printable(const std::string& s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (char ch : s.substr(0, 80)) {
    auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7F) {
      out += ch;
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    }
  }
  if (s.size() > 80) out += "...(" + std::to_string(s.size()) + " bytes)";
  return out;
}

// Runs require_invalid_and_unchanged for op(v) with every v of `values`.
template <class T, class Op>
void each_invalid(Store& store, const std::vector<T>& values, Op&& op) {
  for (const auto& v : values) {
    if constexpr (std::is_same_v<T, std::string>) {
      INFO("value: '" << printable(v) << "'");
      require_invalid_and_unchanged(store, [&] { op(v); });
    } else {
      INFO("value: " << printable(
               v.dump(-1, ' ', false, Json::error_handler_t::replace).substr(0, 80)));
      require_invalid_and_unchanged(store, [&] { op(v); });
    }
  }
}

inline constexpr std::int64_t kBeyondSafe = kMaxSafeInteger + 1;

}  // namespace a2::conformance
