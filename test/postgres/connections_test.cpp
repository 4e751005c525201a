// SPDX-License-Identifier: MIT
// Connections and deadlines on Postgres, with the default pool (4) and with 8: after the server
// drops every connection (pg_terminate_backend, a restart) the next calls all succeed; with the
// server stopped (SIGSTOP of the postmaster and its backends) and more threads than connections
// every call fails within its command_timeout plus a small margin, and the store recovers once
// the server continues. A read that fails on a row it cannot decode leaves its connection usable.
// The backends of a store's connections keep the memory their statements free (the set-up's
// allocator warm-up).
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <latch>
#include <memory>
#include <pqxx/pqxx>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "a2/postgres.hpp"
#include "servers/postgres_server.hpp"
#include "support/stopped_server.hpp"

namespace a2::postgres_test::connections_test {
namespace {

using namespace std::chrono_literals;
using a2::test::PostgresServer;

// How far past its timeout a call may end on this (busy, shared) machine.
constexpr auto kMargin = 750ms;

std::string next_schema() {
  static std::atomic<int> n{0};
  return "conn" + std::to_string(++n);
}

a2::postgres::Options options_on(const std::string& connection, std::size_t pool_size) {
  a2::postgres::Options o;
  o.connection = connection;
  o.schema = next_schema();
  o.clock = std::make_shared<a2::ManualClock>(1'000'000);
  if (pool_size != 0) o.pool_size = pool_size;  // 0: the default.
  return o;
}

a2::NewEvent ev() {
  a2::NewEvent e;
  e.type = "t";
  return e;
}

// The server's backends of connections named `app`.
long long backends(const std::string& connection, const std::string& app) {
  pqxx::connection admin(connection);
  pqxx::nontransaction tx(admin);
  return tx
      .exec("select count(*) from pg_stat_activity where application_name = " + tx.quote(app))[0][0]
      .as<long long>();
}

// Busy threads until the store has opened all `pool_size` connections.
void fill_pool(a2::Store& store, std::size_t pool_size, const std::string& connection,
               const std::string& app) {
  // The threads start together (a latch), so that under a slow build (TSan) enough calls still
  // overlap for the pool to open every connection.
  for (int round = 0; round < 200 && backends(connection, app) < static_cast<long long>(pool_size);
       ++round) {
    std::vector<std::thread> threads;
    std::latch start(static_cast<std::ptrdiff_t>(pool_size * 2));
    for (std::size_t t = 0; t < pool_size * 2; ++t)
      threads.emplace_back([&] {
        start.arrive_and_wait();
        for (int i = 0; i < 30; ++i) (void)store.read("warm");
      });
    for (auto& t : threads) t.join();
  }
  REQUIRE(backends(connection, app) == static_cast<long long>(pool_size));
}

void sequential_calls_succeed(a2::Store& store, int n) {
  const auto before = static_cast<std::int64_t>(store.read("s").size());
  for (int i = 0; i < n; ++i) {
    INFO("call " << i);
    if (i % 2 == 0)
      REQUIRE(store.append("s", {ev()}).events.at(0).index == before + i / 2 + 1);
    else
      REQUIRE(store.read("s").size() == static_cast<std::size_t>(before + i / 2 + 1));
  }
}

TEST_CASE("after pg_terminate_backend of every connection the next calls all succeed",
          "[connections][postgres]") {
  const std::size_t pool_size = GENERATE(std::size_t{0}, std::size_t{8});
  const std::size_t connections = pool_size == 0 ? a2::postgres::Options{}.pool_size : pool_size;
  INFO("pool size " << connections);
  auto& server = PostgresServer::shared();
  const std::string app = "a2_conn_" + std::to_string(connections);
  auto store =
      a2::postgres::open(options_on(server.connection() + " application_name=" + app, pool_size));
  fill_pool(*store, connections, server.connection(), app);
  {
    pqxx::connection admin(server.connection());
    pqxx::nontransaction tx(admin);
    auto killed =
        tx.exec("select pg_terminate_backend(pid) from pg_stat_activity where application_name = " +
                tx.quote(app));
    REQUIRE(killed.size() == connections);
  }
  for (int i = 0; i < 100 && backends(server.connection(), app) > 0; ++i)
    std::this_thread::sleep_for(20ms);
  REQUIRE(backends(server.connection(), app) == 0);
  sequential_calls_succeed(*store, static_cast<int>(2 * connections + 2));
}

TEST_CASE("after a Postgres restart the next calls all succeed", "[connections][postgres]") {
  const std::size_t pool_size = GENERATE(std::size_t{0}, std::size_t{8});
  const std::size_t connections = pool_size == 0 ? a2::postgres::Options{}.pool_size : pool_size;
  INFO("pool size " << connections);
  PostgresServer server;
  const std::string app = "a2_restart";
  auto store =
      a2::postgres::open(options_on(server.connection() + " application_name=" + app, pool_size));
  fill_pool(*store, connections, server.connection(), app);
  (void)store->append("s", {ev()});
  server.stop();
  server.start();
  sequential_calls_succeed(*store, static_cast<int>(2 * connections + 2));
}

TEST_CASE("with Postgres stopped every call fails within its command_timeout",
          "[connections][deadline][postgres]") {
  PostgresServer server;
  auto options = options_on(server.connection(), 0);  // The default pool size.
  options.command_timeout = 1000ms;
  auto store = a2::postgres::open(options);
  (void)store->append("s", {ev()});
  const int threads_count = static_cast<int>(3 * options.pool_size);
  server.pause();
  std::vector<std::chrono::steady_clock::duration> took(threads_count);
  std::vector<int> outcome(threads_count, 0);  // 1: unavailable, 2: ... outcome unknown.
  std::vector<std::thread> threads;
  for (int t = 0; t < threads_count; ++t)
    threads.emplace_back([&, t] {
      const auto start = std::chrono::steady_clock::now();
      try {
        if (t % 2 == 0)
          (void)store->append("s", {ev()});
        else
          (void)store->read("s");
      } catch (const a2::Unavailable& e) {
        outcome[t] = e.outcome_unknown() ? 2 : 1;
      } catch (...) {
      }
      took[t] = std::chrono::steady_clock::now() - start;
    });
  for (auto& th : threads) th.join();
  server.resume();
  int unknown = 0;
  for (int t = 0; t < threads_count; ++t) {
    INFO("thread " << t << " took "
                   << std::chrono::duration_cast<std::chrono::milliseconds>(took[t]).count()
                   << " ms");
    CHECK(outcome[t] != 0);
    CHECK(took[t] <= 1000ms + kMargin);
    if (outcome[t] == 2) ++unknown;
  }
  // Calls that waited for a connection until their deadline sent nothing and say so (a call
  // may get a connection a timed-out call freed, and send, so more than pool_size can be
  // unknown on a slow machine).
  CHECK(unknown < threads_count);
  sequential_calls_succeed(*store, 10);
}

// S258 (conformance/support/stopped_server.hpp), with the default pool size.
TEST_CASE("complete_in_sessions against a stopped server fails whole, outcome unknown",
          "[postgres][deadline][complete_in_sessions][S258]") {
  PostgresServer server;
  auto options = options_on(server.connection(), 0);
  options.command_timeout = 1000ms;
  auto store = a2::postgres::open(options);
  a2::conformance::check_complete_in_sessions_stopped(
      *store, 1000ms, kMargin, [&] { server.pause(); }, [&] { server.resume(); });
}

TEST_CASE("a Postgres pool exhausted past pool_acquire_timeout fails the waiting call unsent",
          "[connections][deadline][postgres]") {
  PostgresServer server;
  auto options = options_on(server.connection(), 1);
  options.command_timeout = 3000ms;
  options.pool_acquire_timeout = 300ms;
  auto store = a2::postgres::open(options);
  server.pause();
  // Resumes the server and joins the holder however the test leaves.
  struct Holder {
    PostgresServer& server;
    std::thread thread;
    ~Holder() {
      server.resume();
      if (thread.joinable()) thread.join();
    }
  } holder{server, std::thread([&] {
             try {
               (void)store->read("s");  // Holds the one connection until its 3 s deadline.
             } catch (const a2::Unavailable&) {
             }
           })};
  std::this_thread::sleep_for(100ms);
  const auto start = std::chrono::steady_clock::now();
  try {
    (void)store->append("s", {ev()});
    FAIL("the append got a connection");
  } catch (const a2::Unavailable& e) {
    INFO(e.what());
    CHECK_FALSE(e.outcome_unknown());
  }
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK(took >= 250ms);
  CHECK(took <= 300ms + kMargin);
  server.resume();
  holder.thread.join();
  sequential_calls_succeed(*store, 4);
}

// The server's backends of connections named `app`, by pid.
std::vector<int> backend_pids(const std::string& connection, const std::string& app) {
  pqxx::connection admin(connection);
  pqxx::nontransaction tx(admin);
  std::vector<int> out;
  for (const auto& row :
       tx.exec("select pid from pg_stat_activity where application_name = " + tx.quote(app) +
               " order by pid"))
    out.push_back(row[0].as<int>());
  return out;
}

// A read hands its rows to the decoder as they arrive (docs/postgres-layout.md#statements). A row it
// cannot decode, in the middle of a long read, fails that read; the rest of the statement's
// rows are read off first, so its connection serves the next calls (the same backends, none
// reopened).
TEST_CASE("a read stopped by a row it cannot decode leaves its connection to the next calls",
          "[connections][postgres]") {
  const std::size_t pool_size = GENERATE(std::size_t{0}, std::size_t{1});
  INFO("pool size " << pool_size << " (0: the default)");
  auto& server = PostgresServer::shared();
  const std::string app = "a2_undecodable_" + std::to_string(pool_size);
  auto options = options_on(server.connection() + " application_name=" + app, pool_size);
  auto store = a2::postgres::open(options);
  for (int i = 0; i < 3; ++i) (void)store->append("bad", std::vector<a2::NewEvent>(1000, ev()));
  (void)store->append("good", std::vector<a2::NewEvent>(10, ev()));
  {
    // Valid jsonb that no writer leaves: a cause without its index and attempt.
    pqxx::connection admin(server.connection());
    pqxx::nontransaction tx(admin);
    tx.exec("update " + tx.quote_name(options.schema) +
            ".a2_events set cause = '{}' where session_id = 'bad' and idx = 1500");
  }
  const auto pids = backend_pids(server.connection(), app);
  REQUIRE_FALSE(pids.empty());
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round);
    CHECK_THROWS_AS(store->read("bad"), a2::Unavailable);
    REQUIRE(store->read("good").size() == static_cast<std::size_t>(10 + round));
    REQUIRE(store->read("bad", {.after_index = 1500}).size() == 1500);
    REQUIRE(store->append("good", {ev()}).events.at(0).index == 11 + round);
  }
  CHECK(backend_pids(server.connection(), app) == pids);
}

