// SPDX-License-Identifier: MIT
#pragma once

// Bounded claims, held claims, claim verdicts and the work index, for the work extension,
// batched completion, work discovery and snooze scenarios
// (docs/semantics.md#work-extension-scenarios,
// docs/semantics.md#batched-completion-and-claim_next-scenarios,
// docs/semantics.md#work-discovery-scenarios, docs/semantics.md#snooze-scenarios).

#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "a2/store.hpp"
#include "harness.hpp"
#include "support/support.hpp"

namespace a2::conformance {

// claim_available with max_events = `max` (the default lease).
inline ClaimResult claim_max(Store& store, std::int64_t max, const std::string& holder = "w1",
                             std::vector<std::int64_t> exclude = {},
                             const std::string& session = "s") {
  return store.claim_available({.session_id = session,
                                .holder = holder,
                                .ttl_ms = kTtl,
                                .expires_at_ms = std::nullopt,
                                .exclude_indexes = std::move(exclude),
                                .max_events = max});
}

// held_claims as comparable tuples {index, attempt, expires_at}.
using Held = std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>>;
inline Held held(Store& store, const std::string& holder, const std::string& session = "s") {
  Held out;
  for (const auto& c : store.held_claims(session, holder))
    out.emplace_back(c.index, c.attempt, c.expires_at);
  return out;
}

// The claimed indexes of a claim that must have verdict `claimed`.
inline std::vector<std::int64_t> claimed(const ClaimResult& c) {
  REQUIRE(c.verdict == ClaimVerdict::claimed);
  return indexes_of(c.events);
}

// REQUIREs busy with `retry_at`.
inline void require_busy(const ClaimResult& c, std::int64_t retry_at) {
  REQUIRE(c.verdict == ClaimVerdict::busy);
  REQUIRE(c.events.empty());
  REQUIRE(c.retry_at == retry_at);
}

// Session "s" and the claims of w1 and w2, to check that a call changed nothing.
inline Json picture(Store& store) {
  Json j = observe(store);
  for (const char* holder : {"w1", "w2"}) {
    Json list = Json::array();
    for (const auto& [i, a, e] : held(store, holder)) list.push_back(Json::array({i, a, e}));
    j[holder] = list;
  }
  return j;
}

// The whole work index, paged through find_work (and checked to be in page order): session ->
// at_ms (docs/semantics.md#work-discovery).
using Index = std::map<std::string, std::int64_t>;
inline Index work_index(Store& store) {
  Index out;
  std::optional<WorkCursor> after;
  std::optional<SessionWork> previous;
  while (true) {
    auto page = store.find_work({.after = after, .due_by_ms = std::nullopt, .limit = 1000});
    for (const auto& w : page.sessions) {
      if (previous)
        REQUIRE((previous->at_ms < w.at_ms ||
                 (previous->at_ms == w.at_ms && previous->session_id < w.session_id)));
      previous = w;
      REQUIRE(out.emplace(w.session_id, w.at_ms).second);
    }
    if (!page.next) return out;
    after = page.next;
  }
}

// The work index entry of `session` (nullopt: none).
inline std::optional<std::int64_t> entry(Store& store, const std::string& session) {
  auto index = work_index(store);
  auto it = index.find(session);
  if (it == index.end()) return std::nullopt;
  return it->second;
}

// Scheduled work: an event or child claimable from `at_ms`.
inline NewEvent at(NewEvent e, std::int64_t at_ms) {
  e.available_at_ms = at_ms;
  return e;
}
inline ChildEvent at(ChildEvent c, std::int64_t at_ms) {
  c.available_at_ms = at_ms;
  return c;
}

}  // namespace a2::conformance
