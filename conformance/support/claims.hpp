// SPDX-License-Identifier: MIT
#pragma once

// Setting up events and claiming or renewing them, for the append, read and claim scenarios
// (docs/semantics.md#scenarios).

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "a2/store.hpp"
#include "harness.hpp"
#include "support/support.hpp"

namespace a2::conformance {

// Appends a set-up batch whose result the scenario does not inspect; returns the new indexes.
inline std::vector<std::int64_t> given(Store& store, std::vector<NewEvent> events,
                                       const std::string& session = "s") {
  auto r = store.append(session, std::move(events));
  return indexes_of(r.events);
}

// REQUIREs that `e` carries no work metadata yet: a freshly appended, unsettled row.
inline void require_unworked(const StoredEvent& e) {
  CHECK_FALSE(e.processed_at.has_value());
  CHECK_FALSE(e.processed_by_attempt.has_value());
  CHECK_FALSE(e.returned_event_ids.has_value());
  CHECK_FALSE(e.first_claimed_at.has_value());
  CHECK_FALSE(e.last_claimed_at.has_value());
  CHECK(e.attempt_count == 0);
  CHECK_FALSE(e.claim_holder.has_value());
  CHECK_FALSE(e.claim_expires_at.has_value());
  CHECK(e.failure_count == 0);
  CHECK_FALSE(e.last_failed_at.has_value());
  CHECK_FALSE(e.last_failed_attempt.has_value());
  CHECK_FALSE(e.last_error.has_value());
  CHECK_FALSE(e.failed_at.has_value());
  CHECK_FALSE(e.clear_index.has_value());
}

template <class E>
std::vector<std::string> ids_of(const std::vector<E>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back(e.id);
  return out;
}

inline std::vector<std::int64_t> sorted(std::vector<std::int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// claim_available with an absolute lease end.
inline ClaimResult claim_until(Store& store, std::int64_t expires_at_ms,
                               const std::string& session = "s", const std::string& holder = "w1",
                               std::vector<std::int64_t> exclude = {}) {
  return store.claim_available({.session_id = session,
                                .holder = holder,
                                .ttl_ms = std::nullopt,
                                .expires_at_ms = expires_at_ms,
                                .exclude_indexes = std::move(exclude)});
}

// renew_claims with the default lease (kTtl from now).
inline RenewResult renew(Store& store, std::vector<ClaimRef> claims,
                         const std::string& holder = "w1", const std::string& session = "s") {
  return store.renew_claims({.session_id = session,
                             .holder = holder,
                             .claims = std::move(claims),
                             .ttl_ms = kTtl,
                             .expires_at_ms = std::nullopt});
}

// renew_claims with an absolute lease end.
inline RenewResult renew_until(Store& store, std::vector<ClaimRef> claims,
                               std::int64_t expires_at_ms, const std::string& holder = "w1",
                               const std::string& session = "s") {
  return store.renew_claims({.session_id = session,
                             .holder = holder,
                             .claims = std::move(claims),
                             .ttl_ms = std::nullopt,
                             .expires_at_ms = expires_at_ms});
}

}  // namespace a2::conformance
