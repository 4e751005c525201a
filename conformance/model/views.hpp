// SPDX-License-Identifier: MIT
#pragma once

// The model checks' views of results as JSON (model_check.cpp, concurrent_check.cpp): what two
// stores must agree on. Clear markers take their ids from each store's IdSource, which backends
// may consume at different moments (docs/semantics.md#Q27), so markers are compared by everything
// but their id (shown as "<marker>"); every other id is supplied by the checks or scripted alike.

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "a2/store.hpp"
#include "support/support.hpp"

namespace a2::conformance::model {

inline std::uint64_t env_u64(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  return std::strtoull(v, nullptr, 10);
}

// A check's runs: the first run's seed (A2_MODEL_SEED, else a fresh one, printed by the check)
// and how many runs (A2_MODEL_RUNS, else `fallback_runs`); run r takes seed + r.
struct Runs {
  std::uint64_t seed;
  std::uint64_t count;
};
inline Runs runs_from_env(std::uint64_t fallback_runs) {
  const auto fresh =
      static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return {env_u64("A2_MODEL_SEED", fresh), env_u64("A2_MODEL_RUNS", fallback_runs)};
}

// Runs body(seed) for each of the check's runs (runs_from_env), first printing "<what>: seed S,
// <size> (reproduce with A2_MODEL_SEED=S A2_MODEL_RUNS=1)"; a failure in body names the seed.
template <class Body>
void for_each_run(const std::string& what, const std::string& size, std::uint64_t fallback_runs,
                  Body&& body) {
  const Runs runs = runs_from_env(fallback_runs);
  for (std::uint64_t r = 0; r < runs.count; ++r) {
    const std::uint64_t seed = runs.seed + r;
    const std::string reproduce = "A2_MODEL_SEED=" + std::to_string(seed) + " A2_MODEL_RUNS=1";
    std::cout << what << ": seed " << seed << ", " << size << " (reproduce with " << reproduce
              << ")" << std::endl;
    INFO("seed " << seed << " (" << reproduce << ")");
    body(seed);
  }
}

// An operation's outcome as JSON: its result, or the code of the a2::Error it threw.
template <class F>
Json outcome(F&& f) {
  try {
    return Json{{"ok", f()}};
  } catch (const Error& e) {
    return Json{{"error", std::string(to_string(e.code()))}};
  }
}

inline Json rows_json(const std::vector<StoredEvent>& rows) {
  Json out = Json::array();
  for (const auto& e : rows) {
    Json j = to_json(e);
    if (e.type == kClearEventType) j["id"] = "<marker>";
    out.push_back(std::move(j));
  }
  return out;
}

// Events and read_state results, markers' ids masked the same way (not support/as_json.hpp's
// views, which keep every id).
inline Json masked_events_json(const std::vector<Event>& events) {
  Json out = Json::array();
  for (const auto& e : events)
    out.push_back({{"index", e.index},
                   {"id", e.type == kClearEventType ? std::string("<marker>") : e.id},
                   {"type", e.type},
                   {"payload", e.payload},
                   {"created_at", e.created_at},
                   {"session_id", e.session_id}});
  return out;
}
inline Json masked_state_json(const StateResult& s) {
  return {{"head_index", s.head_index ? Json(*s.head_index) : Json()},
          {"snapshot",
           s.snapshot ? Json{{"index", s.snapshot->index}, {"state", s.snapshot->state}} : Json()},
          {"events", masked_events_json(s.events)},
          {"clear_index", s.clear_index ? Json(*s.clear_index) : Json()}};
}

// observe() of support.hpp (rows, dead letters, has_pending) with markers' ids masked.
inline Json masked_observe(Store& store, const std::string& session) {
  Json o = observe(store, session);
  for (auto& r : o["rows"])
    if (r["type"] == kClearEventType) r["id"] = "<marker>";
  return o;
}

inline Json claim_json(const ClaimResult& res) {
  return Json{{"verdict", std::string(to_string(res.verdict))},
              {"events", rows_json(res.events)},
              {"retry_at", res.verdict == ClaimVerdict::busy ? res.retry_at : 0}};
}

inline Json complete_json(const CompleteResult& res) {
  Json j = {{"verdict", std::string(to_string(res.verdict))}, {"events", rows_json(res.events)}};
  if (res.next) j["next"] = claim_json(*res.next);
  return j;
}

inline Json complete_many_json(const CompleteManyResult& res) {
  Json results = Json::array();
  for (const auto& c : res.results) results.push_back(complete_json(c));
  Json j = {{"results", results}};
  if (res.next) j["next"] = claim_json(*res.next);
  return j;
}

inline Json page_json(const WorkPage& page) {
  Json sessions = Json::array();
  for (const auto& w : page.sessions) sessions.push_back(Json::array({w.session_id, w.at_ms}));
  return Json{
      {"sessions", sessions},
      {"next", page.next ? Json::array({page.next->session_id, page.next->at_ms}) : Json()}};
}

}  // namespace a2::conformance::model
