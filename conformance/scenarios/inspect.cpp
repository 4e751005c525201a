// SPDX-License-Identifier: MIT
// Conformance scenarios 200-209 (docs/semantics.md#inspection-scenarios): list_sessions and
// inspect_session, the session counts, lanes, claims and checkpoints. 210-213 are
// backend-specific (test/redis/, test/postgres/).

#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "harness.hpp"
#include "support/as_json.hpp"
#include "support/bad_input.hpp"
#include "support/claims.hpp"
#include "support/support.hpp"

using namespace a2::conformance;
using a2::Json;

namespace {

Json counts(std::string session, std::int64_t head, std::int64_t clear, std::int64_t pending,
            std::int64_t ready, std::int64_t claimed, std::int64_t dead) {
  return {{"session", session}, {"head", head},       {"clear", clear}, {"pending", pending},
          {"ready", ready},     {"claimed", claimed}, {"dead", dead}};
}

}  // namespace

TEST_CASE("list_sessions pages through every session holding an event, each once",
          "[list_sessions][S200]") {
  auto f = a2::conformance::fresh();
  std::set<std::string> expected;
  for (int i = 0; i < 25; ++i) {
    const std::string s = "p" + std::to_string(100 + i);
    f->append(s, {ev()});
    expected.insert(s);
  }
  (void)f->patch_presence("ghost", {.participant = "u", .state = Json{{"x", 1}}, .ttl_ms = 60'000});
  (void)f->read("nobody");  // Reads create nothing.

  auto listed = all_sessions(*f, 10);
  std::set<std::string> ids;
  for (const auto& [id, s] : listed) ids.insert(id);
  REQUIRE(ids == expected);
  for (const auto& [id, s] : listed) {
    REQUIRE(summary_json(s) == counts(id, 1, 0, 1, 1, 0, 0));
    REQUIRE(summary_json(f->inspect_session(id).summary) == summary_json(s));
  }
  SECTION("a limit of 1 and of 1000 see the same sessions") {
    REQUIRE(all_sessions(*f, 1).size() == 25);
    REQUIRE(all_sessions(*f, 1000).size() == 25);
  }
}

TEST_CASE("list_sessions of an empty store lists nothing", "[list_sessions][S201]") {
  auto f = a2::conformance::fresh();
  REQUIRE(all_sessions(*f, 100).empty());  // Redis: pages may be empty before the last.
}

TEST_CASE("list_sessions refuses a bad limit or cursor and changes nothing",
          "[list_sessions][S202]") {
  auto f = a2::conformance::fresh();
  given(*f, {ev(), ev()});
  for (std::int64_t limit : {std::int64_t{0}, std::int64_t{-1}, std::int64_t{1001}, kBeyondSafe})
    require_invalid_and_unchanged(*f,
                                  [&] { (void)f->list_sessions({.cursor = "", .limit = limit}); });
  for (std::string cursor : {"a b", "a*b", "s\xC3\xA9", "x\n"})
    require_invalid_and_unchanged(*f,
                                  [&] { (void)f->list_sessions({.cursor = cursor, .limit = 10}); });
}

TEST_CASE("inspect_session refuses a bad session id and changes nothing",
          "[inspect_session][S203]") {
  auto f = a2::conformance::fresh();
  given(*f, {ev()});
  each_invalid(*f, bad_session_ids(), [&](const std::string& s) { (void)f->inspect_session(s); });
}

TEST_CASE("inspect_session of a session without events answers zeros", "[inspect_session][S204]") {
  auto f = a2::conformance::fresh();
  auto i = f->inspect_session("never");
  REQUIRE(inspection_json(i) == Json{{"summary", counts("never", 0, 0, 0, 0, 0, 0)},
                                     {"lanes", Json::array()},
                                     {"claims", Json::array()},
                                     {"snapshots", Json::array()}});
}

TEST_CASE(
    "inspect_session counts ready, claimed, expired, delayed, blocked, dead and finished "
    "events",
    "[inspect_session][list_sessions][session-counts][S205]") {
  auto f = a2::conformance::fresh();
  auto delayed = ev();
  delayed.available_at_ms = kT0 + 10'000;
  // 1, 2 plain; 3 delayed; 4, 5 lane L; 6 settled; 7 completed; 8 dead; 9 an expired lease.
  given(*f, {ev(), ev(), delayed, in_lane(ev(), "L"), in_lane(ev(), "L"), settled(ev()), ev(), ev(),
             ev()});
  auto c = claim_until(*f, kT0 + 1'000, "s", "w1", {1, 2, 4});
  REQUIRE(indexes_of(c.events) == std::vector<std::int64_t>{7, 8, 9});
  REQUIRE(complete(*f, "s", 7, 1).verdict == a2::CompleteVerdict::completed);
  REQUIRE(fail(*f, "s", 8, 1, 1).verdict == a2::FailVerdict::dead_lettered);
  c = claim_until(*f, kT0 + 100'000, "s", "w\xC3\xB6rker:2", {1, 4});
  REQUIRE(indexes_of(c.events) == std::vector<std::int64_t>{2});
  f.clock->set(kT0 + 2'000);  // 9's lease has expired: ready again, not claimed.

  auto i = f->inspect_session("s");
  REQUIRE(summary_json(i.summary) == counts("s", 9, 0, 6, 3, 1, 1));
  REQUIRE(inspection_json(i)["lanes"] == Json::array({{"L", 4, 2}}));
  REQUIRE(inspection_json(i)["claims"] ==
          Json::array({{2, 1, "w\xC3\xB6rker:2", kT0 + 100'000}, {9, 1, "w1", kT0 + 1'000}}));
  auto listed = all_sessions(*f, 100);
  REQUIRE(listed.size() == 1);
  REQUIRE(summary_json(listed.at("s")) == summary_json(i.summary));

  SECTION("a delayed event is ready once due") {
    f.clock->set(kT0 + 20'000);
    REQUIRE(summary_json(f->inspect_session("s").summary) == counts("s", 9, 0, 6, 4, 1, 1));
  }
  SECTION("released and failed claims are not listed; the failed one is ready again") {
    auto r = f->release_claims(
        {.session_id = "s", .holder = "w\xC3\xB6rker:2", .claims = {{.index = 2, .attempt = 1}}});
    REQUIRE(r.released == std::vector<std::int64_t>{2});
    auto again = claim(*f, "s", "w1", {1, 2, 4});  // 9 (expired) is claimed again.
    REQUIRE(indexes_of(again.events) == std::vector<std::int64_t>{9});
    REQUIRE(fail(*f, "s", 9, 2).verdict == a2::FailVerdict::failed);
    auto j = f->inspect_session("s");
    REQUIRE(summary_json(j.summary) == counts("s", 9, 0, 6, 4, 0, 1));
    REQUIRE(j.claims.empty());
  }
}

TEST_CASE("inspect_session counts only the current lifetime", "[inspect_session][S206]") {
  auto f = a2::conformance::fresh();
  given(*f, {ev(), ev(), ev()});
  auto c = claim(*f);
  REQUIRE(fail(*f, "s", 1, 1, 1).verdict == a2::FailVerdict::dead_lettered);
  REQUIRE(clear(*f).cleared);
  SECTION("a cleared session is listed with its marker as head and boundary") {
    REQUIRE(inspection_json(f->inspect_session("s")) ==
            Json{{"summary", counts("s", 4, 4, 0, 0, 0, 0)},
                 {"lanes", Json::array()},
                 {"claims", Json::array()},
                 {"snapshots", Json::array()}});
    auto listed = all_sessions(*f, 10);
    REQUIRE(listed.size() == 1);
    REQUIRE(summary_json(listed.at("s")) == counts("s", 4, 4, 0, 0, 0, 0));
  }
  SECTION("new work after the clear") {
    given(*f, {in_lane(ev(), "L"), in_lane(ev(), "L")});
    auto i = f->inspect_session("s");
    REQUIRE(summary_json(i.summary) == counts("s", 6, 4, 2, 1, 0, 0));
    REQUIRE(inspection_json(i)["lanes"] == Json::array({{"L", 5, 2}}));
  }
}

TEST_CASE("inspect_session lists lanes by name; a dead letter heads and blocks its lane",
          "[inspect_session][S207]") {
  auto f = a2::conformance::fresh();
  // 1 c, 2 c, 3 b, 4 a, 5 b, 6 "é:x".
  given(*f, {in_lane(ev(), "c"), in_lane(ev(), "c"), in_lane(ev(), "b"), in_lane(ev(), "a"),
             in_lane(ev(), "b"), in_lane(ev(), "\xC3\xA9:x")});
  auto c = claim(*f, "s", "w1", {3, 4, 6});
  REQUIRE(indexes_of(c.events) == std::vector<std::int64_t>{1});
  REQUIRE(fail(*f, "s", 1, 1, 1).verdict == a2::FailVerdict::dead_lettered);
  auto i = f->inspect_session("s");
  REQUIRE(summary_json(i.summary) == counts("s", 6, 0, 5, 3, 0, 1));
  REQUIRE(inspection_json(i)["lanes"] ==
          Json::array({{"a", 4, 1}, {"b", 3, 2}, {"c", 1, 1}, {"\xC3\xA9:x", 6, 1}}));
  SECTION("skipping the dead letter hands the lane on") {
    REQUIRE(redrive(*f, "s", 1, a2::RedriveAction::skip).redriven);
    auto j = f->inspect_session("s");
    REQUIRE(summary_json(j.summary) == counts("s", 6, 0, 5, 4, 0, 0));
    REQUIRE(inspection_json(j)["lanes"][2] == Json::array({"c", 2, 1}));
  }
}

TEST_CASE("inspect_session lists each reducer's newest checkpoint of the lifetime",
          "[inspect_session][S208]") {
  auto f = a2::conformance::fresh();
  given(*f, {ev(), ev(), ev()});
  f->put_snapshots("s", "r2", {{.index = 2, .state = Json{{"n", 2}}, .pin_event_indexes = {}}});
  f->put_snapshots("s", "r1",
                   {{.index = 1, .state = Json{{"n", 1}}, .pin_event_indexes = {3}},
                    {.index = 3, .state = Json{{"n", 3}}, .pin_event_indexes = {}}});
  REQUIRE(inspection_json(f->inspect_session("s"))["snapshots"] ==
          Json::array({{"r1", 3, 1}, {"r2", 2, 0}}));
  SECTION("a clear hides them") {
    REQUIRE(clear(*f).cleared);
    REQUIRE(f->inspect_session("s").snapshots.empty());
  }
}

TEST_CASE("list_sessions and inspect_session take any valid session id",
          "[list_sessions][inspect_session][S209]") {
  auto f = a2::conformance::fresh();
  const std::vector<std::string> odd = {"a:b:c",  "x-_.~@+=/y", "ids", "count",
                                        "snap:x", "work",       "Z"};
  for (const auto& s : odd) f->append(s, {in_lane(ev(), "l:" + s)});
  auto listed = all_sessions(*f, 3);
  REQUIRE(listed.size() == odd.size());
  for (const auto& s : odd) {
    REQUIRE(summary_json(listed.at(s)) == counts(s, 1, 0, 1, 1, 0, 0));
    REQUIRE(inspection_json(f->inspect_session(s))["lanes"] == Json::array({{"l:" + s, 1, 1}}));
  }
}