// The minor page faults of a process so far (Linux, /proc/<pid>/stat; the test server runs on
// this machine): field 10, counted from the command's closing parenthesis.
long long minor_faults(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  REQUIRE(std::getline(in, line));
  std::istringstream fields(line.substr(line.rfind(')') + 1));
  std::string field;
  for (int k = 3; k <= 10; ++k) REQUIRE(fields >> field);
  return std::stoll(field);
}

long long minor_faults(const std::vector<int>& pids) {
  long long sum = 0;
  for (int pid : pids) sum += minor_faults(pid);
  return sum;
}

// One claim + complete cycle on a session holding one claimable event: its child (unsettled) is
// the next cycle's.
void cycle(a2::Store& store, const std::string& session) {
  auto claim = store.claim_available({.session_id = session, .holder = "w", .ttl_ms = 600000});
  REQUIRE(claim.verdict == a2::ClaimVerdict::claimed);
  REQUIRE(claim.events.size() == 1);
  const auto& e = claim.events.front();
  auto done = store.complete_attempt(
      {.session_id = session,
       .index = e.index,
       .attempt = e.attempt_count,
       .events = {a2::ChildEvent{.id = std::nullopt,
                                 .type = "child",
                                 .payload = 1,
                                 .lane = std::nullopt,
                                 .settled = false}}});
  REQUIRE(done.verdict == a2::CompleteVerdict::completed);
}

