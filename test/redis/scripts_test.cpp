// SPDX-License-Identifier: MIT
// Scripts run by SHA: the text is sent only after the server answered NOSCRIPT
// (docs/redis-layout.md#scripts).
#include <algorithm>
#include <sstream>

#include "support.hpp"
#include "support/claims.hpp"

namespace a2::redis_test {
namespace {
using namespace a2::conformance;

TEST_CASE("operations load a script only after NOSCRIPT and never send EVAL", "[redis][scripts]") {
  auto f = open_fixture(unique_prefix("noscript"));
  Raw raw;
  (void)f->append("s", evs(1));  // Scripts cached on the server by now.
  REQUIRE(raw.get({"SCRIPT", "FLUSH"}) == "OK");
  REQUIRE(raw.get({"CONFIG", "RESETSTAT"}) == "OK");
  // After the flush the operation still works: NOSCRIPT, SCRIPT LOAD, EVALSHA again.
  REQUIRE(f->append("s", evs(1)).events.at(0).index == 2);
  CHECK(calls_of(raw, "script|load") == 1);
  // Cached again: the next appends send only the SHA.
  (void)f->append("s", evs(1));
  (void)f->append("s", evs(1));
  CHECK(calls_of(raw, "script|load") == 1);
  // Another script is loaded once, on its own first use.
  REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);
  REQUIRE(claim(*f).verdict == ClaimVerdict::busy);
  CHECK(calls_of(raw, "script|load") == 2);
  CHECK(calls_of(raw, "eval") == 0);
  CHECK(calls_of(raw, "evalsha") >= 6);
  CHECK(f->read("s").size() == 4);
}

// The commands scripts issued since the last RESETSTAT: every cmdstat except the test's own
// (INFO, CONFIG RESETSTAT, SCRIPT LOAD) and the EVALSHA calls themselves.
long long script_commands(Raw& raw) {
  auto info = raw.get({"INFO", "commandstats"}).value_or("");
  std::istringstream lines(info);
  std::string line;
  long long total = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("cmdstat_", 0) != 0) continue;
    const auto colon = line.find(':');
    const std::string name = line.substr(8, colon - 8);
    if (name == "info" || name == "config|resetstat" || name == "script|load" || name == "evalsha")
      continue;
    const auto at = line.find("calls=", colon);
    total += std::stoll(line.substr(at + 6));
  }
  return total;
}

TEST_CASE("complete_attempts is one script call; its commands per batch size", "[redis][scripts]") {
  // docs/redis-layout.md#complete_attemptslua: k completions of one metadata chunk, each with one
  // unlaned child, then claim_next of one event: 10 + 2k for the completions and 4 + h for the
  // claim, h = the HMGET slices of the 8 columns of the ready events it reads (at most 1000
  // arguments each): the first chunk of max(8, 2 x max_events) = 8 of the 2k ready events
  // (docs/redis-layout.md#claim_availablelua), the 4 including the claim's work index command
  // (docs/redis-layout.md#work-index).
  for (const int k : {1, 10, 100}) {
    INFO("batch of " << k);
    auto f = open_fixture(unique_prefix("batch" + std::to_string(k)));
    Raw raw;
    // The script is in the server's cache afterwards (no NOSCRIPT below).
    (void)f->complete_attempts(
        {.session_id = "warm",
         .completions = {},
         .claim_next = ClaimNext{
             .holder = "w1", .ttl_ms = kTtl, .expires_at_ms = std::nullopt, .max_events = 1}});
    const std::string s = "s";
    (void)f->append(s, evs(2 * k));
    auto claimed = f->claim_available({.session_id = s,
                                       .holder = "w1",
                                       .ttl_ms = kTtl,
                                       .expires_at_ms = std::nullopt,
                                       .exclude_indexes = {},
                                       .max_events = k});
    REQUIRE(claimed.events.size() == static_cast<std::size_t>(k));
    CompleteManyRequest request{.session_id = s, .completions = {}, .claim_next = std::nullopt};
    for (const auto& e : claimed.events)
      request.completions.push_back(
          {.index = e.index, .attempt = 1, .events = {child("c" + std::to_string(e.index))}});
    request.claim_next =
        ClaimNext{.holder = "w1", .ttl_ms = kTtl, .expires_at_ms = std::nullopt, .max_events = 1};
    REQUIRE(raw.get({"CONFIG", "RESETSTAT"}) == "OK");
    auto done = f->complete_attempts(request);
    CHECK(calls_of(raw, "evalsha") == 1);
    CHECK(calls_of(raw, "eval") == 0);
    REQUIRE(done.results.size() == static_cast<std::size_t>(k));
    REQUIRE(done.next);
    CHECK(done.next->verdict == ClaimVerdict::claimed);
    const long long slices = (8LL * std::min(2LL * k, 8LL) + 999) / 1000;
    CHECK(script_commands(raw) == 10 + 2 * k + 4 + slices);
    // The same batch again is a replay of every completion: still one call, no claim.
    request.claim_next.reset();
    REQUIRE(raw.get({"CONFIG", "RESETSTAT"}) == "OK");
    auto replay = f->complete_attempts(request);
    CHECK(calls_of(raw, "evalsha") == 1);
    for (const auto& r : replay.results) CHECK(r.verdict == CompleteVerdict::completed);
  }
}

