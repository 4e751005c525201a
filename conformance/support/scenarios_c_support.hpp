// SPDX-License-Identifier: MIT
#pragma once

// Helpers for the clear, reclaim, concurrency, feed/lifecycle and bad-input scenarios
// (docs/semantics.md#scenarios).

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "a2/store.hpp"
#include "harness.hpp"
#include "support/support.hpp"

namespace a2::conformance {

// A public event as JSON (for comparisons).
inline Json event_json(const Event& e) {
  return {{"session_id", e.session_id}, {"index", e.index},          {"id", e.id}, {"type", e.type},
          {"payload", e.payload},       {"created_at", e.created_at}};
}

// Everything a read_state result says, as JSON.
inline Json state_json(const StateResult& r) {
  Json events = Json::array();
  for (const auto& e : r.events) events.push_back(event_json(e));
  Json snapshot =
      r.snapshot ? Json{{"index", r.snapshot->index}, {"state", r.snapshot->state}} : Json();
  return {{"head_index", r.head_index ? Json(*r.head_index) : Json()},
          {"snapshot", snapshot},
          {"events", events},
          {"clear_index", r.clear_index ? Json(*r.clear_index) : Json()}};
}

// The totals of a reclaim loop.
struct ReclaimTotals {
  std::int64_t deleted = 0;  // Sum of `deleted` over every call.
  int calls = 0;             // Calls made, including the one that reported done.
  int deleting_calls = 0;    // Calls that deleted something.
};

// Calls reclaim until it reports done; REQUIREs that it does within `max_calls`.
inline ReclaimTotals reclaim_all(Store& store, const std::string& session = "s",
                                 int max_calls = 1000) {
  ReclaimTotals t;
  while (true) {
    REQUIRE(t.calls < max_calls);
    auto r = store.reclaim(session);
    ++t.calls;
    REQUIRE(r.deleted >= 0);
    t.deleted += r.deleted;
    if (r.deleted > 0) ++t.deleting_calls;
    if (r.done) return t;
  }
}

// Unsettled events with caller-supplied ids prefix1..prefixN.
inline std::vector<NewEvent> evs_with_ids(const std::string& prefix, int n, int first = 1) {
  std::vector<NewEvent> out;
  out.reserve(static_cast<std::size_t>(n));
  for (int i = first; i < first + n; ++i) out.push_back(ev_id(prefix + std::to_string(i)));
  return out;
}

// A child event with a lane.
inline ChildEvent in_lane_child(std::string id, std::string lane) {
  ChildEvent c = child(std::move(id));
  c.lane = std::move(lane);
  return c;
}

// Pulls batches from a feed until `n` events arrived or `limit` passed; REQUIREs that each batch
// is nonempty and continues the previous one without gaps or duplicates.
inline std::vector<Event> collect(Feed& feed, std::size_t n,
                                  std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  std::vector<Event> out;
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (out.size() < n && std::chrono::steady_clock::now() < deadline) {
    auto batch = feed.next(std::chrono::milliseconds(50));
    for (auto& e : batch) {
      if (!out.empty()) REQUIRE(e.index == out.back().index + 1);
      out.push_back(std::move(e));
    }
    if (!batch.empty()) REQUIRE(feed.cursor() == out.back().index);
  }
  return out;
}

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