// The set-up's allocator warm-up (docs/postgres-layout.md#backend-memory): the backend of a
// pooled connection keeps the memory its statements free, instead of giving the top of its heap
// back to the system after a statement and faulting it in again for the next (measured: 4-5
// minor faults per statement without the warm-up, about half a fault with it). A store that
// finds the schema set up (the common start: schema.sql is not applied again, so no connection
// has allocated much before), with the default pool.
TEST_CASE("the backends of a store's connections keep the memory their statements free",
          "[connections][postgres]") {
  auto& server = PostgresServer::shared();
  const std::string app = "a2_backend_memory";
  auto options = options_on(server.connection() + " application_name=" + app, 0);
  (void)a2::postgres::open(options);  // Sets the schema up; closed at once.
  auto store = a2::postgres::open(options);
  (void)store->append("cycle", {ev()});
  for (int i = 0; i < 300; ++i) cycle(*store, "cycle");  // Shared memory mapped, plans made.
  const auto pids = backend_pids(server.connection(), app);
  REQUIRE_FALSE(pids.empty());
  const long long before = minor_faults(pids);
  constexpr int kCycles = 500;
  for (int i = 0; i < kCycles; ++i) cycle(*store, "cycle");
  const double per_statement =
      static_cast<double>(minor_faults(pids) - before) / (2.0 * kCycles);
  INFO("minor faults per statement " << per_statement);
  CHECK(per_statement < 1.5);
  CHECK(backend_pids(server.connection(), app) == pids);
}

}  // namespace

}  // namespace a2::postgres_test::connections_test
