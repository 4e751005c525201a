// SPDX-License-Identifier: MIT
// Postgres-only tests: the parts of the contract only Postgres has (119 [P], 125 [P]), the one
// round trip per operation, opening, and server faults (immediate shutdown mid-load).
#include <algorithm>
#include <atomic>
#include <barrier>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <pqxx/pqxx>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "a2/postgres.hpp"
#include "postgres/calls/append_group.hpp"
#include "postgres/calls/claim_group.hpp"
#include "postgres/calls/complete_group.hpp"
#include "postgres/connection_pool.hpp"
#include "schema_store.hpp"
#include "servers/postgres_server.hpp"
#include "support/support.hpp"

namespace a2::postgres_test::postgres_tests {
namespace {

using a2::ErrorCode;
using a2::Json;
using a2::test::PostgresServer;

constexpr std::int64_t kT0 = 1'000'000;

using Fixture = a2::postgres_test::SchemaStore;
namespace calls = a2::postgres::detail::calls;

Fixture open_fixture(const std::string& connection, std::size_t pool_size = 4) {
  return a2::postgres_test::open_schema_store({.tag = "p", .t0 = kT0, .connection = connection},
                                              {.pool_size = pool_size});
}

Fixture fresh() { return open_fixture(PostgresServer::shared().connection()); }

// One value from SQL run directly against the fixture's schema.
std::int64_t sql_count(const Fixture& f, const std::string& query) {
  return a2::postgres_test::sql(f, query)[0][0].as<std::int64_t>();
}

a2::NewEvent ev_id(std::string id) {
  a2::NewEvent e;
  e.id = std::move(id);
  e.type = "t";
  return e;
}

std::vector<a2::NewEvent> evs_with_ids(const std::string& prefix, int n) {
  std::vector<a2::NewEvent> out;
  for (int i = 1; i <= n; ++i) out.push_back(ev_id(prefix + std::to_string(i)));
  return out;
}

template <class F>
std::string require_error(ErrorCode code, F&& f) {
  try {
    f();
  } catch (const a2::Error& e) {
    INFO("message: " << e.what());
    REQUIRE(to_string(e.code()) == to_string(code));
    return e.what();
  }
  FAIL("expected a2::Error " << to_string(code) << ", nothing was thrown");
  return {};
}

// Everything observable about a session, as JSON.
Json observe(a2::Store& store, const std::string& s) {
  Json rows = Json::array();
  for (const auto& e : store.read(s))
    rows.push_back({e.index, e.id, e.type, e.payload, e.processed_at.value_or(-1), e.attempt_count,
                    e.claim_holder.value_or("")});
  return {{"rows", rows}, {"has_pending", store.append(s, {}).has_pending}};
}

// Reclaims the old lifetime of `s` to the end; the events deleted. Fails after `max_calls`.
std::int64_t reclaim_all(a2::Store& store, const std::string& s, int max_calls) {
  std::int64_t deleted = 0;
  for (int calls = 0;; ++calls) {
    REQUIRE(calls < max_calls);
    auto r = store.reclaim(s);
    deleted += r.deleted;
    if (r.done) return deleted;
  }
}

a2::ClearResult clear(a2::Store& store, const std::string& s = "s") {
  return store.clear({.session_id = s, .if_last_index = std::nullopt, .cause = std::nullopt});
}

// a2_claim returns the claimed rows in the order its update met them (for the TID scan, the
// rows' physical order), not by index (docs/postgres-layout.md#a2_claim): the caller sorts them.
// Rows written in descending index order lie on their page in that order, so the claim's rows come
// back descending, and the store must still answer in index order, bounded or not, as must
// a2_claim_available, whose array claim_next reads.
// An append of one event (a2_append_one) returns a replay's rows as one JSON cell, r_rows
// (docs/postgres-layout.md#calling-convention), not in the stored-event columns a read returns:
// a replayed row must come back exactly as a read decodes it, with every column set that such a
// replay can meet (one without cause or lane, as its request), texts with quotes, backslashes,
// control characters and non-ASCII included.
TEST_CASE("a one-event append replays every stored column as a read returns it",
          "[postgres][append][replay][S5]") {
  auto f = fresh();
  const std::string odd = "q\"uote b\\ack\nline\ttab \x01\x1f \u00fc\u00df \U0001F642 </x>";
  auto claim_one = [&](const std::string& holder) {
    auto claimed = f->claim_available({.session_id = "s",
                                       .holder = holder,
                                       .ttl_ms = 30000,
                                       .expires_at_ms = std::nullopt,
                                       .exclude_indexes = {},
                                       .max_events = 1});
    REQUIRE(claimed.events.size() == 1);
    return claimed.events.at(0);
  };
  // p: completed with a child (processed_at, processed_by_attempt, returned_event_ids).
  a2::NewEvent parent = ev_id("p");
  parent.payload = Json{{"text", odd}, {"n", -12345678901234}, {"f", 0.5}, {"list", {1, "2"}}};
  (void)f->append("s", {parent});
  const auto p = claim_one("w");
  REQUIRE(f->complete_attempt({.session_id = "s",
                               .index = p.index,
                               .attempt = p.attempt_count,
                               .events = {{"c", "t", Json{{"k", odd}}, std::nullopt, true,
                                           std::nullopt}}})
              .verdict == a2::CompleteVerdict::completed);
  // d: dead-lettered (failure_count, last_failed_at, last_failed_attempt, last_error, failed_at).
  (void)f->append("s", {ev_id("d")});
  const auto d = claim_one("w");
  REQUIRE(f->fail_attempt({.session_id = "s",
                           .index = d.index,
                           .attempt = d.attempt_count,
                           .error = odd,
                           .max_failures = 1})
              .verdict == a2::FailVerdict::dead_lettered);
  // r: failed with a delayed retry (available_at).
  (void)f->append("s", {ev_id("r")});
  const auto r = claim_one("w");
  REQUIRE(f->fail_attempt({.session_id = "s",
                           .index = r.index,
                           .attempt = r.attempt_count,
                           .error = "again",
                           .max_failures = 3,
                           .retry_at_ms = kT0 + 60000})
              .verdict == a2::FailVerdict::failed);
  // h: held (first_claimed_at, last_claimed_at, attempt_count, claim_holder, claim_expires_at).
  (void)f->append("s", {ev_id("h")});
  (void)claim_one("holder " + odd);
  const std::vector<a2::StoredEvent> rows = f->read("s");
  REQUIRE(rows.size() == 5);
  for (const auto& stored : rows) {
    if (stored.cause) continue;  // The child: a one-event append has no cause to replay it by.
    INFO("event " << stored.id);
    auto replay = f->append("s", {ev_id(stored.id)});
    REQUIRE(replay.events.size() == 1);
    CHECK(a2::conformance::to_json(replay.events[0]) == a2::conformance::to_json(stored));
  }
  // The rows replayed above set those columns.
  CHECK(rows[0].returned_event_ids == std::vector<std::string>{"c"});
  CHECK(rows[0].payload.at("text") == odd);
  CHECK(rows[2].last_error == odd);
  CHECK(rows[2].failed_at.has_value());
  CHECK(rows[3].available_at == kT0 + 60000);
  CHECK(rows[4].claim_holder == "holder " + odd);
  CHECK(f->read("s").size() == 5);  // Replays write nothing.
}

TEST_CASE("a claim answers in index order whatever order the rows lie in", "[postgres][claim]") {
  auto f = fresh();
  for (const char* s : {"desc", "desc-bounded", "desc-array", "desc-raw"})
    for (int idx = 5; idx >= 1; --idx)
      a2::postgres_test::sql(
          f, "insert into a2_events (session_id, idx, event_id, event_type, payload, created_at) "
             "values ('" + std::string(s) + "', " + std::to_string(idx) + ", '" + s + "-" +
                 std::to_string(idx) + "', 't', '{}', 1)");
  // The precondition: the function's own rows come back in the rows' order, descending.
  auto raw = a2::postgres_test::sql(
      f, "select idx from a2_claim('desc-raw', 'w', " + std::to_string(kT0) + ", " +
             std::to_string(kT0 + 1000) + ", '{}', null)");
  std::vector<std::int64_t> raw_order;
  for (const auto& row : raw) raw_order.push_back(row[0].as<std::int64_t>());
  REQUIRE(raw_order == std::vector<std::int64_t>{5, 4, 3, 2, 1});

  auto claim = [&](const std::string& s, std::optional<std::int64_t> max) {
    std::vector<std::int64_t> out;
    for (const auto& e : f->claim_available({.session_id = s,
                                             .holder = "w",
                                             .ttl_ms = 1000,
                                             .expires_at_ms = std::nullopt,
                                             .exclude_indexes = {},
                                             .max_events = max})
                             .events)
      out.push_back(e.index);
    return out;
  };
  CHECK(claim("desc", std::nullopt) == std::vector<std::int64_t>{1, 2, 3, 4, 5});
  CHECK(claim("desc-bounded", 3) == std::vector<std::int64_t>{1, 2, 3});
  auto array = a2::postgres_test::sql(
      f, "select (e).idx from (select unnest(r_events) e from a2_claim_available('desc-array', "
         "'w', " + std::to_string(kT0) + ", " + std::to_string(kT0 + 1000) + ", '{}', null)) x");
  std::vector<std::int64_t> array_order;
  for (const auto& row : array) array_order.push_back(row[0].as<std::int64_t>());
  CHECK(array_order == std::vector<std::int64_t>{1, 2, 3, 4, 5});
}

TEST_CASE("clear maps the unique violation of a taken marker id to partial_duplicate_batch",
          "[clear][S119][postgres]") {
  auto f = fresh();
  std::string expected_marker = "g1";  // The id the clear below draws from the IdSource.
  SECTION("owned by a live event of the same session") {
    (void)f->append("s", {ev_id("g1"), ev_id("b")});
  }
  SECTION("owned by another session") {
    (void)f->append("s2", {ev_id("g1")});
    (void)f->append("s", {ev_id("a"), ev_id("b")});
  }
  SECTION("owned by this session below the boundary") {
    (void)f->append("s", {ev_id("g2")});
    REQUIRE(clear(*f.store).clear_index == 2);  // Marker g1.
    (void)f->append("s", {ev_id("b")});  // The next marker id is g2, held by the stale row 1.
    expected_marker = "g2";
  }
  auto before = observe(*f.store, "s");
  auto clears_before =
      sql_count(f, "select count(*) + coalesce(sum(clear_index), 0) from a2_clears");
  auto message = require_error(ErrorCode::partial_duplicate_batch, [&] { (void)clear(*f.store); });
  REQUIRE(message ==
          "a2 postgres clear: the clear marker id '" + expected_marker + "' already exists");
  REQUIRE(observe(*f.store, "s") == before);
  REQUIRE(sql_count(f, "select count(*) + coalesce(sum(clear_index), 0) from a2_clears") ==
          clears_before);
}

TEST_CASE("reclaim leaves no a2_snapshot row below the boundary once done",
          "[reclaim][S125][postgres]") {
  auto f = fresh();
  (void)f->append("s", evs_with_ids("e", 5));
  f->put_snapshots("s", "r", {{2, Json{{"n", 2}}, {3}}, {4, Json{{"n", 4}}, {5}}});
  f->put_snapshots("s", "q", {{1, Json{{"q", 1}}, {}}});
  REQUIRE(sql_count(f, "select count(*) from a2_snapshot_history") == 1);
  REQUIRE(sql_count(f, "select count(*) from a2_snapshot_pins") == 2);
  REQUIRE(clear(*f.store).clear_index == 6);
  (void)f->append("s", evs_with_ids("n", 3));  // 7..9
  f->put_snapshots("s", "r", {{7, Json{{"n", 7}}, {8}}, {8, Json{{"n", 8}}, {9}}});
  f->put_snapshots("s", "q", {{6, Json{{"q", 6}}, {}}});
  auto state_before =
      f->read_state("s", "r", {.through_index = std::nullopt, .snapshot_through_index = 7});

  REQUIRE(reclaim_all(*f.store, "s", 10) == 5);
  for (const char* table : {"a2_snapshots", "a2_snapshot_history", "a2_snapshot_pins"})
    REQUIRE(sql_count(f, std::string("select count(*) from ") + table +
                             " where session_id = 's' and up_to_index < 6") == 0);
  REQUIRE(sql_count(f, "select count(*) from a2_snapshot_pins where event_index < 6") == 0);
  REQUIRE(sql_count(f, "select count(*) from a2_events where idx < 6") == 0);
  // The new lifetime's checkpoints are untouched: heads r@8 and q@6, history r@7 pinned by 8.
  REQUIRE(sql_count(f, "select count(*) from a2_snapshots") == 2);
  REQUIRE(sql_count(f, "select count(*) from a2_snapshot_history where up_to_index = 7") == 1);
  REQUIRE(sql_count(f, "select count(*) from a2_snapshot_pins") == 2);
  auto state_after =
      f->read_state("s", "r", {.through_index = std::nullopt, .snapshot_through_index = 7});
  REQUIRE(state_after.snapshot->index == state_before.snapshot->index);
  REQUIRE(state_after.head_index == state_before.head_index);
  REQUIRE(state_after.clear_index == std::optional<std::int64_t>(6));
}

TEST_CASE("append reuses a cleared id of its session and reclaim still counts the old event",
          "[append][reclaim][postgres]") {
  auto f = fresh();
  (void)f->append("s", {ev_id("a"), ev_id("b")});
  REQUIRE(clear(*f.store).clear_index == 3);
  SECTION("the stale row is free") {
    auto r = f->append("s", {ev_id("a")});
    REQUIRE(r.events.at(0).index == 4);
    // The old event stays below the boundary for reclaim; its id is released.
    REQUIRE(sql_count(f, "select count(*) from a2_events where idx = 1 and event_id <> 'a'") == 1);
    REQUIRE(reclaim_all(*f.store, "s", 5) == 2);
    REQUIRE(f->append("s", {ev_id("a")}).events.at(0).index == 4);  // Still a replay.
    require_error(ErrorCode::partial_duplicate_batch, [&] { (void)f->append("s2", {ev_id("a")}); });
  }
  SECTION("a stale row locked by other work makes the reuse unavailable instead of waiting") {
    pqxx::connection conn(PostgresServer::shared().connection());
    pqxx::work tx(conn);
    tx.exec("set local search_path to \"" + f.schema + "\"");
    tx.exec("select 1 from a2_events where session_id = 's' and idx = 1 for update");
    auto before = observe(*f.store, "s");
    require_error(ErrorCode::store_unavailable, [&] { (void)f->append("s", {ev_id("a")}); });
    tx.abort();
    REQUIRE(observe(*f.store, "s") == before);
    REQUIRE(f->append("s", {ev_id("a")}).events.at(0).index == 4);
  }
}

// A write racing another transaction that has inserted event "x" into session s1 and not yet
// committed (S239): the write runs in a thread of its own and waits for that transaction's
// outcome, which commit() or abort() decides; either then joins the thread. The destructor ends
// the transaction if a failed check left it open, so the thread never outlives the test.
template <class R>
class RacedWrite {
 public:
  RacedWrite(const Fixture& f, std::function<R()> write)
      : conn_(PostgresServer::shared().connection()), tx_(conn_) {
    tx_.exec("set local search_path to \"" + f.schema + "\"");
    tx_.exec(
        "select a2_append('s1', 1000000, null, array['x'], array['t'], '[null]'::jsonb, "
        "array[null]::bigint[], array[null]::bigint[], array[null]::text[], array[false], "
        "array[null]::bigint[])");
    thread_ = std::thread([this, write = std::move(write)] {
      try {
        result = write();
      } catch (const a2::Error& e) {
        error = std::pair{std::string(to_string(e.code())), std::string(e.what())};
      }
      finished_ = true;
    });
  }
  RacedWrite(const RacedWrite&) = delete;
  RacedWrite& operator=(const RacedWrite&) = delete;
  ~RacedWrite() {
    if (open_) tx_.abort();
    if (thread_.joinable()) thread_.join();
  }