TEST_CASE("every write operation is one script call", "[redis][scripts]") {
  auto f = open_fixture(unique_prefix("calls"));
  Raw raw;
  auto writes = [&](const std::string& s) {
    (void)f->append(s, evs(2));
    (void)claim(*f, s);
    (void)f->renew_claims({.session_id = s,
                           .holder = "w1",
                           .claims = {{1, 1}},
                           .ttl_ms = kTtl,
                           .expires_at_ms = std::nullopt});
    (void)complete(*f, s, 1, 1, {child(s + "-c1")});
    (void)fail(*f, s, 2, 1, 1);
    (void)redrive(*f, s, 2, RedriveAction::skip);
    f->put_snapshots(s, "r", {{.index = 2, .state = 2, .pin_event_indexes = {}}});
    (void)clear(*f, s);
  };
  writes("warm");  // Every script is in the server's cache afterwards.
  REQUIRE(raw.get({"CONFIG", "RESETSTAT"}) == "OK");
  writes("s");
  CHECK(calls_of(raw, "evalsha") == 8);
  CHECK(calls_of(raw, "eval") == 0);
  CHECK(calls_of(raw, "script|load") == 0);
  CHECK(f->read("s").size() == 1);  // Only the marker: every call did its work.
}

}  // namespace

// docs/redis-layout.md#complete_in_sessions: each request is its own complete_attempts.lua call,
// all written together: one read event of the server, one EVALSHA per request, the commands of
// the three calls alone. After SCRIPT FLUSH every request is sent again once the text is loaded.
TEST_CASE("complete_in_sessions is one EVALSHA per request, written together", "[redis][scripts]") {
  auto f = open_fixture(unique_prefix("in_sessions"));
  auto alone = open_fixture(unique_prefix("in_sessions_alone"));
  Raw raw;
  const std::vector<std::string> sessions = {"a", "b", "c"};
  std::vector<CompleteManyRequest> requests;
  for (auto* store : {&f, &alone})
    for (const auto& s : sessions) {
      (void)(*store)->append(s, evs(2));
      REQUIRE(claim(**store, s).verdict == ClaimVerdict::claimed);
    }
  for (const auto& s : sessions)
    requests.push_back({.session_id = s,
                        .completions = {{.index = 1, .attempt = 1, .events = {child(s + "1")}},
                                        {.index = 2, .attempt = 1, .events = {}}},
                        .claim_next = ClaimNext{.holder = "w1", .ttl_ms = kTtl, .max_events = 1}});
  REQUIRE(raw.get({"CONFIG", "RESETSTAT"}) == "OK");
  for (const auto& q : requests) (void)alone->complete_attempts(q);
  const long long commands_alone = script_commands(raw);
  CHECK(calls_of(raw, "evalsha") == 3);

  REQUIRE(raw.get({"CONFIG", "RESETSTAT"}) == "OK");
  const auto reads = [&] {
    const auto info = raw.get({"INFO", "stats"}).value_or("");
    const auto at = info.find("total_reads_processed:");
    REQUIRE(at != std::string::npos);
    return std::stoll(info.substr(at + 22));
  };
  const long long reads_before = reads();
  auto outcomes = f->complete_in_sessions(requests);
  // The call's one read event, then this INFO's.
  CHECK(reads() - reads_before == 2);
  CHECK(calls_of(raw, "evalsha") == 3);
  CHECK(calls_of(raw, "eval") == 0);
  CHECK(script_commands(raw) == commands_alone);
  for (const auto& o : outcomes) {
    REQUIRE(o.ok());
    CHECK(o.result->results.at(0).verdict == CompleteVerdict::completed);
    CHECK(o.result->next->verdict == ClaimVerdict::claimed);
  }

  // The server lost its scripts: loaded once, every request sent again, each answered (a replay).
  REQUIRE(raw.get({"SCRIPT", "FLUSH"}) == "OK");
  REQUIRE(raw.get({"CONFIG", "RESETSTAT"}) == "OK");
  for (auto& q : requests) q.claim_next.reset();
  auto again = f->complete_in_sessions(requests);
  CHECK(calls_of(raw, "script|load") == 1);
  for (std::size_t i = 0; i < again.size(); ++i) {
    REQUIRE(again[i].ok());
    CHECK(ids_of(again[i].result->results.at(0).events) ==
          ids_of(outcomes[i].result->results.at(0).events));
  }
  for (const auto& s : sessions) CHECK(f->read(s).size() == 3);
}

}  // namespace a2::redis_test
