// SPDX-License-Identifier: MIT
// Work discovery on Postgres (docs/postgres-layout.md#a2_work): rows written as the original
// package writes them are not in the work index until sweep_work (or a watch's sweep) finds
// them, with the time a claim would give; the watch's LISTEN reports resync after a lost
// connection or a payload naming no session; find_work reads the index a2_work_due, whose size
// does not depend on idle sessions.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <future>
#include <memory>
#include <optional>
#include <pqxx/pqxx>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "a2/postgres.hpp"
#include "postgres/connection_pool.hpp"
#include "schema_store.hpp"
#include "servers/postgres_server.hpp"

namespace a2::postgres_test::discovery_test {
namespace {

using a2::test::PostgresServer;
using namespace std::chrono_literals;

constexpr std::int64_t kT0 = 1'700'000'000'000;

using Fixture = a2::postgres_test::SchemaStore;
using a2::postgres_test::lock_waiters;
using a2::postgres_test::LockKind;
using a2::postgres_test::sql;

Fixture fresh() {
  return a2::postgres_test::open_schema_store({.tag = "discovery", .t0 = kT0, .id_prefix = "w"});
}

std::int64_t count(const Fixture& f, const std::string& query) {
  return sql(f, query)[0][0].as<std::int64_t>();
}

// An event inserted as experimental-a2 0.18's store-postgres.ts inserts it (named columns, no
// available_at, lane_ready computed by its own statement), without a2's functions.
void insert_as_original(const Fixture& f, const std::string& s, int index,
                        const std::string& lane) {
  const std::string lane_sql = lane.empty() ? "null" : "'" + lane + "'";
  sql(f,
      "insert into a2_events (session_id, idx, event_type, payload, event_id, created_at, "
      "cause, lane, lane_ready, processed_at) values ('" +
          s + "', " + std::to_string(index) + ", 't', '{}', '" + s + "-" + std::to_string(index) +
          "', " + std::to_string(kT0) + ", null, " + lane_sql + ", " + lane_sql +
          "::text is null or not exists (select 1 from a2_events where session_id = '" + s +
          "' and lane = " + lane_sql + " and processed_at is null), null)");
}

std::vector<a2::SessionWork> all_entries(Fixture& f) {
  return f->find_work({.after = std::nullopt, .due_by_ms = std::nullopt, .limit = 1000}).sessions;
}

bool same(const std::vector<a2::SessionWork>& a, const std::vector<a2::SessionWork>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].session_id != b[i].session_id || a[i].at_ms != b[i].at_ms) return false;
  return true;
}

a2::NewEvent unsettled(const std::string& id) {
  a2::NewEvent e;
  e.id = id;
  e.type = "t";
  return e;
}

TEST_CASE("rows the original package wrote are indexed by sweep_work with a claim's time",
          "[postgres][discovery]") {
  auto f = fresh();
  (void)f->append("a2-session", {unsettled("x1")});  // Indexed by a2's own write.
  REQUIRE(same(all_entries(f), {{"a2-session", kT0}}));
  // "free": one available event. "held": its only ready event claimed by the original package
  // until kT0 + 5000. "lane": 1 dead-lettered by the original package, 2 waits behind it in the
  // lane (not ready). "done": settled only. "cleared": its pending event is below the boundary.
  insert_as_original(f, "free", 1, "");
  insert_as_original(f, "held", 1, "");
  sql(f, "update a2_events set attempt_count = 1, claim_holder = 'ts', claim_expires_at = " +
             std::to_string(kT0 + 5000) + ", first_claimed_at = " + std::to_string(kT0) +
             ", last_claimed_at = " + std::to_string(kT0) + " where session_id = 'held'");
  insert_as_original(f, "lane", 1, "L");
  insert_as_original(f, "lane", 2, "L");
  sql(f, "update a2_events set failure_count = 3, failed_at = " + std::to_string(kT0) +
             " where session_id = 'lane' and idx = 1");
  insert_as_original(f, "done", 1, "");
  sql(f,
      "update a2_events set processed_at = " + std::to_string(kT0) + " where session_id = 'done'");
  insert_as_original(f, "cleared", 1, "");
  sql(f, "insert into a2_clears (session_id, clear_index) values ('cleared', 1)");

  f.clock->set(kT0 + 100);
  // The original package's writes are invisible to the index...
  CHECK(same(all_entries(f), {{"a2-session", kT0}}));
  CHECK(count(f, "select count(*) from a2_work") == 1);
  // ...until the sweep: "free" claimable now, "held" when its lease ends; in (at, id) order.
  auto swept = f->sweep_work().indexed;
  CHECK(same(swept, {{"free", kT0 + 100}, {"held", kT0 + 5000}}));
  CHECK(same(all_entries(f), {{"a2-session", kT0}, {"free", kT0 + 100}, {"held", kT0 + 5000}}));
  // A second pass changes nothing; nor does one after a2's own writes.
  CHECK(f->sweep_work().indexed.empty());
  auto claim = f->claim_available({.session_id = "free", .holder = "h", .ttl_ms = 30000});
  REQUIRE(claim.verdict == a2::ClaimVerdict::claimed);
  CHECK(same(all_entries(f), {{"a2-session", kT0}, {"held", kT0 + 5000}, {"free", kT0 + 30100}}));
  CHECK(f->sweep_work().indexed.empty());
  // An entry later than the work is moved earlier: the sweep lowers, never raises.
  sql(f,
      "update a2_work set next_at = " + std::to_string(kT0 + 90000) + " where session_id = 'held'");
  CHECK(same(f->sweep_work().indexed, {{"held", kT0 + 5000}}));
  sql(f, "update a2_work set next_at = " + std::to_string(kT0 + 1) + " where session_id = 'held'");
  CHECK(f->sweep_work().indexed.empty());
}