  // Whether the write is still waiting 300 ms after it started.
  bool waiting() {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    return !finished_.load();
  }
  void commit() { end(true); }
  void abort() { end(false); }

  // The message of the write's error, which must carry `code` (after commit() or abort()).
  std::string refusal(ErrorCode code) const {
    REQUIRE_FALSE(result.has_value());
    REQUIRE(error);
    REQUIRE(error->first == to_string(code));
    return error->second;
  }

  std::optional<R> result;
  std::optional<std::pair<std::string, std::string>> error;  // Code and message.

 private:
  void end(bool commit) {
    open_ = false;
    if (commit)
      tx_.commit();
    else
      tx_.abort();
    thread_.join();
  }

  pqxx::connection conn_;
  pqxx::work tx_;
  bool open_ = true;
  std::atomic<bool> finished_{false};
  std::thread thread_;
};

// The one-event append functions skip their probe of the id index when the caller says the ids
// were drawn by its store (check_id, check_ids false): a stored id then fails the insert on the
// unique index, which the store answers by calling again with the probe (S243, S244). With the
// probe (true, or the five arguments of an earlier a2's call) a stored id is answered in the call.
TEST_CASE("the one-event append functions leave drawn ids to the unique index",
          "[postgres][append][S243]") {
  auto f = fresh();
  (void)f->append("s", {ev_id("held")});
  using a2::postgres_test::sql;
  const std::string one =
      "select r_index from a2_append_one_by_reply('s', 1, 'held', 't', 'null'::jsonb";
  REQUIRE_THROWS_AS(sql(f, one + ", false)"), pqxx::unique_violation);
  REQUIRE(sql(f, one + ")")[0][0].is_null());  // The replay.
  REQUIRE(sql(f, one + ", true)")[0][0].is_null());
  // The set path (a2.wake_by_reply on): s2's new event and s's replay of "held".
  const std::string group =
      "set a2.wake_by_reply = on; select k, r_index from a2_append_group(array['s2', 's'], "
      "array[1, 1]::bigint[], array['new', 'held'], array['t', 't'], '[null, null]'::jsonb";
  REQUIRE_THROWS_AS(sql(f, group + ", false)"), pqxx::unique_violation);
  REQUIRE(f->read("s2").empty());
  for (const std::string check : {")", ", true)"}) {
    INFO("call: " << check);
    const auto rows = sql(f, group + check + " order by k");
    REQUIRE(rows.size() == 2);
    CHECK(rows[0][1].as<std::int64_t>() == 1);
    CHECK(rows[1][1].is_null());
    (void)sql(f, "delete from a2_events where session_id = 's2'");
  }
  CHECK(f->read("s").size() == 1);
}

// Both append paths probe the id index and then insert; an insert of an id that another
// transaction is inserting waits for that transaction's outcome. When it commits, the insert
// fails (unique violation): the one-event path (a2_append_one_by_reply) calls again and gets the
// foreign id's own error, the general path (a2_append) hears the translation's (S239).
TEST_CASE("an append of an id another transaction is inserting waits for its outcome",
          "[append][postgres][S239]") {
  auto f = fresh();  // The default options: append groups on.
  (void)f->append("s2", {ev_id("warm")});
  // One unsettled event (a2_append_one_by_reply), or a laned one (a2_append).
  const bool laned = GENERATE(false, true);
  INFO("laned: " << laned);
  auto x = ev_id("x");
  if (laned) x.lane = "l";
  RacedWrite<a2::AppendResult> race(f, [&] { return f->append("s2", {x}); });
  REQUIRE(race.waiting());  // On the uncommitted row holding "x".
  SECTION("the other transaction commits: the id is foreign to s2") {
    race.commit();
    REQUIRE(race.refusal(ErrorCode::partial_duplicate_batch) ==
            (laned ? "a2 postgres append: an event id of this write was stored meanwhile by a "
                     "concurrent write (unique violation of a2_events_event_id_key); nothing "
                     "changed"
                   : "a2 postgres append: event id 'x' already belongs to another session"));
    REQUIRE(f->read("s1").size() == 1);
    REQUIRE(f->read("s2").size() == 1);
  }
  SECTION("the other transaction aborts: the append goes through") {
    race.abort();
    REQUIRE_FALSE(race.error.has_value());
    REQUIRE(race.result->events.at(0).index == 2);
    REQUIRE(f->read("s1").empty());
    REQUIRE(f->read("s2").size() == 2);
  }
}

TEST_CASE("a completion whose child id another transaction is inserting waits for its outcome",
          "[complete][postgres][S239]") {
  auto f = fresh();  // The default options: completion groups on.
  (void)f->append("s2", {ev_id("parent")});
  const auto claimed = f->claim_available({.session_id = "s2",
                                           .holder = "w",
                                           .ttl_ms = 30000,
                                           .expires_at_ms = std::nullopt,
                                           .exclude_indexes = {},
                                           .max_events = 1});
  REQUIRE(claimed.events.size() == 1);
  const auto parent = claimed.events.at(0);
  RacedWrite<a2::CompleteResult> race(f, [&] {
    return f->complete_attempt(
        {.session_id = "s2",
         .index = parent.index,
         .attempt = parent.attempt_count,
         .events = {{"x", "t", Json(nullptr), std::nullopt, false, std::nullopt}}});
  });
  REQUIRE(race.waiting());  // On the uncommitted row holding "x".
  SECTION("the other transaction commits: the child id is taken") {
    race.commit();
    REQUIRE(race.refusal(ErrorCode::partial_duplicate_batch) ==
            "a2 postgres complete_attempt: an event id of this write was stored meanwhile by a "
            "concurrent write (unique violation of a2_events_event_id_key); nothing changed");
    const auto rows = f->read("s2");
    REQUIRE(rows.size() == 1);  // The parent, still claimed and unfinished.
    REQUIRE_FALSE(rows.at(0).processed_at.has_value());
    REQUIRE(rows.at(0).claim_holder == std::optional<std::string>("w"));
    REQUIRE(f->read("s1").size() == 1);
  }
  SECTION("the other transaction aborts: the completion goes through") {
    race.abort();
    REQUIRE_FALSE(race.error.has_value());
    REQUIRE(race.result->verdict == a2::CompleteVerdict::completed);
    REQUIRE(f->read("s2").size() == 2);
    REQUIRE(f->read("s1").empty());
  }
}

TEST_CASE("a store survives its connections being terminated", "[connections][postgres]") {
  auto& server = PostgresServer::shared();
  const std::string app = "a2_terminated";
  auto f = open_fixture(server.connection() + " application_name=" + app, 1);
  (void)f->append("s", {ev_id("a")});
  {
    pqxx::connection admin(server.connection());
    pqxx::nontransaction tx(admin);
    auto killed = tx.exec(
        "select pg_terminate_backend(pid) from pg_stat_activity "
        "where application_name = '" +
        app + "'");
    REQUIRE(killed.size() == 1);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // The pooled connection is gone, and seen gone before use (the server's FATAL message and end
  // of file are waiting on its socket): a new connection serves the next call.
  auto r = f->append("s", {ev_id("b")});
  REQUIRE(r.events.at(0).index == 2);
  REQUIRE(f->read("s").size() == 2);
}

TEST_CASE("open validates the schema name and reports an unreachable server as unavailable",
          "[open][postgres]") {
  auto connection = PostgresServer::shared().connection();
  for (const char* bad : {"", "Upper", "has space", "semi;colon", "1digit", "quo\"te"}) {
    INFO("schema " << bad);
    require_error(ErrorCode::invalid_argument, [&] {
      a2::postgres::Options options;
      options.connection = connection;
      options.schema = bad;
      (void)a2::postgres::open(options);
    });
  }
  // Write groups: at most 64 places in flight of each kind.
  for (const bool appends : {true, false}) {
    INFO((appends ? "append_groups" : "work_groups") << " 65");
    require_error(ErrorCode::invalid_argument, [&] {
      a2::postgres::Options options;
      options.connection = connection;
      (appends ? options.append_groups : options.work_groups) = 65;
      (void)a2::postgres::open(options);
    });
  }
  require_error(ErrorCode::store_unavailable, [&] {
    a2::postgres::Options options;
    options.connection = "host=127.0.0.1 port=1 user=postgres dbname=postgres connect_timeout=2";
    (void)a2::postgres::open(options);
  });
  // Opening an existing schema again is fine (schema.sql is idempotent) and sees its data.
  auto f = fresh();
  (void)f->append("s", {ev_id("a")});
  a2::postgres::Options options;
  options.connection = connection;
  options.schema = f.schema;
  auto again = a2::postgres::open(options);
  REQUIRE(again->read("s").size() == 1);
  again->close();
  again->close();
  require_error(ErrorCode::store_unavailable, [&] { (void)again->read("s"); });
}

// The server log lines of statements sent by connections named `app`.
std::size_t statements_logged(const std::string& log, std::size_t from, const std::string& app) {
  std::size_t count = 0;
  std::istringstream in(log.substr(std::min(from, log.size())));
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(app + "|", 0) != 0) continue;
    if (line.find("LOG:  execute ") != std::string::npos ||
        line.find("LOG:  statement: ") != std::string::npos)
      ++count;
  }
  return count;
}

TEST_CASE("every operation is one statement, so one round trip", "[round_trips][postgres]") {
  PostgresServer server({"log_statement=all", "log_line_prefix=%a|"});
  const std::string app = "a2_round_trips";
  auto f = open_fixture(server.connection() + " application_name=" + app, 1);
  auto& store = *f.store;

  auto claim = [&] {
    return store.claim_available({.session_id = "s",
                                  .holder = "w1",
                                  .ttl_ms = 30000,
                                  .expires_at_ms = std::nullopt,
                                  .exclude_indexes = {}});
  };
  std::int64_t next = 0;  // Ids of the events made below.
  auto fresh_id = [&] { return "e" + std::to_string(++next); };
  std::vector<std::pair<std::string, std::function<void()>>> operations = {
      {"append",
       [&] {
         (void)store.append("s", {ev_id(fresh_id()), ev_id(fresh_id())});
       }},
      {"append (one event)", [&] { (void)store.append("s", {ev_id(fresh_id())}); }},
      {"append (one event, id drawn by the store)",
       [&] {
         a2::NewEvent e;
         e.type = "t";
         (void)store.append("s", {e});
       }},
      {"append (empty)", [&] { (void)store.append("s", {}); }},
      {"claim_available", [&] { (void)claim(); }},
      {"claim_available (bounded)",
       [&] {
         (void)store.claim_available({.session_id = "s",
                                      .holder = "w1",
                                      .ttl_ms = 30000,
                                      .expires_at_ms = std::nullopt,
                                      .exclude_indexes = {},
                                      .max_events = 1});
       }},
      {"append (scheduled)",
       [&] {
         a2::NewEvent e = ev_id(fresh_id());
         e.available_at_ms = kT0 + 60000;
         (void)store.append("s", {e});
       }},
      {"release_claims",
       [&] {
         (void)store.release_claims({.session_id = "s", .holder = "w1", .claims = {{1, 1}}});
       }},
      {"release_claims (snooze)",
       [&] {
         (void)store.release_claims({.session_id = "s",
                                     .holder = "w1",
                                     .claims = {{1, 1}},
                                     .available_at_ms = kT0 + 60000});
       }},
      {"held_claims", [&] { (void)store.held_claims("s", "w1"); }},
      {"head", [&] { (void)store.head("s"); }},
      {"renew_claims",
       [&] {
         (void)store.renew_claims({.session_id = "s",
                                   .holder = "w1",
                                   .claims = {{1, 1}},
                                   .ttl_ms = 30000,
                                   .expires_at_ms = std::nullopt});
       }},
      {"complete_attempt",
       [&] {
         auto c = claim();
         if (!c.events.empty())
           (void)store.complete_attempt(
               {.session_id = "s",
                .index = c.events.front().index,
                .attempt = c.events.front().attempt_count,
                .events = {{fresh_id(), "child", nullptr, std::nullopt, false, std::nullopt}}});
       }},
      {"fail_attempt",
       [&] {
         (void)store.fail_attempt(
             {.session_id = "s", .index = 2, .attempt = 1, .error = "x", .max_failures = 1});
       }},
      {"fail_attempt (delayed retry)",
       [&] {
         (void)store.fail_attempt({.session_id = "s",
                                   .index = 1,
                                   .attempt = 1,
                                   .error = "x",
                                   .max_failures = 3,
                                   .retry_at_ms = kT0 + 60000});
       }},
      {"redrive",
       [&] {
         (void)store.redrive({.session_id = "s", .index = 2, .action = a2::RedriveAction::skip});
       }},
      {"dead_letters", [&] { (void)store.dead_letters("s"); }},
      {"put_snapshots",
       [&] {
         store.put_snapshots("s", "r", {{1, Json{{"n", 1}}, {3}}});
       }},
      {"read", [&] { (void)store.read("s"); }},
      {"read_history", [&] { (void)store.read_history("s"); }},
      {"read_range", [&] { (void)store.read_range("s", 0, 2); }},
      {"read_tail", [&] { (void)store.read_tail("s", 1); }},
      {"read_events", [&] { (void)store.read_events("s", 0); }},
      {"read_feed_page", [&] { (void)store.read_feed_page("s", 0); }},
      {"read_state", [&] { (void)store.read_state("s", "r"); }},
      {"read_states",
       [&] {
         (void)store.read_states(
             "r", {{"s", std::nullopt, std::nullopt}, {"s2", std::nullopt, std::nullopt}});
       }},
      {"patch_presence",
       [&] { (void)store.patch_presence("s", {.participant = "p", .state = 1, .ttl_ms = 1000}); }},
      {"read_presence", [&] { (void)store.read_presence("s"); }},
      {"clear", [&] { (void)clear(store); }},
      {"reclaim", [&] { (void)store.reclaim("s"); }},
  };
  // Statements are prepared on a connection's first use of them: warm up first.
  for (auto& [name, op] : operations) op();
  for (auto& [name, op] : operations) {
    INFO("operation " << name);
    auto offset = server.log().size();
    op();
    REQUIRE(statements_logged(server.log(), offset, app) == 1);
  }
  // A replayed one-event append too: a2_append_one finds the id taken and answers as
  // a2_append does, in the same call.
  const std::string id = fresh_id();
  auto first = store.append("s", {ev_id(id)});
  auto offset = server.log().size();
  auto replay = store.append("s", {ev_id(id)});
  REQUIRE(statements_logged(server.log(), offset, app) == 1);
  REQUIRE(replay.events.size() == 1);
  REQUIRE(replay.events.at(0).index == first.events.at(0).index);
  // An id the store draws that a row holds already (the IdSource repeats one): the first
  // statement skips the probe and its insert fails, the second probes and answers the replay
  // (docs/postgres-layout.md#a2_append_one). The fixture's IdSource draws g1, g2, ...
  const std::string repeated = "g" + std::to_string(std::stoll(f.ids->next_id().substr(1)) + 1);
  const auto owner = store.append("s", {ev_id(repeated)});
  offset = server.log().size();
  a2::NewEvent drawn;
  drawn.type = "t";
  const auto again = store.append("s", {drawn});
  REQUIRE(statements_logged(server.log(), offset, app) == 2);
  REQUIRE(again.events.size() == 1);
  REQUIRE(again.events.at(0).id == repeated);
  REQUIRE(again.events.at(0).index == owner.events.at(0).index);
  // complete_attempts, and complete_attempt with claim_next: the completions and the claim run
  // in one function call. Session "b" warms the statements up, "b2" is measured.
  for (const std::string s : {"b", "b2"}) {
    INFO("session " << s);
    (void)store.append(s, evs_with_ids(s + "-", 5));
    auto claimed = store.claim_available({.session_id = s,
                                          .holder = "w1",
                                          .ttl_ms = 30000,
                                          .expires_at_ms = std::nullopt,
                                          .exclude_indexes = {},
                                          .max_events = 2});
    REQUIRE(claimed.events.size() == 2);
    const a2::ClaimNext claim_next{.holder = "w1", .ttl_ms = 30000};
    offset = server.log().size();
    auto many = store.complete_attempts(
        {.session_id = s,
         .completions = {{2, 1, {{s + "-c", "child", nullptr, std::nullopt, true, std::nullopt}}},
                         {1, 1, {}}},
         .claim_next = claim_next});
    REQUIRE(statements_logged(server.log(), offset, app) == 1);
    REQUIRE(many.results.size() == 2);
    REQUIRE(many.results.at(0).events.at(0).index == 6);
    REQUIRE(many.next.has_value());
    REQUIRE(many.next->events.at(0).index == 3);
    offset = server.log().size();
    auto one = store.complete_attempt(
        {.session_id = s, .index = 3, .attempt = 1, .events = {}, .claim_next = claim_next});
    REQUIRE(statements_logged(server.log(), offset, app) == 1);
    REQUIRE(one.verdict == a2::CompleteVerdict::completed);
    REQUIRE(one.next.has_value());
    REQUIRE(one.next->events.at(0).index == 4);
    offset = server.log().size();
    auto plain = store.complete_attempts({.session_id = s, .completions = {{4, 1, {}}}});
    REQUIRE(statements_logged(server.log(), offset, app) == 1);
    REQUIRE(plain.results.at(0).verdict == a2::CompleteVerdict::completed);
    REQUIRE(!plain.next.has_value());
  }
}

// The largest "rows=N" of the actual figures and "Rows Removed by ...: N" in the plans
// auto_explain logged after `from`, with the log text before it (the plan it belongs to).
struct RowCount {
  std::int64_t rows = 0;
  std::string context;
};
RowCount largest_row_count(const std::string& log, std::size_t from) {
  static const std::regex actual(R"(actual time=[0-9.]+\.\.[0-9.]+ rows=([0-9]+))");
  static const std::regex removed(
      R"(Rows Removed by (?:Filter|Index Recheck|Join Filter): ([0-9]+))");
  std::string tail = log.substr(std::min(from, log.size()));
  RowCount largest;
  for (const auto* re : {&actual, &removed}) {
    for (std::sregex_iterator it(tail.begin(), tail.end(), *re), end; it != end; ++it) {
      std::int64_t rows = std::stoll((*it)[1].str());
      if (rows <= largest.rows) continue;
      auto at = static_cast<std::size_t>(it->position(0));
      std::size_t start = at > 4000 ? at - 4000 : 0;
      largest = {rows, tail.substr(start, at - start + 200)};
    }
  }
  return largest;
}

// The write groups' statements (docs/postgres-layout.md#write-groups) run by their typed
// callers on a pool of the store's connections (its set-up: planner and wake-up settings): an
// append group, a claim group and a completion group of one request each, at kT0.
class GroupCalls {
 public:
  explicit GroupCalls(const Fixture& f) : pool_({.connection = f.connection, .schema = f.schema}) {}
  // The index the append group gives the event `id` appended to `session`.
  std::int64_t append(const std::string& session, const std::string& id) {
    const Json payload;
    const calls::AppendOne one{
        .session_id = session, .now_ms = kT0, .id = id, .type = "t", .payload = &payload};
    const calls::AppendGroup group{{&one}};
    return run(group).at(0).reply.index.value();
  }
  // The events the claim group claims in `session`.
  std::vector<a2::StoredEvent> claim(const std::string& session) {
    const calls::ClaimAvailable one{.session_id = session,
                                    .holder = "w-group",
                                    .now_ms = kT0,
                                    .expires_at_ms = kT0 + 30000,
                                    .exclude_indexes = {},
                                    .max_events = std::nullopt};
    const calls::ClaimGroup group{{&one}};
    return run(group).at(0).reply.events;
  }
  // The completion group's verdict for `event`, with one unsettled child `child`.
  a2::CompleteVerdict complete(const a2::StoredEvent& event, const std::string& child) {
    const a2::CompleteRequest request{
        .session_id = event.session_id,
        .index = event.index,
        .attempt = event.attempt_count,
        .events = {{child, "t", nullptr, std::nullopt, false, std::nullopt}}};
    const auto one = calls::CompleteAttempt::of(request, kT0);
    const calls::CompleteGroup group{{&one}};
    return run(group).at(0).reply.verdict;
  }

