// SPDX-License-Identifier: MIT
// Scripts run by SHA: the text is sent only after the server answered NOSCRIPT
// (docs/redis-layout.md#scripts).
#include <sstream>

#include "support.hpp"

namespace a2::redis_test {
namespace {
using namespace a2::conformance;

// calls= of one command in INFO commandstats (0 when absent).
long long calls_of(Raw& raw, const std::string& command) {
  auto info = raw.get({"INFO", "commandstats"}).value_or("");
  std::istringstream lines(info);
  std::string line;
  const std::string prefix = "cmdstat_" + command + ":calls=";
  while (std::getline(lines, line))
    if (line.rfind(prefix, 0) == 0) return std::stoll(line.substr(prefix.size()));
  return 0;
}

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
}  // namespace a2::redis_test
