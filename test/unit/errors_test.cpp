// SPDX-License-Identifier: MIT
// Error codes, the error classes and the wire words of every verdict enum.

#include <stdexcept>
#include <string>
#include <type_traits>

#include <catch2/catch.hpp>

#include "a2/errors.hpp"
#include "a2/options.hpp"
#include "a2/results.hpp"

namespace {

// The wire words are constexpr: usable in static_assert.
static_assert(a2::to_string(a2::ErrorCode::session_cleared) == "session_cleared");
static_assert(a2::to_string(a2::FailVerdict::dead_lettered) == "dead_lettered");
static_assert(std::is_base_of_v<std::runtime_error, a2::Error>);

}  // namespace

TEST_CASE("to_string(ErrorCode) returns the contract's code words", "[errors]") {
  CHECK(a2::to_string(a2::ErrorCode::invalid_argument) == "invalid_argument");
  CHECK(a2::to_string(a2::ErrorCode::store_unavailable) == "store_unavailable");
  CHECK(a2::to_string(a2::ErrorCode::partial_duplicate_batch) == "partial_duplicate_batch");
  CHECK(a2::to_string(a2::ErrorCode::superseded_attempt) == "superseded_attempt");
  CHECK(a2::to_string(a2::ErrorCode::session_cleared) == "session_cleared");
}

TEST_CASE("Error::retryable is true only for store_unavailable", "[errors]") {
  CHECK_FALSE(a2::Error(a2::ErrorCode::invalid_argument, "m").retryable());
  CHECK(a2::Error(a2::ErrorCode::store_unavailable, "m").retryable());
  CHECK_FALSE(a2::Error(a2::ErrorCode::partial_duplicate_batch, "m").retryable());
  CHECK_FALSE(a2::Error(a2::ErrorCode::superseded_attempt, "m").retryable());
  CHECK_FALSE(a2::Error(a2::ErrorCode::session_cleared, "m").retryable());
}

TEST_CASE("Error subclasses carry their code and message", "[errors]") {
  SECTION("InvalidArgument") {
    a2::InvalidArgument e("a2 append: bad");
    CHECK(e.code() == a2::ErrorCode::invalid_argument);
    CHECK_FALSE(e.retryable());
    CHECK(std::string(e.what()) == "a2 append: bad");
  }
  SECTION("Unavailable, outcome known by default") {
    a2::Unavailable e("a2 redis claim_available: connection refused");
    CHECK(e.code() == a2::ErrorCode::store_unavailable);
    CHECK(e.retryable());
    CHECK_FALSE(e.outcome_unknown());
  }
  SECTION("Unavailable with an unknown outcome") {
    a2::Unavailable e("a2 redis append: connection lost, outcome unknown", true);
    CHECK(e.code() == a2::ErrorCode::store_unavailable);
    CHECK(e.outcome_unknown());
  }
  SECTION("PartialDuplicateBatch") {
    CHECK(a2::PartialDuplicateBatch("m").code() == a2::ErrorCode::partial_duplicate_batch);
  }
  SECTION("SupersededAttempt") {
    CHECK(a2::SupersededAttempt("m").code() == a2::ErrorCode::superseded_attempt);
  }
  SECTION("SessionCleared") {
    CHECK(a2::SessionCleared("m").code() == a2::ErrorCode::session_cleared);
  }
}

TEST_CASE("Error subclasses are caught as a2::Error and std::runtime_error", "[errors]") {
  try {
    throw a2::SessionCleared("a2 append: scheduled work from event 3 was cleared");
  } catch (const a2::Error& e) {
    CHECK(e.code() == a2::ErrorCode::session_cleared);
  }
  CHECK_THROWS_AS(throw a2::Unavailable("m"), std::runtime_error);
  CHECK_THROWS_AS(throw a2::SupersededAttempt("m"), a2::Error);
}

TEST_CASE("to_string of every verdict enum returns its wire word", "[verdicts]") {
  SECTION("ClaimVerdict") {
    CHECK(a2::to_string(a2::ClaimVerdict::claimed) == "claimed");
    CHECK(a2::to_string(a2::ClaimVerdict::busy) == "busy");
    CHECK(a2::to_string(a2::ClaimVerdict::settled) == "settled");
  }
  SECTION("CompleteVerdict") {
    CHECK(a2::to_string(a2::CompleteVerdict::completed) == "completed");
    CHECK(a2::to_string(a2::CompleteVerdict::superseded) == "superseded");
  }
  SECTION("FailVerdict") {
    CHECK(a2::to_string(a2::FailVerdict::failed) == "failed");
    CHECK(a2::to_string(a2::FailVerdict::dead_lettered) == "dead_lettered");
    CHECK(a2::to_string(a2::FailVerdict::superseded) == "superseded");
  }
  SECTION("RedriveAction") {
    CHECK(a2::to_string(a2::RedriveAction::retry) == "retry");
    CHECK(a2::to_string(a2::RedriveAction::skip) == "skip");
  }
}

TEST_CASE("result defaults are the no-op verdicts", "[verdicts]") {
  CHECK(a2::ClaimResult{}.verdict == a2::ClaimVerdict::settled);
  CHECK(a2::CompleteResult{}.verdict == a2::CompleteVerdict::superseded);
  CHECK(a2::FailResult{}.verdict == a2::FailVerdict::superseded);
  CHECK(a2::FailRequest{}.max_failures == 3);
  CHECK(a2::RedriveRequest{}.action == a2::RedriveAction::retry);
}