 private:
  template <class Group>
  typename Group::Reply run(const Group& group) {
    return pool_.run("write group", [&](a2::postgres::detail::Executor& x) {
      return group.decode(group.exec(x));
    });
  }

  a2::postgres::detail::ConnectionPool pool_;
};

// The planner's estimates come from statistics that can be far from a session's real rows (here:
// ANALYZE ran while most rows of the table were pending work in other sessions). Writes must
// still touch only the rows they work on, never scan a session's history:
// their statements reach other rows by index lookups of the rows they selected
// (`idx = any(array(...))`), not by joins the planner may turn into a hash join over the
// session. auto_explain logs the actual rows of every nested statement's plan.
TEST_CASE("writes touch only their rows whatever the statistics say", "[plans][postgres]") {
  PostgresServer server({"shared_preload_libraries=auto_explain", "auto_explain.log_min_duration=0",
                         "auto_explain.log_nested_statements=on", "auto_explain.log_analyze=on",
                         "autovacuum=off"});
  auto f = open_fixture(server.connection(), 1);
  {
    pqxx::connection conn(server.connection());
    pqxx::nontransaction tx(conn);
    tx.exec("set search_path to \"" + f.schema + "\"");
    // 20,000 pending events over 16 other sessions, and 20,000 settled events of history in
    // session h. Statistics taken after both make pending rows look common everywhere (the
    // planner expects thousands of claimable rows in h); taken before h's history they make h
    // look like a session of a few rows.
    const bool stats_before_history = GENERATE(false, true);
    INFO("statistics taken " << (stats_before_history ? "before" : "after") << " h's history");
    tx.exec(
        "insert into a2_events (session_id, idx, event_id, event_type, payload, created_at) "
        "select 'w-' || (g % 16), g, 'w-' || g, 't', 'null', 1 from generate_series(1, 20000) g");
    tx.exec(
        "insert into a2_events (session_id, idx, event_id, event_type, payload, created_at) "
        "select 'many-' || g, 1, 'many-' || g, 't', 'null', 1 from generate_series(1, 5000) g");
    if (stats_before_history) tx.exec("analyze a2_events");
    tx.exec(
        "insert into a2_events (session_id, idx, event_id, event_type, payload, created_at, "
        "processed_at) select 'h', g, 'h-' || g, 't', 'null', 1, 1 "
        "from generate_series(1, 20000) g");
    if (!stats_before_history) tx.exec("analyze a2_events");
  }
  REQUIRE(f->append("h", {ev_id("work")}).events.at(0).index == 20001);
  const auto offset = server.log().size();
  auto claim = f->claim_available({.session_id = "h",
                                   .holder = "w1",
                                   .ttl_ms = 30000,
                                   .expires_at_ms = std::nullopt,
                                   .exclude_indexes = {}});
  REQUIRE(claim.verdict == a2::ClaimVerdict::claimed);
  REQUIRE(claim.events.size() == 1);
  auto renew = f->renew_claims({.session_id = "h",
                                .holder = "w1",
                                .claims = {{20001, 1}},
                                .ttl_ms = 30000,
                                .expires_at_ms = std::nullopt});
  REQUIRE(renew.renewed == std::vector<std::int64_t>{20001});
  // held_claims and head, a release and a bounded claim (the next attempt).
  REQUIRE(f->held_claims("h", "w1").size() == 1);
  REQUIRE(f->head("h").head_index == 20001);
  REQUIRE(f->release_claims({.session_id = "h", .holder = "w1", .claims = {{20001, 1}}}).released ==
          std::vector<std::int64_t>{20001});
  auto bounded = f->claim_available({.session_id = "h",
                                     .holder = "w1",
                                     .ttl_ms = 30000,
                                     .expires_at_ms = std::nullopt,
                                     .exclude_indexes = {},
                                     .max_events = 1});
  REQUIRE(bounded.events.at(0).attempt_count == 2);
  auto done = f->complete_attempt({.session_id = "h", .index = 20001, .attempt = 2, .events = {}});
  REQUIRE(done.verdict == a2::CompleteVerdict::completed);
  // The general append (a lane, a settled event, a cause), a lane handoff, a failure to dead
  // letter, dead_letters, redrive and a snapshot pin.
  auto laned = [](std::string id, std::optional<a2::EventCause> cause = std::nullopt) {
    a2::NewEvent e = ev_id(std::move(id));
    e.lane = "L";
    e.cause = cause;
    return e;
  };
  a2::NewEvent fact = ev_id("fact");
  fact.settled = true;
  REQUIRE(f->append("h", {laned("l1"), laned("l2"), fact}).events.at(0).index == 20002);
  auto lane_claim = f->claim_available({.session_id = "h",
                                        .holder = "w1",
                                        .ttl_ms = 30000,
                                        .expires_at_ms = std::nullopt,
                                        .exclude_indexes = {}});
  REQUIRE(lane_claim.events.size() == 1);
  REQUIRE(lane_claim.events.at(0).index == 20002);
  REQUIRE(f->append("h", {laned("l3", a2::EventCause{20002, 1})}).events.at(0).index == 20005);
  REQUIRE(f->complete_attempt({.session_id = "h",
                               .index = 20002,
                               .attempt = 1,
                               .events = {{"child", "t", nullptr, "L", false, std::nullopt}}})
              .verdict == a2::CompleteVerdict::completed);
  auto next = f->claim_available({.session_id = "h",
                                  .holder = "w1",
                                  .ttl_ms = 30000,
                                  .expires_at_ms = std::nullopt,
                                  .exclude_indexes = {}});
  REQUIRE(next.events.size() == 1);
  REQUIRE(next.events.at(0).index == 20003);  // Handed the lane.
  f->put_snapshots("h", "r", {{20002, Json{{"n", 1}}, {20003}}});
  REQUIRE(
      f->fail_attempt(
           {.session_id = "h", .index = 20003, .attempt = 1, .error = "boom", .max_failures = 1})
          .verdict == a2::FailVerdict::dead_lettered);
  REQUIRE(f->dead_letters("h").size() == 1);
  REQUIRE(
      f->redrive({.session_id = "h", .index = 20003, .action = a2::RedriveAction::skip}).redriven);
  // Delayed work: a scheduled append, a claim that skips it, a delayed retry, a busy claim.
  a2::NewEvent scheduled = ev_id("scheduled");
  scheduled.available_at_ms = kT0 + 60000;
  REQUIRE(f->append("h", {scheduled}).events.at(0).index == 20007);
  auto lane_next = f->claim_available({.session_id = "h",
                                       .holder = "w1",
                                       .ttl_ms = 30000,
                                       .expires_at_ms = std::nullopt,
                                       .exclude_indexes = {}});
  REQUIRE(lane_next.events.size() == 1);
  REQUIRE(lane_next.events.at(0).index == 20005);  // Handed lane L by the skip.
  REQUIRE(f->fail_attempt({.session_id = "h",
                           .index = 20005,
                           .attempt = 1,
                           .error = "later",
                           .max_failures = 3,
                           .retry_at_ms = kT0 + 50000})
              .verdict == a2::FailVerdict::failed);
  auto busy = f->claim_available({.session_id = "h",
                                  .holder = "w1",
                                  .ttl_ms = 30000,
                                  .expires_at_ms = std::nullopt,
                                  .exclude_indexes = {}});
  REQUIRE(busy.verdict == a2::ClaimVerdict::busy);
  REQUIRE(busy.retry_at == kT0 + 50000);
  // Batched completion with claim_next (a child claimed by the same call), complete_attempt
  // with claim_next answering busy, and a batch without claim_next.
  REQUIRE(f->append("h", {ev_id("b1"), ev_id("b2")}).events.at(0).index == 20008);
  REQUIRE(f->claim_available({.session_id = "h",
                              .holder = "w1",
                              .ttl_ms = 30000,
                              .expires_at_ms = std::nullopt,
                              .exclude_indexes = {},
                              .max_events = 1})
              .events.at(0)
              .index == 20008);
  const a2::ClaimNext claim_next{.holder = "w1", .ttl_ms = 30000, .max_events = 2};
  auto batch = f->complete_attempts(
      {.session_id = "h",
       .completions = {{20008, 1, {{"bc1", "t", nullptr, std::nullopt, false, std::nullopt}}}},
       .claim_next = claim_next});
  REQUIRE(batch.results.at(0).events.at(0).index == 20010);
  REQUIRE(batch.next->events.size() == 2);  // 20009 and the child 20010.
  auto single = f->complete_attempt(
      {.session_id = "h", .index = 20009, .attempt = 1, .events = {}, .claim_next = claim_next});
  REQUIRE(single.verdict == a2::CompleteVerdict::completed);
  REQUIRE(single.next->verdict == a2::ClaimVerdict::busy);
  REQUIRE(f->complete_attempts({.session_id = "h", .completions = {{20010, 1, {}}}})
              .results.at(0)
              .verdict == a2::CompleteVerdict::completed);
  REQUIRE(f->append("h", {}).has_pending);  // The empty append reads has_pending only.
  REQUIRE(clear(*f.store, "h").clear_index == 20011);
  // The write groups' functions on h's new lifetime: a claim group, a completion group (its set
  // path).
  {
    GroupCalls groups(f);
    const auto grouped = f->append("h", {ev_id("grouped")}).events.at(0).index;
    const auto claimed = groups.claim("h");
    REQUIRE(claimed.size() == 1);
    REQUIRE(claimed[0].index == grouped);
    REQUIRE(groups.complete(claimed[0], "grouped-child") == a2::CompleteVerdict::completed);
  }
  const std::string log = server.log();
  REQUIRE(log.find("a2_events_pending", offset) != std::string::npos);  // Plans were logged.
  {
    auto largest = largest_row_count(log, offset);
    INFO("the plan with the most rows:\n" << largest.context);
    REQUIRE(largest.rows <= 16);
  }
  // Reclaim takes the old lifetime in batches of 256 rows (then the snapshot rows) and reads no
  // more than a batch per call.
  const auto reclaim_offset = server.log().size();
  REQUIRE(reclaim_all(*f.store, "h", 100) == 20010);
  auto largest = largest_row_count(server.log(), reclaim_offset);
  INFO("the plan with the most rows:\n" << largest.context);
  REQUIRE(largest.rows <= 256);
}

// A write group's statements are planned once per connection, from the statistics of their
// first call: made while a2_events looked tiny, a plan that reached the parents of a completion
// group by a join on (session_id, idx) hashed the whole table on every later call (the bench's
// cycles at 16 threads ran 25 times slower). Every row a group writes is reached by its key or
// its ctid, so plans made on a tiny table still touch only their rows once it is large.
TEST_CASE("write groups planned on a tiny table touch only their rows once it is large",
          "[plans][postgres][work_groups]") {
  PostgresServer server({"shared_preload_libraries=auto_explain", "auto_explain.log_min_duration=0",
                         "auto_explain.log_nested_statements=on", "auto_explain.log_analyze=on",
                         "autovacuum=off"});
  auto f = open_fixture(server.connection(), 1);
  (void)f->append("t", {ev_id("t-1")});
  // One row each: the statistics the plans below are made from.
  sql(f, "analyze a2_events; analyze a2_work");
  GroupCalls groups(f);
  REQUIRE(groups.append("u", "u-1") == 1);
  const auto first = groups.claim("t");
  REQUIRE(first.size() == 1);
  REQUIRE(groups.complete(first[0], "t-c1") == a2::CompleteVerdict::completed);
  // 20,000 pending events in 16 other sessions and 20,000 work entries, with no statistics
  // taken since.
  sql(f,
      "insert into a2_events (session_id, idx, event_id, event_type, payload, created_at) "
      "select 'w-' || (g % 16), g, 'w-' || g, 't', 'null', 1 from generate_series(1, 20000) g");
  sql(f,
      "insert into a2_work (session_id, next_at) "
      "select 'x-' || g, 1 from generate_series(1, 20000) g");
  const auto offset = server.log().size();
  REQUIRE(groups.append("u", "u-2") == 2);
  const auto second = groups.claim("t");
  REQUIRE(second.size() == 1);
  REQUIRE(second[0].index == 2);  // The child.
  REQUIRE(groups.complete(second[0], "t-c2") == a2::CompleteVerdict::completed);
  const auto largest = largest_row_count(server.log(), offset);
  INFO("the plan with the most rows:\n" << largest.context);
  REQUIRE(largest.rows <= 16);
}

// Batches lock their parent rows in index order before the session lock, as single completions
// lock row then session and claims lock rows in index order (docs/postgres-layout.md#locking):
// concurrent batches over overlapping indexes in different list orders, mixed with single
// completions, all with claim_next, never deadlock (Postgres would abort one with 40P01, which
// surfaces as store_unavailable and fails the test). Every completion is applied once and
// replayed by the others with the same child row, and no event is claimed twice.
TEST_CASE("concurrent complete_attempts batches over overlapping indexes do not deadlock",
          "[locking][postgres]") {
  auto f = open_fixture(PostgresServer::shared().connection(), a2::postgres::Options{}.pool_size);
  constexpr int kEvents = 120;
  constexpr int kThreads = 4;
  constexpr std::size_t kBatch = 8;
  (void)f->append("s", evs_with_ids("e", kEvents));
  REQUIRE(f->claim_available({.session_id = "s",
                              .holder = "w",
                              .ttl_ms = 600000,
                              .expires_at_ms = std::nullopt,
                              .exclude_indexes = {}})
              .events.size() == kEvents);
  auto completion_of = [](std::int64_t i) {
    return a2::Completion{
        i,
        1,
        {{"c" + std::to_string(i), "child", Json{{"of", i}}, std::nullopt, false, std::nullopt}}};
  };
  std::mutex mutex;
  std::map<std::int64_t, std::set<std::int64_t>> child_index_of;  // Parent -> child indexes seen.
  std::map<std::int64_t, int> claims_of;                          // Claimed index -> times.
  std::vector<std::string> errors;
  // Catch's assertions are not for other threads: a failed check there is an exception.
  auto check = [](bool ok, const char* what) {
    if (!ok) throw std::runtime_error(std::string("check failed: ") + what);
  };
  auto record_claim = [&](const std::optional<a2::ClaimResult>& next, const std::string& holder) {
    check(next.has_value(), "next.has_value()");
    for (const auto& e : next->events) {
      check(e.claim_holder == holder, "e.claim_holder == holder");
      check(e.attempt_count == 1, "e.attempt_count == 1");
      ++claims_of[e.index];
    }
  };
  // Round g: every thread completes the same group of kBatch indexes at once (a barrier starts
  // them together), each in its own list order; one thread per round (a different one each
  // round) sends them as single completions instead of a batch.
  std::barrier start(kThreads);
  auto worker = [&](int t) {
    const std::string holder = "w" + std::to_string(t);
    const a2::ClaimNext claim_next{.holder = holder, .ttl_ms = 600000, .max_events = 2};
    for (std::int64_t g = 0; g < kEvents / static_cast<std::int64_t>(kBatch); ++g) {
      std::vector<std::int64_t> order;
      for (std::int64_t k = 1; k <= static_cast<std::int64_t>(kBatch); ++k)
        order.push_back(g * static_cast<std::int64_t>(kBatch) + k);
      if (t % 2 == 1) std::reverse(order.begin(), order.end());
      if (t >= 2) std::rotate(order.begin(), order.begin() + kBatch / 2, order.end());
      start.arrive_and_wait();
      try {
        if ((g + t) % kThreads == 0) {
          for (auto index : order) {
            auto c = completion_of(index);
            auto r = f->complete_attempt({.session_id = "s",
                                          .index = c.index,
                                          .attempt = c.attempt,
                                          .events = c.events,
                                          .claim_next = claim_next});
            std::lock_guard lock(mutex);
            check(r.verdict == a2::CompleteVerdict::completed,
                  "r.verdict == a2::CompleteVerdict::completed");
            check(r.events.size() == 1, "r.events.size() == 1");
            child_index_of[c.index].insert(r.events.at(0).index);
            record_claim(r.next, holder);
          }
          continue;
        }
        a2::CompleteManyRequest request{
            .session_id = "s", .completions = {}, .claim_next = claim_next};
        for (auto index : order) request.completions.push_back(completion_of(index));
        auto r = f->complete_attempts(request);
        std::lock_guard lock(mutex);
        check(r.results.size() == request.completions.size(),
              "r.results.size() == request.completions.size()");
        for (std::size_t k = 0; k < r.results.size(); ++k) {
          const auto& one = r.results[k];
          check(one.verdict == a2::CompleteVerdict::completed,
                "one.verdict == a2::CompleteVerdict::completed");
          check(one.events.size() == 1, "one.events.size() == 1");
          check(one.events.at(0).id == "c" + std::to_string(request.completions[k].index),
                "the child's id");
          check(one.events.at(0).cause->index == request.completions[k].index, "the child's cause");
          child_index_of[request.completions[k].index].insert(one.events.at(0).index);
        }
        record_claim(r.next, holder);
      } catch (const std::exception& e) {
        std::lock_guard lock(mutex);
        errors.push_back(holder + ", round " + std::to_string(g) + ": " + e.what());
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(worker, t);
  for (auto& th : threads) th.join();
  INFO("errors: " << (errors.empty() ? "" : errors.front()));
  REQUIRE(errors.empty());
  // Every parent completed once, with one child row that every replay reported.
  REQUIRE(child_index_of.size() == static_cast<std::size_t>(kEvents));
  std::set<std::int64_t> children;
  for (const auto& [parent, seen] : child_index_of) {
    INFO("parent " << parent);
    REQUIRE(seen.size() == 1);
    children.insert(*seen.begin());
  }
  REQUIRE(children.size() == static_cast<std::size_t>(kEvents));
  REQUIRE(*children.begin() == kEvents + 1);
  REQUIRE(*children.rbegin() == 2 * kEvents);
  REQUIRE(f->head("s").head_index == 2 * kEvents);
  // No event claimed twice; the claims are children (the parents are leased to "w").
  for (const auto& [index, times] : claims_of) {
    INFO("index " << index);
    REQUIRE(times == 1);
    REQUIRE(index > kEvents);
  }
  for (const auto& e : f->read("s")) {
    if (e.index > kEvents) continue;
    REQUIRE(e.processed_by_attempt == 1);
  }
}

// The largest batch the validator allows, 10,000 completions with 10,000 children in all, in one
// call: each completion gets its own slice of the flattened child arrays (of every size, at every
// position) and its own element of the payload array, and the reply's parts come back in order.
TEST_CASE("a complete_attempts batch of 10,000 completions is one call", "[batch][postgres]") {
  auto f = fresh();
  constexpr std::int64_t kMax = 10000;
  std::vector<a2::NewEvent> events;
  for (std::int64_t i = 1; i <= kMax; ++i) events.push_back(ev_id("e" + std::to_string(i)));
  (void)f->append("s", events);
  REQUIRE(f->claim_available({.session_id = "s",
                              .holder = "w",
                              .ttl_ms = 600000,
                              .expires_at_ms = std::nullopt,
                              .exclude_indexes = {}})
              .events.size() == kMax);
  a2::CompleteManyRequest request{
      .session_id = "s",
      .completions = {},
      .claim_next = a2::ClaimNext{.holder = "w", .ttl_ms = 600000, .max_events = 3}};
  // Completions in descending index order, each with one child but every tenth (which has 10
  // children instead of the next nine's one), so slices of every size and position occur.
  std::int64_t child = 0;
  for (std::int64_t i = kMax; i >= 1; --i) {
    a2::Completion c{i, 1, {}};
    const int n = i % 10 == 0 ? 10 : (i % 10 == 9 ? 0 : 1);
    for (int k = 0; k < n && child < kMax; ++k)
      c.events.push_back({"c" + std::to_string(++child), "child", Json{{"of", i}}, std::nullopt,
                          false, std::nullopt});
    request.completions.push_back(std::move(c));
  }
  auto r = f->complete_attempts(request);
  REQUIRE(r.results.size() == static_cast<std::size_t>(kMax));
  std::int64_t next_index = kMax;
  for (std::size_t k = 0; k < r.results.size(); ++k) {
    INFO("completion " << k);
    REQUIRE(r.results[k].verdict == a2::CompleteVerdict::completed);
    REQUIRE(r.results[k].events.size() == request.completions[k].events.size());
    for (std::size_t c = 0; c < r.results[k].events.size(); ++c) {
      REQUIRE(r.results[k].events[c].index == ++next_index);
      REQUIRE(r.results[k].events[c].id == *request.completions[k].events[c].id);
      REQUIRE(r.results[k].events[c].payload == request.completions[k].events[c].payload);
      REQUIRE(r.results[k].events[c].cause->index == request.completions[k].index);
    }
  }
  REQUIRE(next_index == kMax + child);
  REQUIRE(r.next->events.size() == 3);
  REQUIRE(r.next->events.at(0).index == kMax + 1);
}

TEST_CASE("a live feed wakes on NOTIFY well before its safety poll", "[feed][postgres]") {
  auto f = open_fixture(PostgresServer::shared().connection());
  f.store = a2::postgres::open({.connection = PostgresServer::shared().connection(),
                                .schema = f.schema,
                                .pool_size = 2,
                                .statement_timeout = std::chrono::milliseconds(30000),
                                .clock = f.clock,
                                .ids = f.ids,
                                .feed_safety_poll = std::chrono::milliseconds(60000)});
  // The writer is another store (as another process would be): a store's own writes wake its
  // feeds in the process, without the NOTIFY.
  auto writer_store = a2::postgres::open({.connection = PostgresServer::shared().connection(),
                                          .schema = f.schema,
                                          .clock = f.clock,
                                          .ids = f.ids});
  auto feed = f->subscribe("s", 0);
  REQUIRE(feed->next(std::chrono::milliseconds(0)).empty());
  // Give the LISTEN thread time to start listening.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    (void)writer_store->append("s", {ev_id("a")});
  });
  auto started = std::chrono::steady_clock::now();
  auto batch = feed->next(std::chrono::milliseconds(20000));
  auto waited = std::chrono::steady_clock::now() - started;
  writer.join();
  REQUIRE(batch.size() == 1);
  REQUIRE(batch.front().id == "a");
  REQUIRE(waited < std::chrono::seconds(10));  // The safety poll is 60 s: NOTIFY woke it.
  // cancel() wakes a waiting next() promptly.
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    feed->cancel();
  });
  started = std::chrono::steady_clock::now();
  REQUIRE(feed->next(std::chrono::milliseconds(20000)).empty());
  canceller.join();
  REQUIRE(std::chrono::steady_clock::now() - started < std::chrono::seconds(10));
  REQUIRE(feed->cancelled());
}

