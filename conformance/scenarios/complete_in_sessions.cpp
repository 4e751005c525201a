// SPDX-License-Identifier: MIT
// Conformance scenarios 253-257 (docs/semantics.md#complete_in_sessions-scenarios):
// complete_in_sessions, the complete_attempts calls of several sessions in one round trip.
// Each request's outcome is compared with the same call made alone on a second store of the
// same backend, set up alike.

#include <catch2/catch.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "harness.hpp"
#include "support/claims.hpp"
#include "support/recorder.hpp"
#include "support/support.hpp"

namespace a2::conformance {
namespace {

const std::vector<std::string> kSessions = {"a", "b", "c"};

bool server() { return backend().name() != "memory"; }

ClaimNext next_for(std::int64_t max_events) {
  return {.holder = "w1", .ttl_ms = kTtl, .expires_at_ms = std::nullopt, .max_events = max_events};
}

// Each of a, b, c: three events, the first two claimed by w1 (attempt 1); then 100 ms pass.
void setup(Fixture& f) {
  for (const auto& s : kSessions) {
    given(*f, evs(3), s);
    auto two = f->claim_available(
        {.session_id = s, .holder = "w1", .ttl_ms = kTtl, .expires_at_ms = std::nullopt,
         .exclude_indexes = {}, .max_events = 2});
    REQUIRE(indexes_of(two.events) == std::vector<std::int64_t>{1, 2});
  }
  f.clock->advance(100);
}

// The requests of S253: a completes 1 and 2 with children and claims the next two; b completes
// 1 without children; c completes 2 with a child and claims the next one.
std::vector<CompleteManyRequest> s253_requests() {
  return {
      {.session_id = "a",
       .completions = {{1, 1, {child("a1"), child("a2")}}, {2, 1, {}}},
       .claim_next = next_for(2)},
      {.session_id = "b", .completions = {{1, 1, {}}}, .claim_next = std::nullopt},
      {.session_id = "c", .completions = {{2, 1, {child("c1")}}}, .claim_next = next_for(1)},
  };
}

Json rows_json(const std::vector<StoredEvent>& rows) {
  Json out = Json::array();
  for (const auto& r : rows) out.push_back(to_json(r));
  return out;
}

// Everything a CompleteManyResult says, as JSON.
Json result_json(const CompleteManyResult& r) {
  Json results = Json::array();
  for (const auto& c : r.results)
    results.push_back({{"verdict", c.verdict == CompleteVerdict::completed ? "completed" : "superseded"},
                       {"events", rows_json(c.events)}});
  Json next = nullptr;
  if (r.next)
    next = {{"verdict", std::string(to_string(r.next->verdict))},
            {"events", rows_json(r.next->events)},
            {"retry_at", r.next->retry_at}};
  return {{"results", results}, {"next", next}};
}

// REQUIREs that `o` failed with `code`.
void require_outcome_error(const CompleteManyOutcome& o, ErrorCode code) {
  REQUIRE_FALSE(o.ok());
  REQUIRE(o.error);
  try {
    std::rethrow_exception(o.error);
  } catch (const Error& e) {
    INFO("message: " << e.what());
    REQUIRE(to_string(e.code()) == to_string(code));
    return;
  }
}

// REQUIREs that `outcome`, of `request` in a complete_in_sessions call on `f`, is the result the
// same request gets alone on `alone` (set up alike), and that its session reads the same on both.
void require_as_alone(Fixture& f, Fixture& alone, const CompleteManyRequest& request,
                      CompleteManyOutcome& outcome) {
  INFO("session " << request.session_id);
  REQUIRE(outcome.ok());
  CHECK(result_json(outcome.value()) == result_json(alone->complete_attempts(request)));
  CHECK(observe(*f, request.session_id) == observe(*alone, request.session_id));
}

}  // namespace

TEST_CASE("complete_in_sessions answers each request as its complete_attempts call alone",
          "[complete_in_sessions][S253]") {
  auto f = fresh();
  auto alone = fresh();
  setup(f);
  setup(alone);
  auto outcomes = f->complete_in_sessions(s253_requests());
  REQUIRE(outcomes.size() == 3);
  const auto requests = s253_requests();
  for (std::size_t i = 0; i < requests.size(); ++i)
    require_as_alone(f, alone, requests[i], outcomes[i]);
  // What the calls did: a's children at 4 and 5, then claimed 3 and 4; c's child at 4, claimed 3.
  const auto& a = outcomes[0].value();
  REQUIRE(indexes_of(a.results.at(0).events) == std::vector<std::int64_t>{4, 5});
  REQUIRE(a.results.at(1).verdict == CompleteVerdict::completed);
  REQUIRE(a.next.has_value());
  REQUIRE(indexes_of(a.next->events) == std::vector<std::int64_t>{3, 4});
  REQUIRE_FALSE(outcomes[1].value().next.has_value());
  REQUIRE(indexes_of(outcomes[2].value().next->events) == std::vector<std::int64_t>{3});
}

TEST_CASE("a refused request changes nothing of its own; the others are stored",
          "[complete_in_sessions][S254]") {
  auto f = fresh();
  auto alone = fresh();
  setup(f);
  setup(alone);
  (void)f->append("d", {ev_id("taken")});
  auto requests = s253_requests();
  requests[1].completions[0].events = {child("b1"), child("taken")};
  const Json b_before = observe(*f, "b");
  auto outcomes = f->complete_in_sessions(requests);
  REQUIRE(outcomes.size() == 3);
  require_outcome_error(outcomes[1], ErrorCode::partial_duplicate_batch);
  REQUIRE_THROWS_AS(outcomes[1].value(), PartialDuplicateBatch);
  CHECK(observe(*f, "b") == b_before);
  CHECK(f->read("b").size() == 3);  // No child b1.
  for (std::size_t i : {std::size_t{0}, std::size_t{2}})
    require_as_alone(f, alone, requests[i], outcomes[i]);
  // The refused request alone is refused alike.
  require_error(ErrorCode::partial_duplicate_batch,
                [&] { (void)f->complete_attempts(requests[1]); });
}

TEST_CASE("a retry of a whole call replays every request; claim_next does not claim again",
          "[complete_in_sessions][S255]") {
  auto f = fresh();
  setup(f);
  auto first = f->complete_in_sessions(s253_requests());
  auto again = f->complete_in_sessions(s253_requests());
  REQUIRE(again.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    INFO("request " << i);
    REQUIRE(again[i].ok());
    const auto& was = first[i].value().results;
    const auto& now = again[i].value().results;
    REQUIRE(now.size() == was.size());
    for (std::size_t j = 0; j < was.size(); ++j) {
      CHECK(now[j].verdict == CompleteVerdict::completed);
      CHECK(indexes_of(now[j].events) == indexes_of(was[j].events));
      CHECK(ids_of(now[j].events) == ids_of(was[j].events));
    }
  }
  // a's first call claimed 3 and 4; they are held, so the retry's claim takes 5 (its last
  // child), never 3 or 4 again.
  REQUIRE(again[0].value().next.has_value());
  CHECK(indexes_of(again[0].value().next->events) == std::vector<std::int64_t>{5});
  // c's first call claimed 3; its child at 4 is left for the retry's claim.
  CHECK(indexes_of(again[2].value().next->events) == std::vector<std::int64_t>{4});
  // b was completed without children or claim: nothing more.
  CHECK(f->read("b").size() == 3);
}

TEST_CASE("complete_in_sessions refuses bad calls whole, before any I/O",
          "[complete_in_sessions][S256]") {
  auto recorder = std::make_shared<Recorder>();
  auto f = fresh(StoreSettings{.observe = {.observer = recorder}});
  setup(f);
  Json before = Json::array();
  for (const auto& s : kSessions) before.push_back(observe(*f, s));
  const auto unchanged = [&] {
    Json now = Json::array();
    for (const auto& s : kSessions) now.push_back(observe(*f, s));
    CHECK(now == before);
  };
  const auto refused = [&](std::vector<CompleteManyRequest> requests) {
    recorder->clear();
    require_error(ErrorCode::invalid_argument,
                  [&] { (void)f->complete_in_sessions(std::move(requests)); });
    const auto r = recorder->last();
    CHECK(r.operation == "complete_in_sessions");
    CHECK(r.round_trips == 0);
    unchanged();
  };
  SECTION("a session named twice") {
    auto q = s253_requests();
    q[1].session_id = "a";
    refused(q);
  }
  SECTION("a child id in two requests") {
    auto q = s253_requests();
    q[2].completions[0].events = {child("a1")};
    refused(q);
  }
  SECTION("a child id twice in one request") {
    auto q = s253_requests();
    q[0].completions[1].events = {child("a1")};
    refused(q);
  }
  SECTION("more than 32 requests") {
    std::vector<CompleteManyRequest> q;
    for (int i = 0; i < 33; ++i)
      q.push_back({.session_id = "x" + std::to_string(i), .completions = {{1, 1, {}}}});
    refused(q);
  }
  SECTION("more than 10,000 children in all") {
    auto q = s253_requests();
    std::vector<ChildEvent> many_a, many_c;
    for (int i = 0; i < 5000; ++i) many_a.push_back(child("ma" + std::to_string(i)));
    for (int i = 0; i < 5001; ++i) many_c.push_back(child("mc" + std::to_string(i)));
    q[0].completions[0].events = std::move(many_a);
    q[2].completions[0].events = std::move(many_c);
    refused(q);
  }
  SECTION("one invalid request among valid ones") {
    auto q = s253_requests();
    q[1].completions.push_back({1, 1, {}});  // Index 1 listed twice.
    refused(q);
    q = s253_requests();
    q[2].session_id = "";
    refused(q);
  }
  SECTION("no requests: no outcomes, no I/O") {
    recorder->clear();
    REQUIRE(f->complete_in_sessions({}).empty());
    CHECK(recorder->last().round_trips == 0);
    unchanged();
  }
}

TEST_CASE("complete_in_sessions is one round trip and reports each session's transitions",
          "[complete_in_sessions][S257][O4][O5]") {
  auto recorder = std::make_shared<Recorder>();
  auto f = fresh(StoreSettings{.observe = {.observer = recorder}});
  setup(f);
  // Warm: the script loaded, a connection open.
  (void)f->complete_in_sessions({{.session_id = "warm", .completions = {}, .claim_next = next_for(1)},
                                 {.session_id = "warm2", .completions = {}, .claim_next = next_for(1)}});
  recorder->clear();
  auto outcomes = f->complete_in_sessions(s253_requests());
  for (const auto& o : outcomes) REQUIRE(o.ok());
  const auto ops = recorder->operations();
  REQUIRE(ops.size() == 1);
  CHECK(ops[0].operation == "complete_in_sessions");
  CHECK(ops[0].outcome == "ok");
  CHECK(ops[0].round_trips == (server() ? 1 : 0));
  std::vector<std::string> seen;
  for (const auto& w : recorder->work())
    seen.push_back(w.session_id + ":" + std::string(to_string(w.transition)) + ":" +
                   std::to_string(w.index) + "/" + std::to_string(w.attempt));
  CHECK(seen == std::vector<std::string>{"a:completed:1/1", "a:completed:2/1", "a:claimed:3/1",
                                         "a:claimed:4/1", "b:completed:1/1", "c:completed:2/1",
                                         "c:claimed:3/1"});
  // A request with nothing to do is answered without I/O, as complete_attempts answers it.
  recorder->clear();
  auto empty = f->complete_in_sessions({{.session_id = "b", .completions = {}}});
  REQUIRE(empty.size() == 1);
  REQUIRE(empty[0].ok());
  CHECK(empty[0].value().results.empty());
  CHECK(recorder->last().round_trips == 0);
}

}  // namespace a2::conformance
