// SPDX-License-Identifier: MIT
// Schema version 2 (docs/postgres-layout.md#schema-version-2): data written by an a2 of schema
// version 1 (its frozen sql/schema.sql, test/postgres/schema_v1.sql, and its functions) is
// migrated in place by open(), reads back unchanged and takes the work operations of issue 10;
// the migration is idempotent, and a newer schema version is refused without changing anything.
// A function signature that changed within version 2 (a2_release_claims) is replaced in place.
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <tuple>
#include <vector>

#include "a2/embedded/schema_v1.hpp"
#include "a2/postgres.hpp"
#include "servers/postgres_server.hpp"

namespace a2::postgres_test::migration_test {
namespace {

using a2::test::PostgresServer;

constexpr std::int64_t kT0 = 1'000'000;

std::string next_schema() {
  static std::atomic<int> n{0};
  return "mig" + std::to_string(++n);
}

// Runs SQL in `schema`; returns the first value as text ("" for none or null).
std::string sql(const std::string& schema, const std::string& query) {
  pqxx::connection conn(PostgresServer::shared().connection());
  pqxx::nontransaction tx(conn);
  tx.exec("set search_path to \"" + schema + "\"");
  auto rows = tx.exec(query);
  if (rows.empty() || rows[0].empty() || rows[0][0].is_null()) return {};
  return rows[0][0].c_str();
}

std::unique_ptr<a2::Store> open_at(const std::string& schema,
                                   const std::shared_ptr<a2::ManualClock>& clock) {
  return a2::postgres::open({.connection = PostgresServer::shared().connection(),
                             .schema = schema,
                             .clock = clock,
                             .ids = std::make_shared<a2::SequentialIdSource>("g")});
}

// The versions recorded in a2_schema_version, and how many functions of each name exist.
std::string versions(const std::string& schema) {
  return sql(schema,
             "select string_agg(version::text, ',' order by version) from a2_schema_version");
}
std::string overloads(const std::string& schema, const std::string& function) {
  return sql(schema, "select count(*) from pg_proc where pronamespace = '\"" + schema +
                         "\"'::regnamespace and proname = '" + function + "'");
}

// Marks `schema` as set up by another build of schema version `version`: its mark holds a digest
// of schema.sql that no build has, so the next open applies this build's text.
void mark_as_other_build(const std::string& schema, int version = 2) {
  sql(schema, "comment on table a2_schema_version is 'a2 schema version " +
                  std::to_string(version) + ", schema.sql fnv1a-64 0'");
}

using Held = std::tuple<std::int64_t, std::int64_t, std::int64_t>;
std::vector<Held> held(a2::Store& store, const std::string& s, const std::string& holder) {
  std::vector<Held> out;
  for (const auto& c : store.held_claims(s, holder))
    out.emplace_back(c.index, c.attempt, c.expires_at);
  return out;
}

std::vector<std::int64_t> indexes(const a2::ClaimResult& r) {
  std::vector<std::int64_t> out;
  for (const auto& e : r.events) out.push_back(e.index);
  return out;
}

a2::ClaimResult claim(a2::Store& store, const std::string& holder,
                      std::optional<std::int64_t> max_events) {
  return store.claim_available({.session_id = "s",
                                .holder = holder,
                                .ttl_ms = 30000,
                                .expires_at_ms = std::nullopt,
                                .exclude_indexes = {},
                                .max_events = max_events});
}

// Version-1 tables and functions with data written through version 1's own functions: session
// s with e1..e5 and lane L (6, 7), 1 and 2 claimed by w1, 3 and 4 by w2, 4 then failed once;
// session c cleared (marker 3).
std::string version_1_data() {
  const std::string schema = next_schema();
  pqxx::connection conn(PostgresServer::shared().connection());
  pqxx::work tx(conn);
  tx.exec("create schema \"" + schema + "\"");
  tx.exec("set local search_path to \"" + schema + "\"");
  tx.exec(std::string(a2::test::sql::kSchemaV1.text));
  const auto t0 = std::to_string(kT0);
  for (int i = 1; i <= 5; ++i)
    tx.exec("select * from a2_append_one('s', " + t0 + ", 'e" + std::to_string(i) +
            "', 't', '{\"n\": " + std::to_string(i) + "}')");
  tx.exec("select * from a2_append('s', " + t0 +
          ", null, '{l1,l2}', '{t,t}', '[1, 2]', '{null,null}', '{null,null}', '{L,L}', '{f,f}')");
  const auto lease = std::to_string(kT0 + 30000);
  tx.exec("select * from a2_claim_available('s', 'w1', " + t0 + ", " + lease + ", '{3,4,5,6,7}')");
  tx.exec("select * from a2_claim_available('s', 'w2', " + t0 + ", " + lease + ", '{1,2,5,6,7}')");
  tx.exec("select * from a2_fail_attempt('s', 4, 1, 'boom', 3, " + t0 + ")");
  tx.exec("select * from a2_append('c', " + t0 +
          ", null, '{c1,c2}', '{t,t}', '[1, 2]', '{null,null}', '{null,null}', '{null,null}', "
          "'{f,f}')");
  tx.exec("select * from a2_clear('c', " + t0 + ", null, null, null, 'm1', 'a2.clear')");
  tx.commit();
  return schema;
}

TEST_CASE("open migrates version-1 data in place and the work operations run on it",
          "[postgres][migration]") {
  const std::string schema = version_1_data();
  REQUIRE(versions(schema) == "1");
  REQUIRE(overloads(schema, "a2_claim_available") == "1");
  REQUIRE(sql(schema,
              "select count(*) from pg_attribute where attrelid = 'a2_events'::regclass "
              "and attname = 'available_at'") == "0");

  auto clock = std::make_shared<a2::ManualClock>(kT0 + 1000);
  auto store = open_at(schema, clock);
  // Version 2 recorded beside 1; one available_at column; version 1's signatures gone.
  CHECK(versions(schema) == "1,2");
  CHECK(sql(schema,
            "select count(*) from pg_attribute where attrelid = 'a2_events'::regclass "
            "and attname = 'available_at' and not attisdropped") == "1");
  for (const char* f : {"a2_claim_available", "a2_fail_attempt", "a2_append", "a2_complete_attempt",
                        "a2_insert_batch", "a2_release_claims"}) {
    INFO("function " << f);
    CHECK(overloads(schema, f) == "1");
  }

  // The data reads back as written; no row has available_at.
  auto rows = store->read("s");
  REQUIRE(rows.size() == 7);
  for (const auto& e : rows) CHECK_FALSE(e.available_at.has_value());
  CHECK(rows[0].id == "e1");
  CHECK(rows[0].payload == a2::Json{{"n", 1}});
  CHECK(rows[0].claim_holder == std::optional<std::string>("w1"));
  CHECK(rows[3].failure_count == 1);
  CHECK(rows[5].lane == std::optional<std::string>("L"));

  // head and held_claims on version-1 rows.
  CHECK(store->head("s").head_index == 7);
  CHECK(store->head("s").clear_index == 0);
  CHECK(store->head("c").head_index == 3);
  CHECK(store->head("c").clear_index == 3);
  CHECK(held(*store, "s", "w1") == std::vector<Held>{{1, 1, kT0 + 30000}, {2, 1, kT0 + 30000}});
  CHECK(held(*store, "s", "w2") == std::vector<Held>{{3, 1, kT0 + 30000}});  // 4 failed.

  // release_claims, then bounded claims: available are 1 (released), 4 (failed), 5 and 6 (7
  // waits behind 6 in lane L).
  auto released = store->release_claims({.session_id = "s", .holder = "w1", .claims = {{1, 1}}});
  CHECK(released.released == std::vector<std::int64_t>{1});
  CHECK(released.not_held.empty());
  auto first = claim(*store, "w3", 1);
  REQUIRE(first.verdict == a2::ClaimVerdict::claimed);
  CHECK(indexes(first) == std::vector<std::int64_t>{1});
  CHECK(first.events.at(0).attempt_count == 2);
  CHECK(indexes(claim(*store, "w3", 2)) == std::vector<std::int64_t>{4, 5});

  // A delayed retry: 4 fails with a retry time; the claim takes 6, then answers busy until it.
  const std::int64_t now = kT0 + 1000;
  auto failed = store->fail_attempt({.session_id = "s",
                                     .index = 4,
                                     .attempt = 2,
                                     .error = "again",
                                     .max_failures = 3,
                                     .retry_at_ms = now + 5000});
  CHECK(failed.verdict == a2::FailVerdict::failed);
  CHECK(store->read("s").at(3).available_at == std::optional<std::int64_t>(now + 5000));
  CHECK(indexes(claim(*store, "w3", std::nullopt)) == std::vector<std::int64_t>{6});
  auto busy = claim(*store, "w3", std::nullopt);
  CHECK(busy.verdict == a2::ClaimVerdict::busy);
  CHECK(busy.retry_at == now + 5000);

  // Scheduled work: an appended event and a completion's child.
  a2::NewEvent later;
  later.id = "later";
  later.type = "t";
  later.available_at_ms = now + 2000;
  auto appended = store->append("s", {later});
  CHECK(appended.events.at(0).index == 8);
  CHECK(appended.events.at(0).available_at == std::optional<std::int64_t>(now + 2000));
  a2::ChildEvent child{"child", "t", nullptr, std::nullopt, false, now + 3000};
  auto done =
      store->complete_attempt({.session_id = "s", .index = 1, .attempt = 2, .events = {child}});
  REQUIRE(done.verdict == a2::CompleteVerdict::completed);
  CHECK(done.events.at(0).index == 9);
  CHECK(done.events.at(0).available_at == std::optional<std::int64_t>(now + 3000));
  clock->set(now + 5000);
  CHECK(indexes(claim(*store, "w3", std::nullopt)) == std::vector<std::int64_t>{4, 8, 9});

  // A second open changes nothing and still works.
  store->close();
  auto again = open_at(schema, clock);
  CHECK(versions(schema) == "1,2");
  CHECK(again->head("s").head_index == 9);
  CHECK(again->read("s").size() == 9);
}

TEST_CASE("open of a new schema records version 2 only and is idempotent",
          "[postgres][migration]") {
  const std::string schema = next_schema();
  auto clock = std::make_shared<a2::ManualClock>(kT0);
  auto store = open_at(schema, clock);
  (void)open_at(schema, clock);
  CHECK(versions(schema) == "2");
  CHECK(sql(schema,
            "select count(*) from pg_attribute where attrelid = 'a2_events'::regclass "
            "and attname = 'available_at' and not attisdropped") == "1");
  // A new table lists available_at last, as a migrated one does.
  CHECK(sql(schema,
            "select attname from pg_attribute where attrelid = 'a2_events'::regclass "
            "and attnum > 0 and not attisdropped order by attnum desc limit 1") == "available_at");
}

// docs/postgres-layout.md#fillfactor: open() gives a2_events room for HOT claims (fillfactor 45)
// when the table has no fillfactor, keeps an operator's own, and the original columns still
// take the original package's plain statements.
TEST_CASE("open sets a2_events' fillfactor unless one is set", "[postgres][migration]") {
  auto clock = std::make_shared<a2::ManualClock>(kT0);
  const std::string fresh = next_schema();
  auto store = open_at(fresh, clock);
  const std::string reloptions =
      "select array_to_string(reloptions, ',') from pg_class where oid = 'a2_events'::regclass";
  CHECK(sql(fresh, reloptions) == "fillfactor=45");
  // A claim of rows written by a plain insert (as the original package writes them).
  (void)sql(fresh,
            "insert into a2_events (session_id, idx, event_id, event_type, payload, created_at) "
            "select 'p', g, 'p-' || g, 't', 'null', 1 from generate_series(1, 50) g "
            "returning idx");
  auto claim = store->claim_available({.session_id = "p", .holder = "w", .ttl_ms = 1000});
  CHECK(claim.events.size() == 50);

  const std::string migrated = version_1_data();
  (void)sql(migrated, "alter table a2_events set (fillfactor = 70)");
  (void)open_at(migrated, clock);
  CHECK(versions(migrated) == "1,2");
  CHECK(sql(migrated, reloptions) == "fillfactor=70");
}

// The predicate of `a2_events_pending_lane` (docs/postgres-layout.md#indexes).
std::string lane_index_predicate(const std::string& schema) {
  return sql(schema,
             "select pg_get_expr(indpred, indrelid) from pg_index "
             "where indexrelid = 'a2_events_pending_lane'::regclass");
}

// Lane L of session `s` on `store`: two events, the second waits behind the first, then gets the
// lane when the first completes; a lane-less event beside them is claimable at once.
void lane_hand_off(a2::Store& store, const std::string& s) {
  a2::NewEvent first, second, free;
  first.id = s + "-l1";
  second.id = s + "-l2";
  free.id = s + "-free";
  first.type = second.type = free.type = "t";
  first.lane = second.lane = "L";
  const auto base = store.head(s).head_index;
  (void)store.append(s, {first, second, free});
  auto claimed = store.claim_available({.session_id = s, .holder = "w", .ttl_ms = 30000});
  REQUIRE(claimed.verdict == a2::ClaimVerdict::claimed);
  CHECK(indexes(claimed) == std::vector<std::int64_t>{base + 1, base + 3});
  auto done = store.complete_attempt({.session_id = s, .index = base + 1, .attempt = 1});
  REQUIRE(done.verdict == a2::CompleteVerdict::completed);
  auto next = store.claim_available({.session_id = s, .holder = "w", .ttl_ms = 30000});
  CHECK(indexes(next) == std::vector<std::int64_t>{base + 2});
}

// A new schema's lane index leaves out rows without a lane; open() keeps an earlier build's
// index (no rebuild), and the documented replacement without blocking writes gives it the new
// predicate. Lanes work with each.
TEST_CASE("the lane index holds rows with a lane; open keeps an earlier build's",
          "[postgres][migration]") {
  auto clock = std::make_shared<a2::ManualClock>(kT0);
  const std::string fresh = next_schema();
  auto store = open_at(fresh, clock);
  CHECK(lane_index_predicate(fresh) == "((processed_at IS NULL) AND (lane IS NOT NULL))");
  lane_hand_off(*store, "fresh");

  const std::string migrated = version_1_data();
  CHECK(lane_index_predicate(migrated) == "(processed_at IS NULL)");
  auto old_store = open_at(migrated, clock);
  CHECK(lane_index_predicate(migrated) == "(processed_at IS NULL)");
  lane_hand_off(*old_store, "before");

  // docs/postgres-layout.md#indexes, statement by statement: the concurrent ones outside a
  // transaction, the two renames in one (a multi-statement query is one implicit transaction).
  (void)sql(migrated,
            "create index concurrently a2_events_pending_lane_next on a2_events "
            "(session_id, lane, idx) where processed_at is null and lane is not null");
  (void)sql(migrated,
            "alter index a2_events_pending_lane rename to a2_events_pending_lane_old; "
            "alter index a2_events_pending_lane_next rename to a2_events_pending_lane");
  (void)sql(migrated, "drop index concurrently a2_events_pending_lane_old");
  CHECK(lane_index_predicate(migrated) == "((processed_at IS NULL) AND (lane IS NOT NULL))");
  CHECK(sql(migrated,
            "select count(*) from pg_indexes where schemaname = current_schema() "
            "and tablename = 'a2_events' and indexname like 'a2_events_pending_lane%'") == "1");
  lane_hand_off(*old_store, "after");
  old_store->close();
  auto reopened = open_at(migrated, clock);
  lane_hand_off(*reopened, "reopened");
}

TEST_CASE("open refuses a newer schema version and changes nothing", "[postgres][migration]") {
  const std::string schema = next_schema();
  auto clock = std::make_shared<a2::ManualClock>(kT0);
  {
    auto store = open_at(schema, clock);
    a2::NewEvent e;
    e.id = "e1";
    e.type = "t";
    (void)store->append("s", {e});
  }
  sql(schema, "insert into a2_schema_version (version) values (3)");
  // A later version leaves its own mark, so this library applies its schema.sql again.
  mark_as_other_build(schema, 3);
  // Stands for what a later version changed: applying this library's schema.sql re-creates it,
  // unless the refused open rolls back.
  sql(schema, "drop function a2_release_claims(text, text, bigint, bigint[], bigint[], bigint)");
  try {
    (void)open_at(schema, clock);
    FAIL("open of a version-3 schema succeeded");
  } catch (const a2::Error& e) {
    INFO("message: " << e.what());
    CHECK(e.code() == a2::ErrorCode::store_unavailable);
  }
  // Rolled back: the function dropped above was not re-created, the versions are as they were.
  CHECK(overloads(schema, "a2_release_claims") == "0");
  CHECK(versions(schema) == "2,3");
  CHECK(sql(schema, "select count(*) from a2_events") == "1");
}

TEST_CASE("open replaces the release_claims signature of earlier version-2 builds",
          "[postgres][migration]") {
  // A schema set up by a build of version 2 before the snooze (release_claims with
  // available_at_ms): its a2_release_claims took no available_at_ms, and its mark holds another
  // digest. Its body stands here as one that fails, so a call reaching it cannot pass.
  const std::string schema = next_schema();
  auto clock = std::make_shared<a2::ManualClock>(kT0);
  {
    auto store = open_at(schema, clock);
    a2::NewEvent e;
    e.type = "t";
    e.id = "e1";
    (void)store->append("s", {e});
    e.id = "e2";
    (void)store->append("s", {e});
    REQUIRE(indexes(claim(*store, "w1", std::nullopt)) == std::vector<std::int64_t>{1, 2});
  }
  const std::string old_signature = "a2_release_claims(text, text, bigint, bigint[], bigint[])";
  const std::string new_signature =
      "a2_release_claims(text, text, bigint, bigint[], bigint[], bigint)";
  sql(schema, "drop function " + new_signature);
  sql(schema,
      "create function a2_release_claims(s text, holder text, now_ms bigint, "
      "claim_indexes bigint[], claim_attempts bigint[], out r_released bigint[], "
      "out r_not_held bigint[]) language plpgsql as $$ begin "
      "raise exception 'the previous build''s a2_release_claims'; end $$");
  mark_as_other_build(schema);
  REQUIRE(overloads(schema, "a2_release_claims") == "1");
  REQUIRE(sql(schema, "select to_regprocedure('" + old_signature + "')::text") != "");

  auto store = open_at(schema, clock);
  CHECK(versions(schema) == "2");
  CHECK(overloads(schema, "a2_release_claims") == "1");
  CHECK(sql(schema, "select to_regprocedure('" + old_signature + "')::text").empty());
  CHECK(sql(schema, "select to_regprocedure('" + new_signature + "')::text") != "");

  // The data of the earlier build takes a snooze: 1 waits until kT0 + 5000 (2 stays held).
  auto released = store->release_claims(
      {.session_id = "s", .holder = "w1", .claims = {{1, 1}}, .available_at_ms = kT0 + 5000});
  CHECK(released.released == std::vector<std::int64_t>{1});
  CHECK(released.not_held.empty());
  CHECK(store->read("s").at(0).available_at == std::optional<std::int64_t>(kT0 + 5000));
  auto busy = claim(*store, "w2", std::nullopt);
  CHECK(busy.verdict == a2::ClaimVerdict::busy);
  CHECK(busy.retry_at == kT0 + 5000);
  clock->set(kT0 + 5000);
  auto again = claim(*store, "w2", std::nullopt);
  REQUIRE(indexes(again) == std::vector<std::int64_t>{1});
  CHECK(again.events.at(0).attempt_count == 2);
}

TEST_CASE("open replaces the a2_complete_one signature of earlier version-2 builds",
          "[postgres][migration]") {
  // A schema set up by a build before a2_complete_one's apply_work: the old signature stands
  // with a body that fails, so a completion reaching it cannot pass.
  const std::string schema = next_schema();
  auto clock = std::make_shared<a2::ManualClock>(kT0);
  const std::string old_signature =
      "a2_complete_one(text, bigint, bigint, bigint, text[], text[], jsonb, text[], boolean[], "
      "bigint[])";
  {
    auto store = open_at(schema, clock);
    a2::NewEvent e;
    e.type = "t";
    e.id = "e1";
    (void)store->append("s", {e});
  }
  sql(schema,
      "create function a2_complete_one(s text, i bigint, attempt bigint, now_ms bigint, "
      "new_ids text[], new_types text[], new_payloads jsonb, new_lanes text[], "
      "new_settled boolean[], new_available_at bigint[], out r_verdict text, "
      "out r_events a2_events[], out r_work_at bigint) language plpgsql as $$ begin "
      "raise exception 'the previous build''s a2_complete_one'; end $$");
  mark_as_other_build(schema);
  REQUIRE(overloads(schema, "a2_complete_one") == "2");

  auto store = open_at(schema, clock);
  CHECK(overloads(schema, "a2_complete_one") == "1");
  CHECK(sql(schema, "select to_regprocedure('" + old_signature + "')::text").empty());
  auto claimed = claim(*store, "w1", std::nullopt);
  REQUIRE(indexes(claimed) == std::vector<std::int64_t>{1});
  a2::ChildEvent child;
  child.id = "c1";
  child.type = "t";
  auto done =
      store->complete_attempt({.session_id = "s", .index = 1, .attempt = 1, .events = {child}});
  CHECK(done.verdict == a2::CompleteVerdict::completed);
  CHECK(indexes(claim(*store, "w1", std::nullopt)) == std::vector<std::int64_t>{2});
}

TEST_CASE("open keeps the one-event append signatures of earlier builds as calls of the new",
          "[postgres][migration]") {
  // A schema set up by a build before check_id (docs/postgres-layout.md#check-id): its
  // a2_append_one_by_reply and a2_append_group took five arguments. They stand here with bodies
  // that fail, so a call still reaching them cannot pass; open makes them calls of the new
  // functions with the probe, so that the earlier build's statements keep working.
  const std::string schema = next_schema();
  auto clock = std::make_shared<a2::ManualClock>(kT0);
  { (void)open_at(schema, clock); }
  sql(schema,
      "create or replace function a2_append_one_by_reply(s text, now_ms bigint, new_id text, "
      "new_type text, new_payload jsonb, out r_index bigint, out r_has_pending boolean, "
      "out r_events a2_events[]) language plpgsql as $$ begin "
      "raise exception 'the previous build''s a2_append_one_by_reply'; end $$");
  sql(schema,
      "create or replace function a2_append_group(ss text[], nows bigint[], new_ids text[], "
      "new_types text[], new_payloads jsonb, out k integer, out r_index bigint, "
      "out r_has_pending boolean, out r_wake text, out r_events a2_events[]) returns setof "
      "record language plpgsql as $$ begin "
      "raise exception 'the previous build''s a2_append_group'; end $$");
  mark_as_other_build(schema);

  auto store = open_at(schema, clock);
  CHECK(overloads(schema, "a2_append_one_by_reply") == "2");
  CHECK(overloads(schema, "a2_append_group") == "2");
  // This a2's appends: a caller's id, a drawn one, and the caller's again (a replay).
  a2::NewEvent e;
  e.type = "t";
  e.id = "e1";
  CHECK(store->append("s", {e}).events.at(0).index == 1);
  a2::NewEvent drawn;
  drawn.type = "t";
  CHECK(store->append("s", {drawn}).events.at(0).index == 2);
  CHECK(store->append("s", {e}).events.at(0).index == 1);
  // The earlier build's calls, with five arguments, reach the new functions and their probes.
  CHECK(sql(schema,
            "select r_index::text from a2_append_one_by_reply('s', 1, 'e1', 't', 'null'::jsonb)")
            .empty());  // The replay.
  CHECK(sql(schema,
            "select r_index::text from a2_append_one_by_reply('s', 1, 'e3', 't', 'null'::jsonb)") ==
        "3");
  CHECK(sql(schema,
            "set a2.wake_by_reply = on; select string_agg(coalesce(r_index::text, 'replay'), ',' "
            "order by k) from a2_append_group(array['s', 's'], array[1, 1]::bigint[], "
            "array['e1', 'e4'], array['t', 't'], '[null, null]'::jsonb)") == "replay,4");
  CHECK(sql(schema,
            "set a2.wake_by_reply = on; select string_agg(r_index::text, ',' order by k) from "
            "a2_append_group(array['s', 's'], array[1, 1]::bigint[], array['e5', 'e6'], "
            "array['t', 't'], '[null, null]'::jsonb)") == "5,6");
  CHECK(store->read("s").size() == 6);
}

TEST_CASE("open drops the a2_wake helper of earlier builds", "[postgres][migration]") {
  // A schema set up by a build before a2_owe_wake: its write functions called a2_wake (PL/pgSQL,
  // returning void). It stands here with a body that fails, so a write still reaching it cannot
  // pass.
  const std::string schema = next_schema();
  auto clock = std::make_shared<a2::ManualClock>(kT0);
  { (void)open_at(schema, clock); }
  sql(schema,
      "create function a2_wake(s text, events boolean, work boolean) returns void "
      "language plpgsql as $$ begin raise exception 'the previous build''s a2_wake'; end $$");
  mark_as_other_build(schema);
  REQUIRE(overloads(schema, "a2_wake") == "1");

  auto store = open_at(schema, clock);
  CHECK(overloads(schema, "a2_wake") == "0");
  CHECK(overloads(schema, "a2_owe_wake") == "1");
  a2::NewEvent e;
  e.type = "t";
  e.id = "e1";
  CHECK(store->append("s", {e}).events.at(0).index == 1);
  auto claimed = claim(*store, "w1", std::nullopt);
  REQUIRE(indexes(claimed) == std::vector<std::int64_t>{1});
  auto done = store->complete_attempt({.session_id = "s", .index = 1, .attempt = 1, .events = {}});
  CHECK(done.verdict == a2::CompleteVerdict::completed);
}

TEST_CASE("open applies schema.sql only to a schema without this text's mark",
          "[postgres][migration]") {
  const std::string schema = next_schema();
  auto clock = std::make_shared<a2::ManualClock>(kT0);
  // pg_proc.xmin changes when a function is created or replaced: it tells whether an open ran
  // the DDL.
  const std::string function_version =
      "select xmin::text from pg_proc where proname = 'a2_append_one' and pronamespace = '\"" +
      schema + "\"'::regnamespace";
  (void)open_at(schema, clock);
  const std::string mark = sql(schema, "select obj_description('a2_schema_version'::regclass)");
  CHECK(mark.rfind("a2 schema version 2, schema.sql fnv1a-64 ", 0) == 0);
  const std::string first = sql(schema, function_version);
  REQUIRE_FALSE(first.empty());

  (void)open_at(schema, clock);  // The same text: no DDL.
  CHECK(sql(schema, function_version) == first);

  sql(schema, "comment on table a2_schema_version is null");  // Mark removed: applied again.
  auto store = open_at(schema, clock);
  CHECK(sql(schema, function_version) != first);
  CHECK(sql(schema, "select obj_description('a2_schema_version'::regclass)") == mark);
  a2::NewEvent e;
  e.id = "e1";
  e.type = "t";
  CHECK(store->append("s", {e}).events.at(0).index == 1);
}

}  // namespace

}  // namespace a2::postgres_test::migration_test
