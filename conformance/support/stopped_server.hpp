// SPDX-License-Identifier: MIT
#pragma once

// Checks shared by the Redis and Postgres fault tests (test/redis/connections_test.cpp,
// test/postgres/connections_test.cpp), whose servers each test stops and continues its own way.

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "a2/store.hpp"

namespace a2::conformance {

// S258: with the server stopped by pause(), a complete_in_sessions call of three sessions fails
// whole (Unavailable, outcome unknown) within `timeout` (the store's command_timeout) plus
// `margin`; after resume() the same call answers every request completed with its child.
template <class Pause, class Resume>
void check_complete_in_sessions_stopped(Store& store, std::chrono::milliseconds timeout,
                                        std::chrono::milliseconds margin, Pause&& pause,
                                        Resume&& resume) {
  std::vector<CompleteManyRequest> requests;
  for (const std::string s : {"a", "b", "c"}) {
    NewEvent e;
    e.type = "t";
    (void)store.append(s, {e});
    auto claimed = store.claim_available({.session_id = s, .holder = "w1", .ttl_ms = 60000});
    REQUIRE(claimed.events.size() == 1);
    ChildEvent c;
    c.id = s + "1";
    c.type = "child";
    requests.push_back({.session_id = s,
                        .completions = {{.index = 1, .attempt = 1, .events = {c}}},
                        .claim_next = std::nullopt});
  }
  pause();
  const auto start = std::chrono::steady_clock::now();
  try {
    (void)store.complete_in_sessions(requests);
    FAIL("the call was answered by a stopped server");
  } catch (const Unavailable& e) {
    INFO(e.what());
    CHECK(e.outcome_unknown());
  }
  CHECK(std::chrono::steady_clock::now() - start <= timeout + margin);
  resume();
  auto outcomes = store.complete_in_sessions(requests);
  REQUIRE(outcomes.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    INFO("request " << i);
    REQUIRE(outcomes[i].ok());
    REQUIRE(outcomes[i].value().results.at(0).verdict == CompleteVerdict::completed);
    CHECK(outcomes[i].value().results.at(0).events.at(0).id == requests[i].session_id + "1");
    CHECK(store.read(requests[i].session_id).size() == 2);
  }
}

}  // namespace a2::conformance
