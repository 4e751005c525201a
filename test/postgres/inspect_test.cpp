// SPDX-License-Identifier: MIT
// Scenario 213 [P] (docs/semantics.md#S213): list_sessions finds the sessions by a skip scan of
// the primary key, so a page does not read every event row.
#include <catch2/catch.hpp>
#include <fstream>
#include <pqxx/pqxx>
#include <sstream>
#include <string>

#include "a2/postgres.hpp"
#include "postgres/connection_pool.hpp"
#include "servers/postgres_server.hpp"

namespace a2::postgres_test::inspect_test {
namespace {

using a2::test::PostgresServer;

TEST_CASE("list_sessions reads the primary key by skip scan, not every row", "[postgres][S213]") {
  const std::string schema = "inspect_skip";
  auto store =
      a2::postgres::open({.connection = PostgresServer::shared().connection(), .schema = schema});
  pqxx::connection conn(PostgresServer::shared().connection());
  pqxx::nontransaction tx(conn);
  tx.exec("set search_path to \"" + schema + "\"");
  tx.exec(a2::postgres::detail::planner_settings_sql());  // As the store plans it.
  // 200 sessions of 20 settled events each (4000 rows), inserted directly, statistics current.
  tx.exec(
      "insert into a2_events (session_id, idx, event_id, event_type, payload, created_at, "
      "processed_at) select 's' || lpad(s::text, 3, '0'), i, 'e' || s || '-' || i, 't', 'null', "
      "1, 1 from generate_series(1, 200) s, generate_series(1, 20) i");
  tx.exec("analyze a2_events");
  std::ifstream file(A2_LIST_SESSIONS_SQL);
  std::stringstream text;
  text << file.rdbuf();
  REQUIRE(text.str().find("a2_events") != std::string::npos);
  tx.exec("prepare page as " + text.str());
  std::string plan;
  for (const auto& row :
       tx.exec("explain (analyze, costs off, timing off, summary off) execute page('s100', 10, 0)"))
    plan += std::string(row[0].c_str()) + "\n";
  INFO(plan);
  CHECK(plan.find("Seq Scan") == std::string::npos);
  CHECK(plan.find("Index Only Scan using a2_events_pkey") != std::string::npos);
  CHECK(plan.find("rows=4000") == std::string::npos);
  // The page itself: the 10 sessions after s100, then 11 to tell a next page exists.
  auto page = store->list_sessions({.cursor = "s100", .limit = 10});
  REQUIRE(page.sessions.size() == 10);
  CHECK(page.sessions.front().session_id == "s101");
  CHECK(page.sessions.front().head == 20);
  CHECK(page.sessions.front().pending == 0);
  CHECK(page.next_cursor == "s110");
  CHECK(store->list_sessions({.cursor = "s195", .limit = 10}).next_cursor.empty());
}

}  // namespace

}  // namespace a2::postgres_test::inspect_test
