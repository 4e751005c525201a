// SPDX-License-Identifier: MIT
#pragma once

// Stores' results as JSON, for comparing reads of different shapes and whole-store pictures.
// Defined once here for every scenario.

#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "a2/store.hpp"
#include "support/support.hpp"

namespace a2::conformance {

// Everything observable about a public event, as JSON.
inline Json event_json(const Event& e) {
  return {{"session_id", e.session_id}, {"index", e.index},          {"id", e.id}, {"type", e.type},
          {"payload", e.payload},       {"created_at", e.created_at}};
}
template <class E>
Json events_json(const std::vector<E>& events) {
  Json out = Json::array();
  for (const auto& e : events) out.push_back(event_json(e));
  return out;
}

// Everything observable about a read_state result, as JSON.
inline Json state_json(const StateResult& r) {
  Json j;
  j["head_index"] = r.head_index ? Json(*r.head_index) : Json();
  j["snapshot"] =
      r.snapshot ? Json{{"index", r.snapshot->index}, {"state", r.snapshot->state}} : Json();
  j["events"] = events_json(r.events);
  j["clear_index"] = r.clear_index ? Json(*r.clear_index) : Json();
  return j;
}

// Every session of the store, paging with `limit`; REQUIREs pages of at most `limit` and an end.
// A session listed twice (Redis, rarely) keeps one summary.
inline std::map<std::string, SessionSummary> all_sessions(Store& store, std::int64_t limit) {
  std::map<std::string, SessionSummary> out;
  std::string cursor;
  for (int pages = 0;; ++pages) {
    REQUIRE(pages < 1000);
    auto page = store.list_sessions({.cursor = cursor, .limit = limit});
    REQUIRE(static_cast<std::int64_t>(page.sessions.size()) <= limit);
    for (auto& s : page.sessions) out[s.session_id] = s;
    if (page.next_cursor.empty()) break;
    cursor = page.next_cursor;
  }
  return out;
}

inline Json summary_json(const SessionSummary& s) {
  return {{"session", s.session_id}, {"head", s.head},   {"clear", s.clear_index},
          {"pending", s.pending},    {"ready", s.ready}, {"claimed", s.claimed},
          {"dead", s.dead}};
}

inline Json inspection_json(const SessionInspection& i) {
  Json lanes = Json::array(), claims = Json::array(), snapshots = Json::array();
  for (const auto& l : i.lanes) lanes.push_back({l.lane, l.head_index, l.pending});
  for (const auto& c : i.claims) claims.push_back({c.index, c.attempt, c.holder, c.expires_at});
  for (const auto& s : i.snapshots) snapshots.push_back({s.reducer, s.index, s.history});
  return {{"summary", summary_json(i.summary)},
          {"lanes", lanes},
          {"claims", claims},
          {"snapshots", snapshots}};
}

}  // namespace a2::conformance
