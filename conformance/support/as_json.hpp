// SPDX-License-Identifier: MIT
#pragma once

// Stores' results as JSON, for comparing reads of different shapes and whole-store pictures.
// Defined once here for every scenario.

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

}  // namespace a2::conformance