TEST_CASE("a watch finds the original package's rows within its sweep interval",
          "[postgres][discovery]") {
  auto f = fresh();
  auto watch = f->watch_work({.sweep_interval = 300ms});
  (void)watch->wait(0ms);  // The first sweep: nothing yet.
  insert_as_original(f, "legacy", 1, "");
  const auto start = std::chrono::steady_clock::now();
  a2::WorkSignal signal;
  while (signal.session_ids.empty() && std::chrono::steady_clock::now() - start < 2s)
    signal = watch->wait(2s);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  CHECK(signal.session_ids == std::vector<std::string>{"legacy"});
  CHECK_FALSE(signal.resync);
  CHECK(elapsed < 300ms + 250ms);  // The sweep interval and a slice of slack.
  CHECK(same(all_entries(f), {{"legacy", kT0}}));
  // Without a sweep (interval 0) the row would stay unseen; a2's writes signal at once.
  auto quiet = f->watch_work({.sweep_interval = 0ms});
  insert_as_original(f, "legacy2", 1, "");
  CHECK(quiet->wait(200ms).session_ids.empty());
  (void)f->append("a2s", {unsettled("y1")});
  CHECK(quiet->wait(2s).session_ids == std::vector<std::string>{"a2s"});
}

TEST_CASE("a watch reports resync after a lost connection or a signal naming no session",
          "[postgres][discovery]") {
  auto f = fresh();
  auto watch = f->watch_work({.sweep_interval = 0ms});
  // The payload of a session id too long for NOTIFY is '' (schema.sql): no session named.
  sql(f, "notify a2_work, ''");
  auto signal = watch->wait(2s);
  CHECK(signal.resync);
  CHECK(signal.session_ids.empty());
  // The watch's LISTEN connection is terminated: it reconnects and reports resync.
  REQUIRE(count(f,
                "select count(*) from (select pg_terminate_backend(pid) from pg_stat_activity "
                "where query = 'LISTEN \"a2_work\"' and pid <> pg_backend_pid()) t") == 1);
  const auto start = std::chrono::steady_clock::now();
  signal = {};
  while (!signal.resync && std::chrono::steady_clock::now() - start < 5s) signal = watch->wait(5s);
  CHECK(signal.resync);
  // Listening again: a2's writes are signalled as before.
  (void)f->append("s", {unsettled("z1")});
  signal = watch->wait(2s);
  CHECK(signal.session_ids == std::vector<std::string>{"s"});
  CHECK_FALSE(signal.resync);
  // Signals are deduplicated within one wait, in the order first seen.
  (void)f->append("t", {unsettled("z2")});
  (void)f->append("s", {unsettled("z3")});
  (void)f->append("t", {unsettled("z4")});
  std::this_thread::sleep_for(100ms);
  CHECK(watch->wait(2s).session_ids == std::vector<std::string>{"t", "s"});
  watch.reset();
  f->close();
}

