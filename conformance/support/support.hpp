// SPDX-License-Identifier: MIT
#pragma once

// Helpers shared by the conformance scenarios (and the backend-specific tests).

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "a2/store.hpp"
#include "harness.hpp"

namespace a2::conformance {

// An unsettled event of type `type` (no id: the store draws g1, g2, ...).
inline NewEvent ev(std::string type = "t", Json payload = nullptr) {
  NewEvent e;
  e.type = std::move(type);
  e.payload = std::move(payload);
  return e;
}
// An unsettled event with a caller-supplied id.
inline NewEvent ev_id(std::string id, std::string type = "t", Json payload = nullptr) {
  NewEvent e = ev(std::move(type), std::move(payload));
  e.id = std::move(id);
  return e;
}
inline NewEvent in_lane(NewEvent e, std::string lane) {
  e.lane = std::move(lane);
  return e;
}
inline NewEvent settled(NewEvent e) {
  e.settled = true;
  return e;
}
inline NewEvent caused(NewEvent e, std::int64_t index, std::int64_t attempt) {
  e.cause = EventCause{index, attempt};
  return e;
}
inline ChildEvent child(std::string id, std::string type = "child", Json payload = nullptr) {
  ChildEvent c;
  c.id = std::move(id);
  c.type = std::move(type);
  c.payload = std::move(payload);
  return c;
}

// n unsettled events of type "t" without ids.
inline std::vector<NewEvent> evs(int n) { return std::vector<NewEvent>(n, ev()); }

template <class E>
std::vector<std::int64_t> indexes_of(const std::vector<E>& events) {
  std::vector<std::int64_t> out;
  for (const auto& e : events) out.push_back(e.index);
  return out;
}
inline std::vector<std::int64_t> range(std::int64_t first, std::int64_t last) {
  std::vector<std::int64_t> out;
  for (auto i = first; i <= last; ++i) out.push_back(i);
  return out;
}

inline ClaimResult claim(Store& store, const std::string& session = "s",
                         const std::string& holder = "w1",
                         std::vector<std::int64_t> exclude = {}) {
  return store.claim_available({.session_id = session,
                                .holder = holder,
                                .ttl_ms = kTtl,
                                .expires_at_ms = std::nullopt,
                                .exclude_indexes = std::move(exclude)});
}
inline CompleteResult complete(Store& store, const std::string& session, std::int64_t index,
                               std::int64_t attempt, std::vector<ChildEvent> children = {}) {
  return store.complete_attempt(
      {.session_id = session, .index = index, .attempt = attempt, .events = std::move(children)});
}
inline FailResult fail(Store& store, const std::string& session, std::int64_t index,
                       std::int64_t attempt, std::int64_t max_failures = 3,
                       const std::string& error = "boom") {
  return store.fail_attempt({.session_id = session,
                             .index = index,
                             .attempt = attempt,
                             .error = error,
                             .max_failures = max_failures});
}
inline RedriveResult redrive(Store& store, const std::string& session, std::int64_t index,
                             RedriveAction action) {
  return store.redrive({.session_id = session, .index = index, .action = action});
}
inline ClearResult clear(Store& store, const std::string& session = "s",
                         std::optional<std::int64_t> if_last_index = std::nullopt,
                         std::optional<EventCause> cause = std::nullopt) {
  return store.clear({.session_id = session, .if_last_index = if_last_index, .cause = cause});
}
// The pending flag without changing anything (an empty append writes nothing).
inline bool has_pending(Store& store, const std::string& session = "s") {
  return store.append(session, {}).has_pending;
}
// The stored row at `index` (REQUIREs that it is readable).
inline StoredEvent row(Store& store, const std::string& session, std::int64_t index) {
  auto rows = store.read(session, {.after_index = index - 1, .through_index = index});
  REQUIRE(rows.size() == 1);
  return rows.front();
}

// Everything observable about a stored event, as JSON (for whole-state comparisons).
inline Json to_json(const StoredEvent& e) {
  auto opt = [](const auto& o) -> Json {
    if (!o) return nullptr;
    return Json(*o);
  };
  Json j = {{"session_id", e.session_id},
            {"index", e.index},
            {"id", e.id},
            {"type", e.type},
            {"payload", e.payload},
            {"created_at", e.created_at},
            {"lane", opt(e.lane)},
            {"processed_at", opt(e.processed_at)},
            {"processed_by_attempt", opt(e.processed_by_attempt)},
            {"returned_event_ids", opt(e.returned_event_ids)},
            {"first_claimed_at", opt(e.first_claimed_at)},
            {"last_claimed_at", opt(e.last_claimed_at)},
            {"attempt_count", e.attempt_count},
            {"claim_holder", opt(e.claim_holder)},
            {"claim_expires_at", opt(e.claim_expires_at)},
            {"failure_count", e.failure_count},
            {"last_failed_at", opt(e.last_failed_at)},
            {"last_failed_attempt", opt(e.last_failed_attempt)},
            {"last_error", opt(e.last_error)},
            {"failed_at", opt(e.failed_at)},
            {"available_at", opt(e.available_at)},
            {"clear_index", opt(e.clear_index)}};
  j["cause"] = e.cause ? Json{{"index", e.cause->index}, {"attempt", e.cause->attempt}} : Json();
  return j;
}

// A read-only picture of a session: its readable rows, dead letters and pending flag. Two equal
// observations mean nothing observable changed.
inline Json observe(Store& store, const std::string& session = "s") {
  Json rows = Json::array();
  for (const auto& e : store.read(session)) rows.push_back(to_json(e));
  Json dead = Json::array();
  for (const auto& e : store.dead_letters(session)) dead.push_back(e.index);
  return {{"rows", rows}, {"dead_letters", dead}, {"has_pending", has_pending(store, session)}};
}

// REQUIREs that `f` throws an a2::Error with `code`.
template <class F>
void require_error(ErrorCode code, F&& f) {
  try {
    f();
  } catch (const Error& e) {
    INFO("message: " << e.what());
    REQUIRE(to_string(e.code()) == to_string(code));
    return;
  }
  FAIL("expected a2::Error " << to_string(code) << ", nothing was thrown");
}

// Runs `call`, which must fail with Unavailable before anything was sent (outcome known, the
// message saying "nothing was sent"), as a call that waited for a connection or a place in
// flight until its timeout does; returns how long it took.
template <class F>
std::chrono::steady_clock::duration require_unsent(F&& call) {
  const auto start = std::chrono::steady_clock::now();
  try {
    call();
    FAIL("the call was answered; it should have failed with nothing sent");
  } catch (const Unavailable& e) {
    INFO(e.what());
    CHECK_FALSE(e.outcome_unknown());
    CHECK(std::string(e.what()).find("nothing was sent") != std::string::npos);
  }
  return std::chrono::steady_clock::now() - start;
}

}  // namespace a2::conformance