// Retries `op` while it throws Unavailable (the server is down or the outcome was unknown),
// counting the failures; gives up after a minute.
template <class F>
auto retry_unavailable(std::atomic<int>& failures, std::atomic<int>& unknown, F&& op) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (true) {
    try {
      return op();
    } catch (const a2::Unavailable& e) {
      ++failures;
      if (e.outcome_unknown()) ++unknown;
      if (std::chrono::steady_clock::now() > deadline) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
}

TEST_CASE("a server crash loses nothing acknowledged and retries are idempotent",
          "[faults][postgres]") {
  // Commits are acknowledged only once their WAL is written (an immediate shutdown loses the
  // WAL buffers, not the OS's files).
  PostgresServer server({"synchronous_commit=on"});
  auto f = open_fixture(server.connection(), 4);
  constexpr int kWriters = 3;
  constexpr int kBatches = 60;
  constexpr int kEvents = kWriters * kBatches * 3;
  std::mutex mutex;
  std::map<std::string, std::int64_t> acknowledged;  // Appended id -> index.
  std::map<std::int64_t, std::int64_t> completed;    // Parent index -> attempt.
  std::atomic<int> unavailable{0};
  std::atomic<int> unknown_outcomes{0};
  std::atomic<int> done_batches{0};
  std::atomic<bool> writers_done{false};

  // Writers append batches with their own ids, retrying each until it is acknowledged.
  auto writer = [&](int w) {
    for (int b = 0; b < kBatches; ++b) {
      std::vector<a2::NewEvent> batch;
      for (int k = 0; k < 3; ++k)
        batch.push_back(
            ev_id("w" + std::to_string(w) + "b" + std::to_string(b) + "k" + std::to_string(k)));
      auto r =
          retry_unavailable(unavailable, unknown_outcomes, [&] { return f->append("s", batch); });
      std::lock_guard lock(mutex);
      for (const auto& e : r.events) acknowledged[e.id] = e.index;
      ++done_batches;
    }
  };
  // A worker claims and completes every appended event with one settled child ("c" + id),
  // retrying completions with the same attempt and child id.
  auto worker = [&] {
    while (true) {
      auto claimed = retry_unavailable(unavailable, unknown_outcomes, [&] {
        return f->claim_available({.session_id = "s",
                                   .holder = "w",
                                   .ttl_ms = 30000,
                                   .expires_at_ms = std::nullopt,
                                   .exclude_indexes = {}});
      });
      if (claimed.verdict == a2::ClaimVerdict::busy) {
        f.clock->advance(31000);  // A claim whose reply was lost: let its lease lapse.
        continue;
      }
      if (claimed.verdict == a2::ClaimVerdict::settled) {
        if (writers_done.load() && !retry_unavailable(unavailable, unknown_outcomes, [&] {
              return f->append("s", {}).has_pending;
            }))
          return;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        continue;
      }
      for (const auto& e : claimed.events) {
        a2::ChildEvent child{"c" + e.id, "child", nullptr, std::nullopt, true, std::nullopt};
        auto r = retry_unavailable(unavailable, unknown_outcomes, [&] {
          return f->complete_attempt(
              {.session_id = "s", .index = e.index, .attempt = e.attempt_count, .events = {child}});
        });
        // Catch assertions are for the main thread: failures leave as exceptions.
        if (r.verdict != a2::CompleteVerdict::completed || r.events.size() != 1 ||
            r.events[0].id != "c" + e.id)
          throw std::runtime_error("completion of event " + std::to_string(e.index) +
                                   " did not complete with its one child");
        std::lock_guard lock(mutex);
        completed[e.index] = e.attempt_count;
      }
    }
  };

  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(kWriters + 1);
  for (int w = 0; w <= kWriters; ++w)
    threads.emplace_back([&, w] {
      try {
        if (w < kWriters)
          writer(w);
        else
          worker();
      } catch (...) {
        errors[w] = std::current_exception();
      }
    });
  while (done_batches.load() < kWriters * kBatches / 3)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  server.stop_immediate();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  server.start();
  for (int w = 0; w < kWriters; ++w) threads[w].join();
  writers_done.store(true);
  threads.back().join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);

  INFO("unavailable errors: " << unavailable.load()
                              << ", outcome unknown: " << unknown_outcomes.load());
  REQUIRE(unavailable.load() > 0);  // The crash was felt: the test exercised a fault.
  auto rows = f->read("s");
  REQUIRE(rows.size() == static_cast<std::size_t>(2 * kEvents));  // Every event and its child.
  std::set<std::string> ids;
  std::size_t parents = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& row = rows[i];
    REQUIRE(row.index == static_cast<std::int64_t>(i + 1));  // Dense, nothing lost twice.
    ids.insert(row.id);
    if (row.type == "t") {
      ++parents;
      REQUIRE(acknowledged.at(row.id) == row.index);
      REQUIRE(row.processed_at.has_value());
      REQUIRE(row.processed_by_attempt == std::optional<std::int64_t>(completed.at(row.index)));
      REQUIRE(row.returned_event_ids ==
              std::optional<std::vector<std::string>>(std::vector<std::string>{"c" + row.id}));
    } else {
      REQUIRE(row.type == "child");
      REQUIRE(row.cause.has_value());
      const auto& parent = rows.at(static_cast<std::size_t>(row.cause->index - 1));
      REQUIRE(row.id == "c" + parent.id);
      REQUIRE(row.cause->attempt == completed.at(parent.index));
    }
  }
  REQUIRE(ids.size() == rows.size());
  REQUIRE(parents == static_cast<std::size_t>(kEvents));
  REQUIRE(acknowledged.size() == static_cast<std::size_t>(kEvents));
  REQUIRE_FALSE(f->append("s", {}).has_pending);
}

}  // namespace

}  // namespace a2::postgres_test::postgres_tests