TEST_CASE("find_work reads the index a2_work_due; idle sessions have no row",
          "[postgres][discovery]") {
  auto f = fresh();
  // 200 sessions that had work and are idle now (appended, claimed, completed, a claim answered
  // settled) and 5 with work.
  for (int i = 0; i < 200; ++i) {
    const std::string s = "idle" + std::to_string(i);
    auto appended = f->append(s, {unsettled(s + "-e")});
    auto c = f->claim_available({.session_id = s, .holder = "h", .ttl_ms = 1000});
    REQUIRE(c.verdict == a2::ClaimVerdict::claimed);
    REQUIRE(f->complete_attempt({.session_id = s, .index = 1, .attempt = 1}).verdict ==
            a2::CompleteVerdict::completed);
    REQUIRE(f->claim_available({.session_id = s, .holder = "h", .ttl_ms = 1000}).verdict ==
            a2::ClaimVerdict::settled);
  }
  for (int i = 0; i < 5; ++i) {
    const std::string s = "busy" + std::to_string(i);
    (void)f->append(s, {unsettled(s + "-e")});
  }
  CHECK(count(f, "select count(*) from a2_work") == 5);
  CHECK(all_entries(f).size() == 5);
  // With a large index (10,000 entries, statistics current) a page is an ordered scan of
  // a2_work_due that stops at the limit, with the cursor and due_by as index conditions.
  sql(f, "insert into a2_work (session_id, next_at) select 'x' || g, " + std::to_string(kT0) +
             " + g from generate_series(1, 10000) g");
  sql(f, "analyze a2_work");
  pqxx::connection conn(PostgresServer::shared().connection());
  pqxx::nontransaction tx(conn);
  tx.exec("set search_path to \"" + f.schema + "\"");
  tx.exec(a2::postgres::detail::planner_settings_sql());  // As the store plans it.
  std::ifstream file(A2_FIND_WORK_SQL);
  std::stringstream text;
  text << file.rdbuf();
  REQUIRE(text.str().find("a2_work") != std::string::npos);
  tx.exec("prepare page as " + text.str());
  std::string plan;
  for (const auto& row :
       tx.exec("explain (analyze, costs off, timing off, summary off) execute page(" +
               std::to_string(kT0 + 5000) + ", 'x5000', " + std::to_string(kT0 + 9000) + ", 256)"))
    plan += std::string(row[0].c_str()) + "\n";
  INFO(plan);
  CHECK(plan.find("Scan using a2_work_due") != std::string::npos);
  CHECK(plan.find("Sort") == std::string::npos);
  CHECK(plan.find("Seq Scan") == std::string::npos);
  CHECK(plan.find("rows=256") != std::string::npos);
  CHECK(plan.find("Rows Removed by Filter") == std::string::npos);
  // The page itself: after the cursor, in order.
  auto page = f->find_work(
      {.after = a2::WorkCursor{kT0 + 5000, "x5000"}, .due_by_ms = kT0 + 9000, .limit = 3});
  REQUIRE(page.sessions.size() == 3);
  CHECK(page.sessions[0].session_id == "x5001");
  CHECK(page.sessions[2].at_ms == kT0 + 5003);
  REQUIRE(page.next);
  CHECK(page.next->session_id == "x5003");
}

