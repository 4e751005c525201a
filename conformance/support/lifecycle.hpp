// SPDX-License-Identifier: MIT
#pragma once

// Reclaim loops, batches with ids, laned children and feed collection, for the clear, reclaim,
// concurrency and feed/lifecycle scenarios (docs/semantics.md#scenarios).

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "a2/store.hpp"
#include "harness.hpp"
#include "support/support.hpp"

namespace a2::conformance {

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

}  // namespace a2::conformance
