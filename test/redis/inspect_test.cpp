// SPDX-License-Identifier: MIT
// Scenarios 210-212 [R] (docs/semantics.md#inspection-scenarios): list_sessions' SCAN pattern
// escapes the prefix and skips keys that are no session's counter, and the counts read data in
// the original package's layout.
#include <set>

#include "support.hpp"

namespace a2::redis_test {
namespace {
using namespace a2::conformance;

std::set<std::string> listed(a2::Store& store, std::int64_t limit = 1000) {
  std::set<std::string> out;
  std::string cursor;
  for (int pages = 0;; ++pages) {
    REQUIRE(pages < 10000);
    auto page = store.list_sessions({.cursor = cursor, .limit = limit});
    for (const auto& s : page.sessions) out.insert(s.session_id);
    if (page.next_cursor.empty()) return out;
    cursor = page.next_cursor;
  }
}

TEST_CASE("list_sessions of a prefix with glob characters lists only its own sessions",
          "[redis][S210]") {
  const auto base = unique_prefix("glob");
  auto star = open_fixture(base + "*");
  auto question = open_fixture(base + "?");
  auto bracket = open_fixture(base + "[b]");
  auto plain = open_fixture(base + "b");  // "<base>[b]" unescaped would match it.
  star->append("s1", {ev()});
  question->append("s2", {ev()});
  bracket->append("s3", {ev()});
  plain->append("s4", {ev()});
  CHECK(listed(*star) == std::set<std::string>{"s1"});
  CHECK(listed(*question) == std::set<std::string>{"s2"});
  CHECK(listed(*bracket) == std::set<std::string>{"s3"});
  CHECK(listed(*plain) == std::set<std::string>{"s4"});
  CHECK(listed(*star, 1) == std::set<std::string>{"s1"});
}

TEST_CASE("a reducer named count makes no phantom session", "[redis][S211]") {
  auto f = open_fixture(unique_prefix("cnt"));
  f->append("s", {ev()});
  f->put_snapshots("s", "count", {{.index = 1, .state = Json{{"n", 1}}, .pin_event_indexes = {}}});
  auto page = f->list_sessions();
  REQUIRE(page.sessions.size() == 1);
  CHECK(page.sessions[0].session_id == "s");
  auto i = f->inspect_session("s");
  REQUIRE(i.snapshots.size() == 1);
  CHECK(i.snapshots[0].reducer == "count");
  CHECK(i.snapshots[0].index == 1);
}

TEST_CASE("inspect_session and list_sessions count data in the original package's layout",
          "[redis][legacy][S212]") {
  constexpr std::int64_t kNow = 1'700'000'000'000;
  const auto p = unique_prefix("old");
  auto f = open_fixture(p);
  f.clock->set(kNow);
  Raw raw;
  const std::string k = p + ":legacy:";
  // 1 claimed (a fractional lease end), 2 dead, 3 and 4 in lane L (4 blocked), 5 an expired
  // lease; no meta-split (all metadata in the base hash), no av, no work index.
  for (int i = 1; i <= 5; ++i)
    raw.cmd({"XADD", k + "log", std::to_string(i) + "-0", "id", "o" + std::to_string(i), "type",
             "t", "payload", "null", "created_at", std::to_string(kNow - 10), "cause", "", "lane",
             i == 3 || i == 4 ? "L" : ""});
  raw.cmd({"SET", k + "count", "5"});
  raw.cmd({"HSET", k + "meta", "1:ch", "w", "1:ce", std::to_string(kNow + 5000) + ".5", "1:d",
           "1", "2:f", std::to_string(kNow - 1), "2:d", "3", "2:a", "3", "3:l", "L", "4:l", "L",
           "3:next", "4", "__lane:1:L:head", "3", "__lane:1:L:tail", "4", "5:ch", "w2", "5:ce",
           std::to_string(kNow - 1000), "5:d", "2"});
  raw.cmd({"ZADD", k + "pending", "1", "1", "2", "2", "3", "3", "4", "4", "5", "5"});
  raw.cmd({"ZADD", k + "ready", "1", "1", "3", "3", "5", "5"});
  auto i = f->inspect_session("legacy");
  CHECK(i.summary.head == 5);
  CHECK(i.summary.pending == 4);
  CHECK(i.summary.ready == 2);
  CHECK(i.summary.claimed == 1);
  CHECK(i.summary.dead == 1);
  REQUIRE(i.lanes.size() == 1);
  CHECK(i.lanes[0].lane == "L");
  CHECK(i.lanes[0].head_index == 3);
  CHECK(i.lanes[0].pending == 2);
  REQUIRE(i.claims.size() == 2);
  CHECK(i.claims[0].index == 1);
  CHECK(i.claims[0].holder == "w");
  CHECK(i.claims[0].expires_at == kNow + 5000);
  CHECK(i.claims[1].index == 5);
  CHECK(i.claims[1].attempt == 2);
  auto page = f->list_sessions();
  REQUIRE(page.sessions.size() == 1);
  CHECK(page.sessions[0].pending == 4);
  CHECK(page.sessions[0].ready == 2);
}

}  // namespace
}  // namespace a2::redis_test