// A claim computes the session's next entry from the rows it reads; a write that lowers the
// entry or leaves it due, and commits while the claim waits, must not be hidden by it (S226).
// The append runs on a connection of the test inside an open transaction, holding the session
// lock (and the entry's row when it lowers or creates the entry; an entry already due it leaves
// alone), while the store's claim runs: the claim waits for the session lock (every write takes
// it first), so it comes after the append and claims its event too.
TEST_CASE("a claim racing an append waits for it and claims the appended event",
          "[postgres][discovery][S226]") {
  const std::string app = "a2_discovery_claim_waits";
  auto f = a2::postgres_test::open_schema_store(
      {.tag = "discovery",
       .t0 = kT0,
       .id_prefix = "w",
       .connection = PostgresServer::shared().connection() + " application_name=" + app});
  // claimed: two events, the entry due: the append leaves it alone. busy: one event held, the
  // entry its lease end: the append lowers it. settled: the event completed, the entry still its
  // lease end: the append lowers it. settled_due: the same once the clock reached the lease end:
  // the entry is due, the append leaves it alone.
  enum class Setup { claimed, busy, settled, settled_due };
  auto claim = [&](const std::string& s) {
    return f->claim_available({.session_id = s, .holder = "h", .ttl_ms = 30000});
  };
  for (const Setup setup : {Setup::claimed, Setup::busy, Setup::settled, Setup::settled_due}) {
    const std::string s = "race" + std::to_string(static_cast<int>(setup));
    INFO("session " << s);
    std::vector<std::string> expected = {s + "-late"};
    if (setup == Setup::claimed) {
      (void)f->append(s, {unsettled(s + "-1"), unsettled(s + "-2")});
      expected = {s + "-1", s + "-2", s + "-late"};
    } else {
      (void)f->append(s, {unsettled(s + "-1")});
      REQUIRE(claim(s).verdict == a2::ClaimVerdict::claimed);
      if (setup != Setup::busy)
        REQUIRE(f->complete_attempt({.session_id = s, .index = 1, .attempt = 1}).verdict ==
                a2::CompleteVerdict::completed);
      if (setup == Setup::settled_due) f.clock->advance(30000);
    }
    const std::int64_t now = f.clock->now_ms();
    pqxx::connection conn(PostgresServer::shared().connection());
    pqxx::work append(conn);
    append.exec("set local search_path to \"" + f.schema + "\"");
    append.exec("select a2_append_one(" + append.quote(s) + ", " + std::to_string(now) + ", " +
                append.quote(s + "-late") + ", 't', '{}'::jsonb)");
    auto result = std::async(std::launch::async, [&] { return claim(s); });
    // Until the store's claim waits for the session lock the append holds.
    a2::postgres_test::await([&] { return lock_waiters(app, LockKind::session) > 0; });
    append.commit();
    const auto got = result.get();
    REQUIRE(got.verdict == a2::ClaimVerdict::claimed);
    std::vector<std::string> ids;
    for (const auto& e : got.events) ids.push_back(e.id);
    CHECK(ids == expected);
    // Nothing is claimable before the leases end: the entry is the earliest of them, which the
    // sweep leaves as it is, and the next claim is busy until then.
    bool listed = false;
    for (const auto& w :
         f->find_work({.after = std::nullopt, .due_by_ms = now, .limit = 1000}).sessions)
      listed = listed || w.session_id == s;
    CHECK_FALSE(listed);
    CHECK(f->sweep_work().indexed.empty());
    CHECK(claim(s).verdict == a2::ClaimVerdict::busy);
    for (const auto& e : got.events)
      REQUIRE(f->complete_attempt({.session_id = s, .index = e.index, .attempt = e.attempt_count})
                  .verdict == a2::CompleteVerdict::completed);
    if (setup == Setup::busy)
      REQUIRE(f->complete_attempt({.session_id = s, .index = 1, .attempt = 1}).verdict ==
              a2::CompleteVerdict::completed);
  }
}

