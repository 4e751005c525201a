// SPDX-License-Identifier: MIT
// Postgres and the original package's data: a2 writes payload and checkpoint numbers as
// JSON.stringify does (jsonb keeps a number's scale, so 1.0 and 1 are stored differently); rows
// inserted directly, as the original package's writer leaves them, read back; a lone surrogate
// escape cannot be stored in jsonb at all, by either writer.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <pqxx/pqxx>
#include <string>

#include "a2/detail/json_text.hpp"
#include "a2/postgres.hpp"
#include "servers/postgres_server.hpp"

namespace {

using a2::Json;
using a2::test::PostgresServer;

struct Fixture {
  std::shared_ptr<a2::ManualClock> clock = std::make_shared<a2::ManualClock>(1'000'000);
  std::shared_ptr<a2::SequentialIdSource> ids = std::make_shared<a2::SequentialIdSource>("g");
  std::string schema;
  std::unique_ptr<a2::Store> store;
  a2::Store* operator->() const { return store.get(); }
};

Fixture fresh_legacy() {
  static std::atomic<int> n{0};
  Fixture f;
  f.schema = "legacy" + std::to_string(++n);
  f.store = a2::postgres::open({.connection = PostgresServer::shared().connection(),
                                .schema = f.schema,
                                .clock = f.clock,
                                .ids = f.ids});
  return f;
}

// Runs SQL in the fixture's schema; returns the first value as text ("" for null).
std::string sql(const Fixture& f, const std::string& query) {
  pqxx::connection conn(PostgresServer::shared().connection());
  pqxx::nontransaction tx(conn);
  tx.exec("set search_path to \"" + f.schema + "\"");
  auto rows = tx.exec(query);
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
  CHECK(sql(f, "select payload->>'z' from a2_events where idx = 1") == "1");
  CHECK(sql(f, "select payload->>'n' from a2_events where idx = 1") == "0");
  CHECK(sql(f, "select (payload->'e')::numeric = 1e21 from a2_events where idx = 1") == "t");
  f->put_snapshots("s", "r", {{.index = 1, .state = payload, .pin_event_indexes = {}}});
  CHECK(sql(f, "select state->>'z' from a2_snapshots") == "1");
  // A batch append goes through the other function.
  a2::NewEvent settled = e;
  settled.id = "y";
  settled.settled = true;
  a2::NewEvent plain;
  plain.type = "t";
  plain.payload = Json{{"k", 2.0}};
  (void)f->append("s", {settled, plain});
  CHECK(sql(f, "select payload->>'z' from a2_events where idx = 2") == "1");
  CHECK(sql(f, "select payload->>'k' from a2_events where idx = 3") == "2");
  auto rows = f->read("s");
  REQUIRE(rows.size() == 3);
  CHECK(same_value(rows[0].payload, payload));
  CHECK(a2::detail::json_text(rows[0].payload["z"]) == "1");
}

TEST_CASE("rows inserted as the original package writes them read back and claim",
          "[postgres][legacy]") {
  auto f = fresh_legacy();
  (void)f->append("s", {});  // Nothing; the schema exists.
  sql(f,
      "insert into a2_events (session_id, idx, event_id, event_type, payload, created_at) values "
      "('s', 1, 'e1', 't', '{\"zz\": 1, \"a\": {\"y\": 2.50, \"b\": [1e2, -0.0]}}', "
      "1700000000000), "
      "('s', 2, 'e2', 't', '\"\\u00e9\\ud83d\\ude00\"', 1700000000001)");
  sql(f,
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

TEST_CASE("jsonb refuses a lone surrogate escape, so neither writer can store one",
          "[postgres][legacy]") {
  auto f = fresh_legacy();
  (void)f->append("s", {});
  CHECK_THROWS(sql(f,
                   "insert into a2_events (session_id, idx, event_id, event_type, payload, "
                   "created_at) values ('s', 1, 'e1', 't', '\"\\ud800\"', 1)"));
  // Times are bigint columns: the original package cannot store fractional milliseconds here.
  CHECK_THROWS(sql(f,
                   "insert into a2_events (session_id, idx, event_id, event_type, payload, "
                   "created_at) values ('s', 1, 'e1', 't', 'null', '1700000000000.5')"));
}

}  // namespace
