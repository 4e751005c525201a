// SPDX-License-Identifier: MIT
// a2/detail/contract_errors.hpp: each contract error has its type and code, and its message is
// "a2 <backend> <operation>: " followed by the same words on every backend.

#include "a2/detail/contract_errors.hpp"

#include <catch2/catch.hpp>
#include <functional>
#include <string>
#include <vector>

namespace {

using a2::ErrorCode;
using a2::detail::ErrorSite;

struct Case {
  const char* name;
  ErrorCode code;
  std::function<void(ErrorSite)> raise;
};

std::string message_of(const Case& c, ErrorSite site, ErrorCode* code) {
  try {
    c.raise(site);
  } catch (const a2::Error& e) {
    *code = e.code();
    return e.what();
  }
  FAIL(c.name << " threw nothing");
  return {};
}

TEST_CASE("contract errors: code, backend and operation prefix, same words on every backend",
          "[unit][errors]") {
  using namespace a2::detail;
  const std::vector<Case> cases = {
      {"no_event", ErrorCode::invalid_argument, [](ErrorSite s) { throw_no_event(s, "s1", 7); }},
      {"attempt_superseded", ErrorCode::superseded_attempt,
       [](ErrorSite s) { throw_attempt_superseded(s, "s1", 7, 2); }},
      {"scheduled_work_cleared", ErrorCode::session_cleared,
       [](ErrorSite s) { throw_scheduled_work_cleared(s, "s1", 3); }},
      {"id_owned_elsewhere", ErrorCode::partial_duplicate_batch,
       [](ErrorSite s) { throw_id_owned_elsewhere(s, "x"); }},
      {"some_ids_stored", ErrorCode::partial_duplicate_batch,
       [](ErrorSite s) { throw_some_ids_stored(s, "s1", 1, 2); }},
      {"replay_mismatch", ErrorCode::partial_duplicate_batch,
       [](ErrorSite s) { throw_replay_mismatch(s, "s1"); }},
      {"completion_mismatch", ErrorCode::partial_duplicate_batch,
       [](ErrorSite s) { throw_completion_mismatch(s, "s1", 7, 2); }},
      {"child_id_taken", ErrorCode::partial_duplicate_batch,
       [](ErrorSite s) { throw_child_id_taken(s, "s1", 7, "c"); }},
      {"marker_id_taken", ErrorCode::partial_duplicate_batch,
       [](ErrorSite s) { throw_marker_id_taken(s, "g1"); }},
      {"id_held_by_cleared_work", ErrorCode::store_unavailable,
       [](ErrorSite s) { throw_id_held_by_cleared_work(s, "s1"); }},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    std::string words;
    for (const char* backend : {"memory", "redis", "postgres"}) {
      const std::string prefix = std::string("a2 ") + backend + " append: ";
      ErrorCode code = ErrorCode::store_unavailable;
      const std::string message = message_of(c, ErrorSite{backend, "append"}, &code);
      INFO(message);
      REQUIRE(code == c.code);
      REQUIRE(message.rfind(prefix, 0) == 0);
      const std::string rest = message.substr(prefix.size());
      REQUIRE_FALSE(rest.empty());
      if (words.empty()) words = rest;
      REQUIRE(rest == words);  // The same words whatever the backend.
    }
  }
}

TEST_CASE("contract errors name the facts they are given", "[unit][errors]") {
  using namespace a2::detail;
  try {
    throw_attempt_superseded(ErrorSite{"memory", "clear"}, "sess", 12, 5);
  } catch (const a2::SupersededAttempt& e) {
    const std::string message = e.what();
    REQUIRE(message.find("12") != std::string::npos);
    REQUIRE(message.find("5") != std::string::npos);
    REQUIRE(message.find("'sess'") != std::string::npos);
  }
  REQUIRE_THROWS_AS(throw_no_event(ErrorSite{"redis", "append"}, "s", 1), a2::InvalidArgument);
  REQUIRE_THROWS_AS(throw_marker_id_taken(ErrorSite{"redis", "clear"}, "g"),
                    a2::PartialDuplicateBatch);
  REQUIRE_THROWS_AS(throw_id_held_by_cleared_work(ErrorSite{"redis", "append"}, "s"),
                    a2::Unavailable);
}

}  // namespace
