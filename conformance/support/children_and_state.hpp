// SPDX-License-Identifier: MIT
#pragma once

// Children for completions, checkpoint writes and read_state, for the completion,
// failure/redrive and snapshot scenarios (docs/semantics.md#scenarios).

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "a2/store.hpp"
#include "support/as_json.hpp"
#include "support/support.hpp"

namespace a2::conformance {

// A child event in lane `lane`.
inline ChildEvent child_in_lane(ChildEvent c, std::string lane) {
  c.lane = std::move(lane);
  return c;
}
// A child stored already processed.
inline ChildEvent settled_child(ChildEvent c) {
  c.settled = true;
  return c;
}

// One checkpoint write.
inline SnapshotWrite snap(std::int64_t index, Json state, std::set<std::int64_t> pins = {}) {
  return SnapshotWrite{
      .index = index, .state = std::move(state), .pin_event_indexes = std::move(pins)};
}

// read_state with optional bounds.
inline StateResult state(Store& store, const std::string& session, const std::string& reducer,
                         std::optional<std::int64_t> through_index = std::nullopt,
                         std::optional<std::int64_t> snapshot_through_index = std::nullopt) {
  return store.read_state(
      session, reducer,
      {.through_index = through_index, .snapshot_through_index = snapshot_through_index});
}

// The index of the checkpoint a read_state result starts from, if any.
inline std::optional<std::int64_t> snapshot_index(const StateResult& r) {
  if (!r.snapshot) return std::nullopt;
  return r.snapshot->index;
}

// Settles events by appending them already processed: `n` settled events of type "t".
inline std::vector<NewEvent> settled_evs(int n) { return std::vector<NewEvent>(n, settled(ev())); }

}  // namespace a2::conformance
