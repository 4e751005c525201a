// SPDX-License-Identifier: MIT
// a2's planner settings (docs/postgres-layout.md#plans): the statements inside the claim and
// completion functions are planned once per connection, not again on every call.

#include <catch2/catch.hpp>
#include <cstdint>
#include <pqxx/pqxx>
#include <string>

#include "a2/postgres.hpp"
#include "schema_store.hpp"
#include "servers/postgres_server.hpp"

namespace a2::postgres_test::plans_test {
namespace {

using a2::test::PostgresServer;

constexpr std::int64_t kT0 = 1'000'000;

// Planning calls and executions of the statements (nested ones included) whose text holds
// `fragment`, from pg_stat_statements.
struct Counts {
  std::int64_t plans = 0;
  std::int64_t calls = 0;
};
Counts counts(pqxx::nontransaction& tx, const std::string& fragment) {
  auto row = tx.exec1(
      "select coalesce(sum(plans), 0)::bigint, coalesce(sum(calls), 0)::bigint "
      "from pg_stat_statements where query like '%' || " +
      tx.quote(fragment) + " || '%' and query not like '%pg_stat_statements%'");
  return {row[0].as<std::int64_t>(), row[1].as<std::int64_t>()};
}

// With Postgres's default planning (plan_cache_mode = auto) plpgsql makes a custom plan for
// each of a statement's first five executions on a connection, then a generic one, and goes on
// making custom plans whenever they look cheaper: 30 cycles would plan each statement at least
// six times. With a2's settings each connection plans it once.
TEST_CASE("a2's connections plan the claim's and the completion's statements once",
          "[plans][postgres]") {
  PostgresServer server({"shared_preload_libraries=pg_stat_statements",
                         "pg_stat_statements.track=all", "pg_stat_statements.track_planning=on"});
  pqxx::connection admin(server.connection());
  pqxx::nontransaction tx(admin);
  tx.exec("create extension if not exists pg_stat_statements");
  const std::string app = "a2_plans";
  // The default pool size: the calls may spread over its connections.
  auto f = a2::postgres_test::open_schema_store(
      {.tag = "plans", .t0 = kT0, .connection = server.connection() + " application_name=" + app},
      {});
  a2::NewEvent first;
  first.id = "c-0";
  first.type = "t";
  REQUIRE(f->append("c", {first}).events.at(0).index == 1);
  tx.exec("select pg_stat_statements_reset()");
  constexpr int kCycles = 30;
  for (int i = 0; i < kCycles; ++i) {
    auto claim = f->claim_available({.session_id = "c", .holder = "w", .ttl_ms = 30000});
    REQUIRE(claim.verdict == a2::ClaimVerdict::claimed);
    REQUIRE(claim.events.size() == 1);
    const auto& e = claim.events[0];
    REQUIRE(f->complete_attempt({.session_id = "c",
                                 .index = e.index,
                                 .attempt = e.attempt_count,
                                 .events = {{"c-" + std::to_string(i + 1), "t", nullptr,
                                             std::nullopt, false, std::nullopt}}})
                .verdict == a2::CompleteVerdict::completed);
  }
  const auto connections =
      tx.exec1("select count(*) from pg_stat_activity where application_name = " + tx.quote(app))[0]
          .as<std::int64_t>();
  INFO("connections of the store: " << connections);
  REQUIRE(connections >= 1);
  REQUIRE(connections <= static_cast<std::int64_t>(a2::postgres::Options{}.pool_size) + 1);
  // a2_claim's claim statement, and a2_complete_one's read-and-update after the session lock.
  for (const std::string fragment :
       {"eligible as materialized", "update a2_events parent_row set"}) {
    INFO(fragment);
    const auto c = counts(tx, fragment);
    CHECK(c.calls == kCycles);
    CHECK(c.plans >= 1);
    CHECK(c.plans <= connections);
  }
}

}  // namespace
}  // namespace a2::postgres_test::plans_test
