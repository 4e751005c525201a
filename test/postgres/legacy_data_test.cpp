// SPDX-License-Identifier: MIT
// Postgres and the original package's data: a2 writes payload and checkpoint numbers as
// JSON.stringify does (jsonb keeps a number's scale, so 1.0 and 1 are stored differently); rows
// inserted directly, as the original package's writer leaves them, read back; a lone surrogate
// escape cannot be stored in jsonb at all, by either writer.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "a2/detail/json_text.hpp"
#include "a2/postgres.hpp"
#include "schema_store.hpp"
#include "servers/postgres_server.hpp"

namespace a2::postgres_test::legacy_data_test {
namespace {

using a2::Json;
using a2::test::PostgresServer;

using Fixture = a2::postgres_test::SchemaStore;

Fixture fresh_legacy() {
  return a2::postgres_test::open_schema_store({.tag = "legacy", .t0 = 1'000'000});
}

// Runs SQL in the fixture's schema; returns the first value as text ("" for null).
std::string sql_text(const Fixture& f, const std::string& query) {
  auto rows = a2::postgres_test::sql(f, query);
  if (rows.empty() || rows[0].empty() || rows[0][0].is_null()) return {};
  return rows[0][0].c_str();
}

bool same_value(const Json& a, const Json& b) {
  return nlohmann::json::parse(a2::detail::json_text(a)) ==
         nlohmann::json::parse(a2::detail::json_text(b));
}

TEST_CASE("payload and checkpoint numbers are stored in jsonb as JSON.stringify writes them",
          "[postgres][legacy]") {
  auto f = fresh_legacy();
  Json payload;
  payload["z"] = 1.0;
  payload["n"] = -0.0;
  payload["e"] = 1e21;
  a2::NewEvent e;
  e.id = "x";
  e.type = "t";
  e.payload = payload;
  (void)f->append("s", {e});
  // Postgres numeric keeps the scale of the text it was given: "1.0" stays 1.0.
  CHECK(sql_text(f, "select payload->>'z' from a2_events where idx = 1") == "1");
  CHECK(sql_text(f, "select payload->>'n' from a2_events where idx = 1") == "0");
  CHECK(sql_text(f, "select (payload->'e')::numeric = 1e21 from a2_events where idx = 1") == "t");
  f->put_snapshots("s", "r", {{.index = 1, .state = payload, .pin_event_indexes = {}}});
  CHECK(sql_text(f, "select state->>'z' from a2_snapshots") == "1");
  // A batch append goes through the other function.
  a2::NewEvent settled = e;
  settled.id = "y";
  settled.settled = true;
  a2::NewEvent plain;
  plain.type = "t";
  plain.payload = Json{{"k", 2.0}};
  (void)f->append("s", {settled, plain});
  CHECK(sql_text(f, "select payload->>'z' from a2_events where idx = 2") == "1");
  CHECK(sql_text(f, "select payload->>'k' from a2_events where idx = 3") == "2");
  auto rows = f->read("s");
  REQUIRE(rows.size() == 3);
  CHECK(same_value(rows[0].payload, payload));
  CHECK(a2::detail::json_text(rows[0].payload["z"]) == "1");
}

TEST_CASE("rows inserted as the original package writes them read back and claim",
          "[postgres][legacy]") {
  auto f = fresh_legacy();
  (void)f->append("s", {});  // Nothing; the schema exists.
  sql_text(
      f,
      "insert into a2_events (session_id, idx, event_id, event_type, payload, created_at) values "
      "('s', 1, 'e1', 't', '{\"zz\": 1, \"a\": {\"y\": 2.50, \"b\": [1e2, -0.0]}}', "
      "1700000000000), "
      "('s', 2, 'e2', 't', '\"\\u00e9\\ud83d\\ude00\"', 1700000000001)");
  sql_text(f,
           "update a2_events set cause = '{\"index\": 1.0, \"attempt\": 1}'::jsonb, "
           "returned_event_ids = '[]'::jsonb where idx = 2");
  auto rows = f->read("s");
  REQUIRE(rows.size() == 2);
  CHECK(same_value(rows[0].payload,
                   Json{{"zz", 1}, {"a", Json{{"y", 2.5}, {"b", Json::array({100, 0})}}}}));
  CHECK(rows[1].payload == Json("\xC3\xA9\xF0\x9F\x98\x80"));
  CHECK(rows[1].cause == std::optional<a2::EventCause>(a2::EventCause{1, 1}));
  f.clock->set(1700000000002);
  auto c = f->claim_available({.session_id = "s",
                               .holder = "w",
                               .ttl_ms = 1000,
                               .expires_at_ms = std::nullopt,
                               .exclude_indexes = {}});
  REQUIRE(c.verdict == a2::ClaimVerdict::claimed);
  CHECK(c.events.size() == 2);
}

// The original package's insert (store-postgres.ts of experimental-a2 0.18.0): named columns,
// so a2's available_at column (schema version 2) is left null.
void insert_as_original(const Fixture& f, const std::string& s, int index, const std::string& id,
                        const std::string& lane_sql) {
  sql_text(
      f,
      "insert into a2_events (session_id, idx, event_type, payload, event_id, created_at, cause, "
      "lane, lane_ready, processed_at) values ('" +
          s + "', " + std::to_string(index) + ", 't', '{\"n\": 1}', '" + id +
          "', 1700000000000, null, " + lane_sql + ", " + lane_sql +
          "::text is null or not exists (select 1 from a2_events where session_id = '" + s +
          "' and lane = " + lane_sql + " and processed_at is null and idx > 0), null)");
}

a2::ClaimResult claim(Fixture& f, const std::string& holder, std::optional<std::int64_t> max) {
  return f->claim_available({.session_id = "s",
                             .holder = holder,
                             .ttl_ms = 1000,
                             .expires_at_ms = std::nullopt,
                             .exclude_indexes = {},
                             .max_events = max});
}

std::vector<std::int64_t> indexes(const a2::ClaimResult& r) {
  std::vector<std::int64_t> out;
  for (const auto& e : r.events) out.push_back(e.index);
  return out;
}

TEST_CASE("the work operations of issue 10 run on rows the original package wrote",
          "[postgres][legacy]") {
  auto f = fresh_legacy();
  (void)f->append("s", {});
  insert_as_original(f, "s", 1, "o1", "null");
  insert_as_original(f, "s", 2, "o2", "'L'");
  insert_as_original(f, "s", 3, "o3", "'L'");
  insert_as_original(f, "s", 4, "o4", "null");
  // 1 claimed by the original package's claim (its columns: attempt, holder, expiry, times).
  sql_text(f,
           "update a2_events set attempt_count = 1, claim_holder = 'ts', claim_expires_at = "
           "1700000005000, first_claimed_at = 1700000000000, last_claimed_at = 1700000000000 "
           "where idx = 1");
  CHECK(sql_text(f, "select count(*) from a2_events where available_at is not null") == "0");
  f.clock->set(1700000001000);

  auto head = f->head("s");
  CHECK(head.head_index == 4);
  CHECK(head.clear_index == 0);
  auto held = f->held_claims("s", "ts");
  REQUIRE(held.size() == 1);
  CHECK(held[0].index == 1);
  CHECK(held[0].attempt == 1);
  CHECK(held[0].expires_at == 1700000005000);

  // A bounded claim: 2 (lane L's head; 3 waits) then 4; then busy until 1's lease ends.
  CHECK(indexes(claim(f, "a2", 1)) == std::vector<std::int64_t>{2});
  CHECK(indexes(claim(f, "a2", 1)) == std::vector<std::int64_t>{4});
  auto busy = claim(f, "a2", 1);
  CHECK(busy.verdict == a2::ClaimVerdict::busy);
  CHECK(busy.retry_at == 1700000002000);  // a2's leases of 2 and 4 end first.

  // Releasing the original package's claim makes 1 claimable at once, as attempt 2.
  auto released =
      f->release_claims({.session_id = "s", .holder = "ts", .claims = {{1, 1}, {2, 1}, {9, 1}}});
  CHECK(released.released == std::vector<std::int64_t>{1});
  CHECK(released.not_held == std::vector<std::int64_t>{2, 9});
  auto again = claim(f, "a2", std::nullopt);
  REQUIRE(indexes(again) == std::vector<std::int64_t>{1});
  CHECK(again.events[0].attempt_count == 2);

  // A delayed retry of an original row, and the lane behind a delayed head.
  auto failed = f->fail_attempt({.session_id = "s",
                                 .index = 2,
                                 .attempt = 1,
                                 .error = "later",
                                 .max_failures = 3,
                                 .retry_at_ms = 1700000010000});
  CHECK(failed.verdict == a2::FailVerdict::failed);
  CHECK(sql_text(f, "select available_at from a2_events where idx = 2") == "1700000010000");
  f.clock->set(1700000009000);  // Every lease has lapsed; 2 is delayed, 3 waits behind it.
  auto delayed = claim(f, "a2", std::nullopt);
  REQUIRE(indexes(delayed) == std::vector<std::int64_t>{1, 4});
  CHECK(claim(f, "a2", std::nullopt).retry_at == 1700000010000);
  f.clock->set(1700000010000);  // 2 is due, and the leases of 1 and 4 end now.
  CHECK(indexes(claim(f, "a2", std::nullopt)) == std::vector<std::int64_t>{1, 2, 4});

  // The original package keeps inserting after the column exists; its rows are claimable.
  insert_as_original(f, "s", 5, "o5", "null");
  CHECK(f->head("s").head_index == 5);
  CHECK(indexes(claim(f, "a2", 5)) == std::vector<std::int64_t>{5});
  CHECK_FALSE(f->read("s").at(4).available_at.has_value());
}

TEST_CASE("jsonb refuses a lone surrogate escape, so neither writer can store one",
          "[postgres][legacy]") {
  auto f = fresh_legacy();
  (void)f->append("s", {});
  CHECK_THROWS(sql_text(f,
                        "insert into a2_events (session_id, idx, event_id, event_type, payload, "
                        "created_at) values ('s', 1, 'e1', 't', '\"\\ud800\"', 1)"));
  // Times are bigint columns: the original package cannot store fractional milliseconds here.
  CHECK_THROWS(sql_text(f,
                        "insert into a2_events (session_id, idx, event_id, event_type, payload, "
                        "created_at) values ('s', 1, 'e1', 't', 'null', '1700000000000.5')"));
}

}  // namespace

}  // namespace a2::postgres_test::legacy_data_test