// The other order (S227): a claim that raised the entry (claimed every ready event: the entry
// becomes the lease end) or removed it (settled) has not committed, on a connection of the test;
// the store's append of one event waits for the session lock the claim holds, then finds the
// entry as the claim left it and lowers it. An append that read the entry before the claim
// raised it would have left it alone (it was due), hiding its event until the lease end or the
// sweep.
TEST_CASE("an append after a claim that raised the entry lowers it again",
          "[postgres][discovery][S227]") {
  const std::string app = "a2_discovery_after_claim";
  auto f = a2::postgres_test::open_schema_store(
      {.tag = "discovery",
       .t0 = kT0,
       .id_prefix = "w",
       .connection = PostgresServer::shared().connection() + " application_name=" + app});
  for (const bool settled : {false, true}) {
    const std::string s = settled ? "after-settled" : "after-claimed";
    INFO("session " << s);
    (void)f->append(s, {unsettled(s + "-1")});  // Entry kT0.
    if (settled) {
      REQUIRE(f->claim_available({.session_id = s, .holder = "h", .ttl_ms = 30000}).verdict ==
              a2::ClaimVerdict::claimed);
      REQUIRE(f->complete_attempt({.session_id = s, .index = 1, .attempt = 1}).verdict ==
              a2::CompleteVerdict::completed);
      // The completion leaves the entry (the lease end); the next claim removes it.
      REQUIRE(same(all_entries(f), {{s, kT0 + 30000}}));
    }
    pqxx::connection conn(PostgresServer::shared().connection());
    pqxx::work claim(conn);
    claim.exec("set local search_path to \"" + f.schema + "\"");
    const auto verdict =
        claim
            .exec1("select r_verdict from a2_claim_available(" + claim.quote(s) + ", 'other', " +
                   std::to_string(kT0) + ", " + std::to_string(kT0 + 30000) + ", '{}', null)")[0]
            .as<std::string>();
    REQUIRE(verdict == (settled ? "settled" : "claimed"));
    auto appended =
        std::async(std::launch::async, [&] { return f->append(s, {unsettled(s + "-late")}); });
    // Until the store's append waits for the session lock.
    a2::postgres_test::await([&] { return lock_waiters(app, LockKind::session) > 0; });
    claim.commit();
    (void)appended.get();
    // The late event is claimable now: the session is due now, the sweep repairs nothing, and
    // the next claim takes it.
    CHECK(same(f->find_work({.after = std::nullopt, .due_by_ms = kT0, .limit = 1000}).sessions,
               {{s, kT0}}));
    CHECK(f->sweep_work().indexed.empty());
    const auto next = f->claim_available({.session_id = s, .holder = "h", .ttl_ms = 30000});
    REQUIRE(next.verdict == a2::ClaimVerdict::claimed);
    REQUIRE(next.events.size() == 1);
    CHECK(next.events[0].id == s + "-late");
    // Leave nothing claimable or held for the next round's find_work.
    for (const std::int64_t index : {std::int64_t{1}, next.events[0].index})
      if (index != 1 || !settled)
        REQUIRE(f->complete_attempt({.session_id = s, .index = index, .attempt = 1}).verdict ==
                a2::CompleteVerdict::completed);
    REQUIRE(f->claim_available({.session_id = s, .holder = "h", .ttl_ms = 30000}).verdict ==
            a2::ClaimVerdict::settled);
  }
}

// An append of one event to a session whose entry is already due writes nothing to the work
// index: the entry's row is neither updated nor locked (a lock would set its xmax).
TEST_CASE("an append to a session already due leaves its entry's row untouched",
          "[postgres][discovery]") {
  auto f = fresh();
  (void)f->append("due", {unsettled("due-1")});  // Creates the entry at kT0.
  const auto row_before =
      sql(f, "select xmin::text, xmax::text from a2_work where session_id = 'due'");
  REQUIRE(row_before.size() == 1);
  REQUIRE(std::string(row_before[0][1].c_str()) == "0");
  for (int i = 2; i <= 4; ++i) {
    f.clock->advance(1);
    (void)f->append("due", {unsettled("due-" + std::to_string(i))});
  }
  const auto row_after =
      sql(f, "select xmin::text, xmax::text from a2_work where session_id = 'due'");
  REQUIRE(row_after.size() == 1);
  CHECK(std::string(row_after[0][0].c_str()) == row_before[0][0].c_str());
  CHECK(std::string(row_after[0][1].c_str()) == "0");
  // A session whose entry is later (its one event held) gets it lowered by the append.
  (void)f->append("held", {unsettled("held-1")});
  REQUIRE(f->claim_available({.session_id = "held", .holder = "h", .ttl_ms = 30000}).verdict ==
          a2::ClaimVerdict::claimed);
  REQUIRE(count(f, "select next_at from a2_work where session_id = 'held'") > kT0 + 3);
  (void)f->append("held", {unsettled("held-2")});
  CHECK(count(f, "select next_at from a2_work where session_id = 'held'") == kT0 + 3);
}

TEST_CASE("the work index orders session ids bytewise whatever the database collation",
          "[postgres][discovery]") {
  auto f = fresh();
  for (const std::string s : {"b", "B", "a", "_", "a:b", "A"})
    (void)f->append(s, {unsettled(s + "-e")});
  std::vector<std::string> order;
  for (const auto& e : all_entries(f)) order.push_back(e.session_id);
  CHECK(order == std::vector<std::string>{"A", "B", "_", "a", "a:b", "b"});
  auto page =
      f->find_work({.after = a2::WorkCursor{kT0, "_"}, .due_by_ms = std::nullopt, .limit = 2});
  REQUIRE(page.sessions.size() == 2);
  CHECK(page.sessions[0].session_id == "a");
  CHECK(page.sessions[1].session_id == "a:b");
}

}  // namespace

}  // namespace a2::postgres_test::discovery_test
