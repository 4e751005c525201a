// SPDX-License-Identifier: MIT
// a2_postgres_bench: throughput, latency and round trips per operation of the Postgres backend,
// with pgbench running one single-row INSERT per transaction as the ceiling.
//
//   a2_postgres_bench [--connection "<libpq connection string>"] [--scale F] [--only LIST]
//
// --only runs only the named sections (comma-separated): operations (the operation and growth
// tables), cycle (only the claim + complete blocks at 1 and 16 threads, when operations is not
// run), find_work, statements, ceiling, groups, wake, large_claim, spin (the store option
// spin_wait), history. The targets table shows the rows whose inputs were measured.
//
// Without --connection it starts its own scratch cluster (initdb + postgres on a free port,
// socket in a temp dir, as user a2test when run as root) with pg_stat_statements loaded.
// Prints markdown to stdout (bench/run collects it into bench/RESULTS.md), progress to stderr.

#include <dlfcn.h>
#include <libpq-fe.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <pqxx/pqxx>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "a2/clock.hpp"
#include "a2/postgres.hpp"
#include "bench_common.hpp"
#include "cpu_placement.hpp"
#include "delay_proxy.hpp"
#include "postgres/connection_pool.hpp"
#include "servers/postgres_server.hpp"
#include "spin_section.hpp"
#include "workloads.hpp"

// ---- Client round trips, counted where they happen. ----
// The store (src/postgres/executor.hpp) and libpqxx send every request through one of the libpq
// calls below, each of which sends one request whose reply the caller waits for: one round
// trip. This program defines them, so the linker binds the store's and libpqxx's calls to these
// (an executable's symbols come first); each counts and forwards to libpq's own (RTLD_NEXT). The
// store exposes no counter of its own.
namespace {
std::atomic<std::int64_t> g_round_trips{0};
// The store's notifier runs its rounds (sql/send_wakes.sql, prepared as a2_send_wakes) on a
// connection of its own, after the writes returned: counted apart, not as a write's round trip.
std::atomic<std::int64_t> g_notify_rounds{0};

template <class F>
F next_symbol(const char* name) {
  void* symbol = ::dlsym(RTLD_NEXT, name);
  if (symbol == nullptr) {
    std::cerr << "a2_postgres_bench: cannot find libpq's " << name << std::endl;
    std::abort();
  }
  F fn;
  std::memcpy(&fn, &symbol, sizeof fn);
  return fn;
}
}  // namespace

extern "C" {
PGresult* PQexec(PGconn* conn, const char* query) {
  static auto real = next_symbol<PGresult* (*)(PGconn*, const char*)>("PQexec");
  g_round_trips.fetch_add(1, std::memory_order_relaxed);
  return real(conn, query);
}
PGresult* PQexecParams(PGconn* conn, const char* command, int n, const Oid* types,
                       const char* const* values, const int* lengths, const int* formats,
                       int result_format) {
  static auto real =
      next_symbol<PGresult* (*)(PGconn*, const char*, int, const Oid*, const char* const*,
                                const int*, const int*, int)>("PQexecParams");
  g_round_trips.fetch_add(1, std::memory_order_relaxed);
  return real(conn, command, n, types, values, lengths, formats, result_format);
}
PGresult* PQexecPrepared(PGconn* conn, const char* name, int n, const char* const* values,
                         const int* lengths, const int* formats, int result_format) {
  static auto real = next_symbol<PGresult* (*)(PGconn*, const char*, int, const char* const*,
                                               const int*, const int*, int)>("PQexecPrepared");
  if (std::strcmp(name, "a2_send_wakes") == 0)
    g_notify_rounds.fetch_add(1, std::memory_order_relaxed);
  else
    g_round_trips.fetch_add(1, std::memory_order_relaxed);
  return real(conn, name, n, values, lengths, formats, result_format);
}
PGresult* PQprepare(PGconn* conn, const char* name, const char* query, int n, const Oid* types) {
  static auto real =
      next_symbol<PGresult* (*)(PGconn*, const char*, const char*, int, const Oid*)>("PQprepare");
  g_round_trips.fetch_add(1, std::memory_order_relaxed);
  return real(conn, name, query, n, types);
}
int PQsendQuery(PGconn* conn, const char* query) {
  static auto real = next_symbol<int (*)(PGconn*, const char*)>("PQsendQuery");
  g_round_trips.fetch_add(1, std::memory_order_relaxed);
  return real(conn, query);
}
int PQsendQueryPrepared(PGconn* conn, const char* name, int n, const char* const* values,
                        const int* lengths, const int* formats, int result_format) {
  static auto real = next_symbol<int (*)(PGconn*, const char*, int, const char* const*, const int*,
                                         const int*, int)>("PQsendQueryPrepared");
  if (std::strcmp(name, "a2_send_wakes") == 0)
    g_notify_rounds.fetch_add(1, std::memory_order_relaxed);
  else
    g_round_trips.fetch_add(1, std::memory_order_relaxed);
  return real(conn, name, n, values, lengths, formats, result_format);
}
int PQsendPrepare(PGconn* conn, const char* name, const char* query, int n, const Oid* types) {
  static auto real =
      next_symbol<int (*)(PGconn*, const char*, const char*, int, const Oid*)>("PQsendPrepare");
  g_round_trips.fetch_add(1, std::memory_order_relaxed);
  return real(conn, name, query, n, types);
}
}  // extern "C"

namespace {

using a2::bench::fmt;
using a2::bench::get;
using a2::bench::note;
using a2::bench::percent;
using a2::bench::Table;

// Counters (our own snapshot query is taken out by the Meter's calibration):
//   round_trips  client round trips, counted above (every connection of this process)
//   statements   top-level statements the server executed (pg_stat_statements, track = top);
//                a cross-check: it also counts a statement the planner runs while planning
//                (e.g. a STABLE SQL function folded at plan time), which is no round trip
//   exec_ms      sum(total_exec_time): server time executing them (function bodies included)
//   blks_read    sum(shared_blks_read): pages they read from outside the server's buffer cache
//   blks_dirtied sum(shared_blks_dirtied): pages they dirtied
//   blks_hit     sum(shared_blks_hit): pages they found in the buffer cache
//   wal_records  sum(wal_records): WAL records they wrote
a2::bench::Counters snapshot(pqxx::connection& admin, bool have_statements) {
  a2::bench::Counters c{{"round_trips", 0}, {"notify_rounds", 0}, {"statements", 0},
                        {"exec_ms", 0},     {"notify_ms", 0},     {"write_ms", 0},
                        {"blks_read", 0},   {"blks_dirtied", 0},  {"blks_hit", 0},
                        {"wal_records", 0}};
  c["round_trips"] = static_cast<double>(g_round_trips.load());
  c["notify_rounds"] = static_cast<double>(g_notify_rounds.load());
  if (!have_statements) return c;
  pqxx::nontransaction tx(admin);
  // exec_ms: every top-level statement; notify_ms: the notifiers' rounds (sql/send_wakes.sql,
  // known by its header comment); write_ms: the rest, the operations' own statements.
  auto row = tx.exec(
      "select coalesce(sum(calls), 0)::float8, coalesce(sum(total_exec_time), 0)::float8, "
      "coalesce(sum(total_exec_time) filter (where query like '%send_wakes: one round%'), "
      "0)::float8, coalesce(sum(shared_blks_read), 0)::float8, "
      "coalesce(sum(shared_blks_dirtied), 0)::float8, coalesce(sum(shared_blks_hit), 0)::float8, "
      "coalesce(sum(wal_records), 0)::float8 "
      "from pg_stat_statements where dbid = (select oid from pg_database where datname = "
      "current_database()) and toplevel")[0];
  c["statements"] = row[0].as<double>();
  c["exec_ms"] = row[1].as<double>();
  c["notify_ms"] = row[2].as<double>();
  c["write_ms"] = c["exec_ms"] - c["notify_ms"];
  c["blks_read"] = row[3].as<double>();
  c["blks_dirtied"] = row[4].as<double>();
  c["blks_hit"] = row[5].as<double>();
  c["wal_records"] = row[6].as<double>();
  return c;
}

// pgbench, found where the test servers find postgres (servers/postgres_server.hpp).
std::string find_pgbench() {
  std::string exe = a2::test::find_postgres_program("pgbench");
  if (exe.empty()) throw std::runtime_error("pgbench not found (postgresql-contrib)");
  return exe;
}

struct Ceiling {
  std::string command;
  double tps = 0;
  double latency_ms = 0;
  int runs = 0;  // pgbench runs merged into this one.
  // Adds a run of the same command and transaction count (a2::bench::merge_run): TPS over all
  // the runs, latency their mean.
  void merge(const Ceiling& run) {
    command = run.command;
    a2::bench::merge_run(tps, latency_ms, runs, run.tps, run.latency_ms);
  }
};

Ceiling pgbench(const std::string& exe, const std::string& script, const std::string& connection,
                const std::string& options) {
  Ceiling c;
  c.command = "pgbench -n -f " + std::filesystem::path(script).filename().string() + " " + options;
  std::string out =
      a2::bench::capture(exe + " -n -f " + a2::bench::shell_quote(script) + " " + options + " " +
                         a2::bench::shell_quote(connection) + " 2>&1");
  std::smatch m;
  if (std::regex_search(out, m, std::regex(R"(tps = ([0-9.]+) \(without initial)")))
    c.tps = std::stod(m[1]);
  if (std::regex_search(out, m, std::regex(R"(latency average = ([0-9.]+) ms)")))
    c.latency_ms = std::stod(m[1]);
  if (c.tps <= 0) throw std::runtime_error("cannot parse pgbench output:\n" + out);
  return c;
}

// The least an append must do on the seed's table and a2's work index, as one server-side
// function with constant values and no checks (the protocol floor of the ceiling section plus
// the work index entry a2's append keeps): the session lock, the head read, the insert, the
// a2_work upsert. The growth floor below runs it.
constexpr const char* kGrowthFloorFunction = R"(create or replace function a2bench_growth_floor(s text) returns bigint
language plpgsql as $$
declare
  i bigint;
begin
  perform pg_advisory_xact_lock(hashtext(s));
  i := coalesce((select head.idx from a2_events head where head.session_id = s
                  order by head.idx desc limit 1), 0) + 1;
  insert into a2_events (session_id, idx, event_id, event_type, payload, created_at)
  values (s, i, s || '-' || i, 'bench.event', '{"n": 1, "text": "benchmark event"}',
          1700000000000);
  insert into a2_work as w (session_id, next_at) values (s, 1700000000000)
  on conflict (session_id) do update set next_at = excluded.next_at
   where excluded.next_at < w.next_at;
  return i;
end $$)";

// The floor as sessions grow (a2::bench::GrowthFloor): kGrowthFloorFunction on the key pattern
// of the suite's growth rows, so what grows with the number of sessions in the table and its
// indexes shows apart from a2's code; on a connection of its own, sessions
// "a2bench-gfloor-<s>". Server time per call from pg_stat_statements.
class GrowthFloorCalls {
 public:
  GrowthFloorCalls(std::string connection, std::string schema)
      : connection_(std::move(connection)), schema_(std::move(schema)) {}
  // Connects and creates the function (the suite calls it once its own sessions exist).
  void setup() {
    conn_ = std::make_unique<pqxx::connection>(connection_);
    pqxx::nontransaction(*conn_).exec("set search_path to " + conn_->quote_name(schema_));
    pqxx::nontransaction(*conn_).exec(kGrowthFloorFunction);
    conn_->prepare("growth_floor", "select a2bench_growth_floor($1)");
  }
  void operator()(const std::string& session) {
    pqxx::nontransaction tx(*conn_);
    (void)tx.exec_prepared("growth_floor", "a2bench-gfloor-" + session);
  }
  // Deletes the floor's rows and its function (the store's data stays).
  void drop() {
    if (!conn_) return;
    pqxx::nontransaction tx(*conn_);
    tx.exec("delete from a2_events where session_id like 'a2bench-gfloor-%'");
    tx.exec("delete from a2_work where session_id like 'a2bench-gfloor-%'");
    tx.exec("drop function if exists a2bench_growth_floor(text)");
  }

 private:
  std::string connection_;
  std::string schema_;
  std::unique_ptr<pqxx::connection> conn_;
};

// A libpq connection set up as the store sets up its own (search_path, the wake and planner
// settings, the allocator warm-up: postgres/connection_pool.cpp) with a2's statement for an
// append of one event (sql/append_one.sql, with its result columns) prepared and called once (a
// new backend compiles the plpgsql functions at their first call, which the store's pooled
// connections did long before): the floor clients' connection, calling a2's statement as a
// library's callers call the store but with no library.
class AppendOneConnection {
 public:
  AppendOneConnection(const std::string& connection, const std::string& schema,
                      const std::string& warm_session, const std::string& warm_id)
      : c_(PQconnectdb(connection.c_str())) {
    if (PQstatus(c_) != CONNECTION_OK) {
      const std::string why = PQerrorMessage(c_);
      PQfinish(c_);
      throw std::runtime_error("floor client: " + why);
    }
    const std::string search_path = "set search_path to \"" + schema + "\"";
    const std::string planner = a2::postgres::detail::planner_settings_sql();
    const std::string wake =
        a2::postgres::detail::settings_sql(a2::postgres::detail::kWakeSettings);
    const std::string warm_up(a2::postgres::detail::kAllocatorWarmUp);
    for (const char* setup : {search_path.c_str(), wake.c_str(), planner.c_str(), warm_up.c_str()})
      PQclear(PQexec(c_, setup));
    PQclear(PQprepare(c_, "floor_append_one", text().c_str(), 0, nullptr));
    const char* values[] = {
        warm_session.c_str(), "1700000000000", warm_id.c_str(), "bench.event", "{}", kCheckId};
    PQclear(PQexecPrepared(c_, "floor_append_one", 6, values, nullptr, nullptr, 0));
  }
  ~AppendOneConnection() { PQfinish(c_); }
  AppendOneConnection(const AppendOneConnection&) = delete;
  AppendOneConnection& operator=(const AppendOneConnection&) = delete;

  // One append of event `id` to `session` (created at a fixed time); with `spin`, the reply is
  // first polled for as the store's spin_wait does (common/spin_wait.hpp), else awaited asleep.
  void append(const std::string& session, const std::string& id,
              a2::detail::SpinPacer* spin = nullptr) {
    const char* values[] = {session.c_str(),
                            "1700000000000",
                            id.c_str(),
                            "bench.event",
                            "{\"n\": 1, \"text\": \"benchmark event\"}",
                            kCheckId};
    PGresult* r = nullptr;
    if (spin == nullptr) {
      r = PQexecPrepared(c_, "floor_append_one", 6, values, nullptr, nullptr, 0);
    } else {
      if (PQsendQueryPrepared(c_, "floor_append_one", 6, values, nullptr, nullptr, 0) == 0)
        throw std::runtime_error("floor client: the send failed");
      a2::detail::spin_until_readable(PQsocket(c_), *spin,
                                      std::chrono::steady_clock::now() + std::chrono::seconds(5));
      r = PQgetResult(c_);
      for (PGresult* more; (more = PQgetResult(c_)) != nullptr;) PQclear(more);
    }
    const bool ok = PQresultStatus(r) == PGRES_TUPLES_OK;
    PQclear(r);
    if (!ok) throw std::runtime_error("floor client: the append failed");
  }

 private:
  // check_id: the ids are drawn as the store draws its own, which it calls with "false".
  static constexpr const char* kCheckId = "false";

  static const std::string& text() {
    static const std::string t = [] {
      std::ifstream file(std::string(A2_BENCH_SQL_DIR) + "/append_one.sql");
      std::stringstream content;
      content << file.rdbuf();
      return content.str();
    }();
    return t;
  }
  PGconn* c_;
};

// The sections --only selects (all when empty).
struct Sections {
  std::vector<std::string> names;
  bool has(const std::string& name) const {
    return names.empty() || std::find(names.begin(), names.end(), name) != names.end();
  }
  static Sections parse(const std::string& list) {
    static const std::vector<std::string> known = {
        "operations", "cycle", "find_work",   "statements", "ceiling",
        "groups",     "wake",  "large_claim", "spin",       "history"};
    Sections out;
    std::size_t start = 0;
    while (start <= list.size()) {
      std::size_t end = list.find(',', start);
      if (end == std::string::npos) end = list.size();
      std::string name = list.substr(start, end - start);
      if (std::find(known.begin(), known.end(), name) == known.end())
        throw std::runtime_error("--only: unknown section '" + name +
                                 "' (operations, cycle, find_work, statements, ceiling, groups, "
                                 "wake, large_claim, spin, history)");
      out.names.push_back(name);
      start = end + 1;
    }
    return out;
  }
};

// One claim of 5,000 ready events: per repetition a fresh session gets 5,000 unsettled events
// (appended in batches of 1,000), then one claim_available takes them all, once without
// max_events and once with max_events = 5000 (each on its own session). Client ms is the call's
// wall time, server ms the pg_stat_statements total_exec_time of its top-level statement.
struct LargeClaim {
  std::string name;
  a2::bench::LatencyRecorder client;  // ns per call
  a2::bench::LatencyRecorder server;  // ns of server time per call
};

std::vector<LargeClaim> large_claims(a2::Store& store, a2::bench::Meter& meter, int repetitions) {
  constexpr std::int64_t kEvents = 5000;
  std::vector<LargeClaim> out(2);
  out[0].name = "one claim of 5,000 ready events (no max_events)";
  out[1].name = "one claim of 5,000 ready events (max_events = 5000)";
  const std::string run_tag = std::to_string(::getpid());
  for (int r = 0; r < repetitions; ++r) {
    for (std::size_t v = 0; v < out.size(); ++v) {
      const std::string session =
          "large-claim-" + run_tag + "-" + std::to_string(v) + "-" + std::to_string(r);
      for (std::int64_t done = 0; done < kEvents; done += 1000)
        (void)store.append(session, a2::bench::events(1000, done, /*settled=*/false));
      a2::ClaimResult claim;
      std::int64_t client_ns = 0;
      a2::bench::Counters d = meter.around([&] {
        const auto t0 = a2::bench::SteadyClock::now();
        claim = store.claim_available(
            {.session_id = session,
             .holder = "large",
             .ttl_ms = 600000,
             .expires_at_ms = std::nullopt,
             .exclude_indexes = {},
             .max_events = v == 0 ? std::nullopt : std::optional<std::int64_t>(kEvents)});
        client_ns =
            std::chrono::duration_cast<std::chrono::nanoseconds>(a2::bench::SteadyClock::now() - t0)
                .count();
      });
      if (claim.verdict != a2::ClaimVerdict::claimed ||
          static_cast<std::int64_t>(claim.events.size()) != kEvents)
        throw std::runtime_error("large claim on " + session + ": expected " +
                                 std::to_string(kEvents) + " claimed events, got " +
                                 std::to_string(claim.events.size()));
      out[v].client.add(client_ns);
      out[v].server.add(static_cast<std::int64_t>(get(d, "exec_ms") * 1e6));
    }
  }
  return out;
}

// The statement floor of one claim of 5,000 ready events: on the same kind of fresh session,
// one UPDATE ... RETURNING that writes the claim's columns of every claimable row and returns
// the stored-event columns as a2's reads do, with nothing else: no row locks taken in index
// order before the update, no boundary, no sorted array of rows, no work index. Server ms per
// repetition (pg_stat_statements total_exec_time).
// pgbench's script of a2's own append function (Ceiling and floors): called as the store calls it
// for an append of one event (sql/append_one.sql without the result columns), each client its
// own session, with a fresh event id per call shaped as the store's default ids
// (a2::TimeOrderedIdSource, a2/clock.hpp): 32 hex digits, the first 12 the milliseconds of the
// clock, so every client's new ids go to the right edge of the id index as the store's do. Random
// ids (the script's first form) land on random pages of an index that grows with each round:
// on a scratch cluster whose table held a few million rows they cost the function 7.3 µs more
// server time per call and 8% of its calls/s at one client (16 alternating pairs of 2 s runs,
// every pair the same way); on the bench's young schema about one buffer hit per call. The id is
// built in the statement (the clock, three to_hex), a little server time per call that the
// store's client spends instead; the function's row counts it. check_id false, as the store
// calls it for the ids it draws (the function's probe of the id index skipped).
constexpr const char* kAppendFunctionScript =
    "\\set r1 random(0, 4294967295)\n"
    "\\set r2 random(0, 4294967295)\n"
    "select r_index from a2_append_one_by_reply('a2bench-fn-' || :client_id, 1700000000000, "
    "lpad(to_hex((extract(epoch from clock_timestamp()) * 1000)::bigint), 12, '0') || "
    "lpad(to_hex(:r1::bigint), 8, '0') || lpad(to_hex(:r2::bigint), 8, '0') || "
    "lpad(to_hex(:client_id::integer), 4, '0'), "
    "'bench.event', '{\"n\": 1, \"text\": \"benchmark event\"}'::jsonb, false);\n";

constexpr const char* kLargeClaimFloorStatement =
    "update a2_events set attempt_count = attempt_count + 1,"
    " first_claimed_at = coalesce(first_claimed_at, $2), last_claimed_at = $2,"
    " claim_holder = $3, claim_expires_at = $4"
    " where session_id = $1 and processed_at is null and failed_at is null and lane_ready"
    " and (claim_expires_at is null or claim_expires_at <= $2)"
    " and (available_at is null or available_at <= $2)"
    " returning session_id, idx, event_id, event_type, payload::text, created_at, cause::text,"
    " lane, processed_at, processed_by_attempt, returned_event_ids::text, first_claimed_at,"
    " last_claimed_at, attempt_count, claim_holder, claim_expires_at, failure_count,"
    " last_failed_at, last_failed_attempt, last_error, failed_at, available_at";

std::vector<double> large_claim_floor(a2::Store& store, a2::bench::Meter& meter,
                                      const std::string& connection, const std::string& schema,
                                      int repetitions) {
  constexpr std::int64_t kEvents = 5000;
  pqxx::connection c(connection);
  pqxx::nontransaction(c).exec("set search_path to " + c.quote_name(schema));
  c.prepare("large_claim_floor", kLargeClaimFloorStatement);
  std::vector<double> server_ms;
  const std::string run_tag = std::to_string(::getpid());
  for (int r = 0; r < repetitions; ++r) {
    const std::string session = "large-claim-floor-" + run_tag + "-" + std::to_string(r);
    for (std::int64_t done = 0; done < kEvents; done += 1000)
      (void)store.append(session, a2::bench::events(1000, done, /*settled=*/false));
    std::size_t rows = 0;
    a2::bench::Counters d = meter.around([&] {
      pqxx::nontransaction tx(c);
      rows = tx.exec_prepared("large_claim_floor", session, std::int64_t{1700000000000}, "large",
                              std::int64_t{1700000600000})
                 .size();
    });
    if (rows != static_cast<std::size_t>(kEvents))
      throw std::runtime_error("the large claim floor on " + session + " updated " +
                               std::to_string(rows) + " rows");
    server_ms.push_back(get(d, "exec_ms"));
  }
  return server_ms;
}

int run(const a2::bench::Args& args, const Sections& sections) {
  std::unique_ptr<a2::test::PostgresServer> server;
  std::string connection = args.server;
  if (connection.empty()) {
    note("starting a scratch postgres cluster");
    // pg_stat_statements' defaults: track = top, track_utility = on. (Not set on the command
    // line: that would override the ALTER SYSTEM of the breakdown below.)
    server = std::make_unique<a2::test::PostgresServer>(
        std::vector<std::string>{"shared_preload_libraries=pg_stat_statements"});
    connection = server->connection();
  }
  pqxx::connection admin(connection);
  bool have_statements = true;
  try {
    pqxx::nontransaction tx(admin);
    tx.exec("create extension if not exists pg_stat_statements");
    tx.exec("select count(*) from pg_stat_statements");
  } catch (const std::exception& e) {
    have_statements = false;
    note(std::string("pg_stat_statements unavailable, no round-trip figures: ") + e.what());
  }
  std::string version;
  std::string settings;
  {
    pqxx::nontransaction tx(admin);
    version = tx.exec("select version()")[0][0].c_str();
    auto rows = tx.exec(
        "select string_agg(name || '=' || setting, ', ' order by name) from pg_settings where "
        "name in ('fsync', 'synchronous_commit', 'full_page_writes', 'shared_buffers', "
        "'max_connections')");
    settings = rows[0][0].c_str();
  }
  std::cout << "## Postgres backend\n\n"
            << "Server: " << version << ", "
            << (server ? "a private scratch cluster (unix socket in a temp dir)"
                       : "the server given with --connection (pg_stat_statements counts every "
                         "client of the database: figures are only right if nobody else uses it)")
            << "; settings: " << settings << ".\n\n";

  constexpr std::size_t kPool = 16;
  // The suite's store writes one call of each kind at a time (appends, claims, completions) and
  // groups what starts meanwhile (the default is pool_size, 16 here, which groups nothing with 16
  // threads). On this 2-core machine every server process running at once costs CPU per
  // operation, so 16 threads go fastest with the fewest in flight: Write groups at 16 threads
  // compares 1 with 2, the default, 0, and a pool of 2 without groups.
  constexpr std::size_t kWriteGroups = 1;
  // On a server of the caller's, a schema of our own, dropped at the end.
  std::string schema = server ? "bench" : "a2bench_" + std::to_string(::getpid());
  // The suite store's options; the sections' other stores start from them.
  auto suite_options = [&] {
    return a2::postgres::Options{.connection = connection,
                                 .schema = schema,
                                 .pool_size = kPool,
                                 .statement_timeout = std::chrono::milliseconds(60000),
                                 .clock = nullptr,
                                 .ids = nullptr,
                                 .feed_safety_poll = std::chrono::milliseconds(1000),
                                 .append_groups = kWriteGroups,
                                 .work_groups = kWriteGroups};
  };
  auto store = a2::postgres::open(suite_options());
  a2::bench::Meter meter([&] { return snapshot(admin, have_statements); });

  // Warm-up: every operation runs on every pooled connection (16 threads at once hold all 16),
  // so the statements libpqxx prepares on first use per connection are prepared before any
  // block is measured.
  note("warm-up");
  (void)meter.around([&] {
    a2::bench::run_threads(static_cast<int>(kPool), {std::chrono::hours(1), 5},
                           [&](int t, std::int64_t i) {
                             std::string s = "warmup-" + std::to_string(t);
                             if (i == 0) a2::bench::seed_cycle(*store, s + "-cycle");
                             a2::bench::cycle(*store, s + "-cycle", "warm", i);
                             (void)store->append(s, a2::bench::events(1 + i, 0, false));
                             (void)store->read(s);
                           });
  });

  a2::bench::SuiteResult suite;
  GrowthFloorCalls gfloor_calls(connection, schema);
  a2::bench::GrowthFloor gfloor(
      meter, args, [&] { gfloor_calls.setup(); },
      [&](const std::string& session) { gfloor_calls(session); });
  if (sections.has("operations")) {
    suite = a2::bench::run_suite(
        *store, meter, args,
        {{"round trips/op", "round_trips", 2},
         {"notifier rounds/op", "notify_rounds", 2},
         {"statements/op (server)", "statements", 2},
         {"server ms/op", "exec_ms", 3},
         {"of which notifier ms/op", "notify_ms", 3}},
        "Round trips/op are counted in the client: this program interposes libpq's "
        "`PQexec`, `PQexecParams`, `PQexecPrepared`, `PQprepare`, `PQsendQuery`, "
        "`PQsendQueryPrepared` and `PQsendPrepare` (each sends one request, whose reply the "
        "caller waits for) and counts the calls the store and libpqxx make (the store has "
        "`append_groups` and `work_groups` = " +
            std::to_string(kWriteGroups) +
            ": appends, claims and completions at 16 threads "
            "share calls, so there it falls below one; each caller still makes one round trip, as "
            "Write groups at 16 threads counts). The server "
            "columns are `pg_stat_statements` deltas (`track = top`, utility statements such as "
            "BEGIN/COMMIT tracked): statements/op = top-level statements executed, server ms/op = "
            "their `total_exec_time` (the server-side functions' bodies included). All are deltas "
            "over the block divided by its operations, minus the cost of the snapshot query "
            "itself. Notifier rounds/op: the store's notifier's rounds (`a2_send_wakes`, on its "
            "own connection, after the writes returned; counted apart from the round trips) per "
            "operation; notifier ms/op: their `total_exec_time` (sql/send_wakes.sql), part of "
            "server ms/op. A round sends each session once, so writes to one session share "
            "rounds and writes to many sessions each pay for their session's notification.",
        gfloor.hooks());
    gfloor_calls.drop();
    std::cout << "### Floor as sessions grow (1 thread)\n\n"
                 "A server-side function doing only what an append must do on the seed's table "
                 "and a2's work index, with constant values and no checks (the session lock, "
                 "the head read, the insert into a2_events, the a2_work upsert: "
                 "`kGrowthFloorFunction` in bench/postgres_bench.cpp), called on the key pattern "
                 "of the growth rows above from one connection of its own: on one session (1,000 "
                 "events written first), and round-robin over 5,000 sessions of 3 events each, "
                 "as the 10k-sessions appends go. Its data is written right after the suite's "
                 "sessions, and its blocks (at most 500 calls each) run in each of the suite's "
                 "10 interleaved rounds, summed; server time from pg_stat_statements. What grows "
                 "here grows in the table and its indexes (thousands of sessions' index pages "
                 "instead of one), whatever the code around it.\n\n";
    gfloor.print("server ms/call", "exec_ms", 4);
  } else if (sections.has("cycle")) {
    // Only the suite's claim + complete blocks (same workload, same budget).
    for (int threads : {1, 16}) {
      note("claim+complete, " + std::to_string(threads) + " thread(s)");
      std::string tag = "cycle-only-t" + std::to_string(threads) + "-";
      for (int t = 0; t < threads; ++t) a2::bench::seed_cycle(*store, tag + std::to_string(t));
      suite.blocks["cycle@" + std::to_string(threads)] =
          meter.measure(threads, {args.ms(2500), INT64_MAX}, [&](int t, std::int64_t i) {
            a2::bench::cycle(*store, tag + std::to_string(t), "worker-" + std::to_string(t), i);
          });
    }
    Table cycles({"workload", "threads", "ops", "ops/s", "p50 µs", "p99 µs", "server ms/op"});
    for (int threads : {1, 16}) {
      auto& b = suite.blocks["cycle@" + std::to_string(threads)];
      cycles.add({"claim + complete (1 child)", std::to_string(threads), std::to_string(b.m.ops),
                  fmt(b.m.ops_per_s(), 0), fmt(b.m.latency.p50_us(), 0),
                  fmt(b.m.latency.p99_us(), 0), fmt(b.per_op("exec_ms"), 3)});
    }
    std::cout << "### Claim + complete\n\n"
              << args.ms(2500).count() << " ms per block, as in the operations table.\n\n";
    cycles.print();
  }
  auto& blocks = suite.blocks;

  // ---- One claim of 5,000 ready events. ----
  std::vector<LargeClaim> large;
  double large_floor_ms = 0;  // The statement floor of the large claim (median server ms).
  if (sections.has("large_claim")) {
    note("one claim of 5,000 ready events");
    large = large_claims(*store, meter, 5);
    Table large_table({"operation", "repetitions", "client ms p50", "client ms max",
                       "server ms p50", "server ms max"});
    for (auto& l : large)
      large_table.add({l.name, std::to_string(l.client.count()), fmt(l.client.p50_us() / 1000, 1),
                       fmt(l.client.quantile_us(1.0) / 1000, 1), fmt(l.server.p50_us() / 1000, 1),
                       fmt(l.server.quantile_us(1.0) / 1000, 1)});
    std::cout << "### One claim of 5,000 ready events\n\n"
                 "Per repetition a fresh session gets 5,000 unsettled events (5 appends of "
                 "1,000), then one claim_available takes all of them (one session without "
                 "max_events, another with max_events = 5000). Client ms: the call's wall time; "
                 "server ms: `total_exec_time` of its top-level statement "
                 "(pg_stat_statements).\n\n";
    large_table.print();
    std::vector<double> floor_ms = large_claim_floor(*store, meter, connection, schema, 5);
    std::sort(floor_ms.begin(), floor_ms.end());
    large_floor_ms = floor_ms[floor_ms.size() / 2];
    std::cout << "\n**Statement floor of this claim.** The same kind of fresh session, then one "
                 "`UPDATE ... RETURNING` that writes the claim's columns of every claimable row "
                 "and returns the stored-event columns, and nothing else (no row locks in index "
                 "order first, no boundary, no sorted array, no work index; "
                 "`kLargeClaimFloorStatement` in bench/postgres_bench.cpp). Server ms (median of "
              << floor_ms.size() << ", min-max): **" << fmt(large_floor_ms, 1) << "** ("
              << fmt(floor_ms.front(), 1) << "-" << fmt(floor_ms.back(), 1)
              << "); a2's claim of all takes "
              << percent(large[0].server.p50_us() / 1000, large_floor_ms) << " of it.\n\n";
  }

  // ---- Growth: find_work as idle sessions grow (work discovery). ----
  // Two schemas of their own: "100 sessions with work" and the same plus 10,000 idle sessions
  // (each holds one settled event, as a finished session does: no work index entry). find_work
  // due now, limit 256 (one page of the 100 entries), in interleaved rounds.
  std::vector<a2::bench::Block> find_blocks(2);
  std::vector<std::unique_ptr<a2::Store>> find_stores;
  if (sections.has("find_work")) {
    note("growth: find_work");
    const std::vector<std::string> find_states = {"100 sessions with work",
                                                  "100 with work + 10k idle sessions"};
    for (int k = 0; k < 2; ++k) {
      find_stores.push_back(a2::postgres::open({.connection = connection,
                                                .schema = schema + "_find" + std::to_string(k),
                                                .pool_size = kPool}));
      auto& fs = *find_stores.back();
      for (int i = 0; i < 100; ++i)
        (void)fs.append("work-" + std::to_string(i), a2::bench::events(1, i, false));
      if (k == 1)
        (void)a2::bench::run_threads(
            static_cast<int>(kPool), {std::chrono::hours(1), 10000 / 16 + 1},
            [&](int t, std::int64_t i) {
              const auto n = t * (10000 / 16 + 1) + i;
              if (n < 10000)
                (void)fs.append("idle-" + std::to_string(n), a2::bench::events(1, n, true));
            });
    }
    for (int r = 0; r < 10; ++r)
      for (int j = 0; j < 2; ++j) {
        const int k = (j + r) % 2;
        auto& fs = *find_stores[static_cast<std::size_t>(k)];
        find_blocks[static_cast<std::size_t>(k)].merge(
            meter.measure(1, {args.ms(500), 2000}, [&](int, std::int64_t) {
              const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count();
              auto page = fs.find_work({.after = std::nullopt, .due_by_ms = now, .limit = 256});
              if (page.sessions.size() != 100)
                throw std::runtime_error("find_work returned " +
                                         std::to_string(page.sessions.size()) +
                                         " sessions, not 100");
            }));
      }
    {
      a2::bench::Table find_table({"operation", "state", "ops", "ops/s", "p50 µs", "p99 µs",
                                   "server ms/op", "buffers hit/op", "ops/s vs 100",
                                   "server ms/op vs 100"});
      for (std::size_t k = 0; k < 2; ++k) {
        auto& b = find_blocks[k];
        find_table.add({"find_work (due now, limit 256)", find_states[k], std::to_string(b.m.ops),
                        fmt(b.m.ops_per_s(), 0), fmt(b.m.latency.p50_us(), 0),
                        fmt(b.m.latency.p99_us(), 0), fmt(b.per_op("exec_ms"), 3),
                        fmt(b.per_op("blks_hit"), 2),
                        percent(b.m.ops_per_s(), find_blocks[0].m.ops_per_s()),
                        percent(b.per_op("exec_ms"), find_blocks[0].per_op("exec_ms"))});
      }
      std::cout << "### find_work as idle sessions grow (1 thread)\n\n"
                << "10 interleaved rounds of at most 2000 calls or " << args.ms(500).count()
                << " ms per block, summed. Each call reads one page of the work index (the 100 "
                   "sessions with work); idle sessions (one settled event each) have no entry, "
                   "so the page should cost the same. Buffers hit/op: `shared_blks_hit` of "
                   "pg_stat_statements per call, the pages the statement touched, an exact count "
                   "that does not move with the host as its time does.\n\n";
      find_table.print();
    }
  }

  // ---- Which statements one operation runs. ----
  Table statements({"operation", "top-level statements the server executed (calls)", "statements",
                    "client round trips"});
  if (have_statements && sections.has("statements")) {
    note("statement probe");
    auto probe = [&](const std::string& name, const std::function<void()>& fn) {
      {
        pqxx::nontransaction tx(admin);
        tx.exec("select pg_stat_statements_reset()");
      }
      std::int64_t before = g_round_trips.load();
      fn();
      std::int64_t client = g_round_trips.load() - before;
      pqxx::nontransaction tx(admin);
      auto rows = tx.exec(
          "select calls, regexp_replace(query, '\\s+', ' ', 'g') from pg_stat_statements "
          "where dbid = (select oid from pg_database where datname = current_database()) and "
          "toplevel and query not like '%pg_stat_statements%' order by query");
      std::string list;
      long total = 0;
      for (const auto& row : rows) {
        if (!list.empty()) list += "; ";
        list += "`" + std::string(row[1].c_str()) + "` (" + row[0].c_str() + ")";
        total += row[0].as<long>();
      }
      statements.add({name, list, std::to_string(total), std::to_string(client)});
    };
    probe("append 1 event",
          [&] { (void)store->append("probe-append", a2::bench::events(1, 0, false)); });
    a2::bench::seed_cycle(*store, "probe-cycle");
    a2::StoredEvent claimed;
    probe("claim_available", [&] { a2::bench::claim_one(*store, "probe-cycle", "p", claimed); });
    probe("complete_attempt (1 child)",
          [&] { a2::bench::complete_one(*store, "probe-cycle", claimed, 0); });
    probe("read() of 10k events", [&] { (void)store->read("read10k"); });
    std::cout << "### Statements per operation\n\n"
              << "`pg_stat_statements_reset()`, one operation, then the top-level statements "
                 "the server executed, and the round trips the client made:\n\n";
    statements.print();

    // Where the server time goes: with track = all (our own server only), the statements run
    // inside the server-side functions, for 100 operations of each kind.
    if (server) {
      note("nested statement breakdown");
      {
        pqxx::nontransaction tx(admin);
        tx.exec("alter system set pg_stat_statements.track = 'all'");
        tx.exec("select pg_reload_conf()");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      Table nested(
          {"operation", "statement (nested ones included)", "calls", "total ms", "mean µs"});
      auto breakdown = [&](const std::string& name, int n, const std::function<void(int)>& fn) {
        {
          pqxx::nontransaction tx(admin);
          tx.exec("select pg_stat_statements_reset()");
        }
        for (int i = 0; i < n; ++i) fn(i);
        pqxx::nontransaction tx(admin);
        auto rows = tx.exec(
            "select calls, total_exec_time, left(regexp_replace(query, '\\s+', ' ', 'g'), 140) "
            "from pg_stat_statements where dbid = (select oid from pg_database where datname = "
            "current_database()) and query not like '%pg_stat_statements%' order by "
            "total_exec_time desc limit 6");
        for (const auto& row : rows) {
          std::string q = row[2].c_str();
          for (auto& ch : q)
            if (ch == '|' || ch == '`') ch = ' ';
          nested.add({name, "`" + q + "`", row[0].c_str(), fmt(row[1].as<double>(), 1),
                      fmt(row[1].as<double>() * 1000 / row[0].as<double>(), 1)});
        }
      };
      breakdown("append 1 event (x100)", 100,
                [&](int) { (void)store->append("probe-nested", a2::bench::events(1, 0, false)); });
      a2::bench::seed_cycle(*store, "probe-nested-cycle");
      breakdown("claim + complete (x100)", 100,
                [&](int i) { a2::bench::cycle(*store, "probe-nested-cycle", "p", i); });
      if (sections.has("operations")) {  // The suite's sessions.
        breakdown("claim + complete, 1k events of history (x100)", 100,
                  [&](int i) { a2::bench::cycle(*store, "hist1k-cycle", "p", i); });
        breakdown("claim + complete, 100k events of history (x100)", 100,
                  [&](int i) { a2::bench::cycle(*store, "hist100k-cycle", "p", i); });
        breakdown("read() of 10k events (x3)", 3, [&](int) { (void)store->read("read10k"); });
      }
      if (sections.has("large_claim")) {
        const std::string big = "probe-large-claim-" + std::to_string(::getpid());
        for (std::int64_t done = 0; done < 5000; done += 1000)
          (void)store->append(big, a2::bench::events(1000, done, /*settled=*/false));
        breakdown("one claim of 5,000 ready events (x1)", 1, [&](int) {
          (void)store->claim_available(
              {.session_id = big, .holder = "p", .ttl_ms = 600000, .max_events = std::nullopt});
        });
      }
      {
        pqxx::nontransaction tx(admin);
        tx.exec("alter system reset pg_stat_statements.track");
        tx.exec("select pg_reload_conf()");
      }
      std::cout << "### Where the server time goes\n\n"
                << "`pg_stat_statements.track = all` for a few operations of each kind (after the "
                   "measured blocks; the six statements with the most execution time, top-level "
                   "and nested, each nested one also inside its caller's time):\n\n";
      nested.print();
    }
  }

  // ---- The ceiling: pgbench, one single-row INSERT per transaction. ----
  // What the targets use of it (ceiling_ran: measured).
  bool ceiling_ran = false;
  double c1_tps = 0, c16_tps = 0, ours1 = 0, ours16 = 0;
  double floor1_tps = 0, floor16_tps = 0, silent1_tps = 0, silent16_tps = 0;
  double function1_tps = 0, function16_tps = 0, threaded1 = 0, threaded16 = 0;
  // a2 append 1 / the floor without NOTIFY with client and server pinned (0: not measured).
  double placed_apart = 0, placed_together = 0;
  if (sections.has("ceiling")) {
    // And two floors: pgbench calling a function that does only what an append of one event must
    // do under the seed's protocol (docs/postgres-layout.md): the per-session advisory lock, the
    // head read and the insert of the row into a2_events (one statement), and the NOTIFY; once with
    // the NOTIFY and once without it, to show what the wake-up costs.
    note("pgbench ceiling and floors");
    std::string exe = find_pgbench();
    std::string dir = a2::test::make_temp_dir("a2-pgbench");
    std::string script = dir + "/insert.sql";
    std::string floor_script = dir + "/floor.sql";
    std::string silent_script = dir + "/floor_without_notify.sql";
    std::string function_script = dir + "/append_one.sql";
    {
      std::ofstream out(script);
      out << "insert into a2bench_ceiling (v) values (1);\n";
      std::ofstream floor_out(floor_script);
      floor_out << "select a2bench_floor(:client_id, true);\n";
      std::ofstream silent_out(silent_script);
      silent_out << "select a2bench_floor(:client_id, false);\n";
      // a2's own server function, by pgbench instead of a2's client.
      std::ofstream function_out(function_script);
      function_out << kAppendFunctionScript;
    }
    // pgbench's connection for the function: the store's schema, its wake-up settings (the
    // function leaves its wake-ups to the notifier instead of a NOTIFY, and to its reply:
    // schema.sql a2_owe_wake, a2_append_wake) and its planner settings.
    std::string function_options = "-c search_path=" + schema;
    auto add_options = [&](const auto& list) {
      for (const auto& setting : list)
        function_options.append(" -c ").append(setting.name).append("=").append(setting.value);
    };
    add_options(a2::postgres::detail::kWakeSettings);
    add_options(a2::postgres::detail::kPlannerSettings);
    const std::string function_connection = connection + " options='" + function_options + "'";
    const std::string events_table = "\"" + schema + "\".a2_events";
    const std::string floor_function =
        "create or replace function a2bench_floor(client integer, wake boolean) returns bigint\n"
        "language plpgsql as $$\n"
        "declare\n"
        "  s text := 'a2bench-floor-' || client;\n"
        "  i bigint;\n"
        "begin\n"
        "  perform pg_advisory_xact_lock(hashtext(s));\n"
        "  insert into " +
        events_table +
        " (session_id, idx, event_id, event_type, payload, created_at)\n"
        "  select s, coalesce(max(head.idx), 0) + 1, s || '-' || coalesce(max(head.idx), 0) + 1,\n"
        "         'bench.event', '{\"n\": 1, \"text\": \"benchmark event\"}', 1700000000000\n"
        "    from " +
        events_table +
        " head where head.session_id = s\n"
        "  returning idx into i;\n"
        "  if wake then perform pg_notify('a2bench_floor', s); end if;\n"
        "  return i;\n"
        "end $$";
    auto drop_floor = [&] {
      pqxx::nontransaction tx(admin);
      tx.exec("drop table if exists a2bench_ceiling");
      tx.exec("drop function if exists a2bench_floor(integer, boolean)");
      tx.exec("delete from " + events_table +
              " where session_id like 'a2bench-floor-%' or session_id like 'a2bench-fn-%'");
      tx.exec("delete from \"" + schema + "\".a2_work where session_id like 'a2bench-fn-%'");
    };
    drop_floor();
    {
      pqxx::nontransaction tx(admin);
      tx.exec("create table a2bench_ceiling (id bigserial primary key, v integer not null)");
      tx.exec(floor_function);
    }
    // In kPairRounds rounds, each pgbench run (a third of the transactions each time) is
    // bracketed by blocks of our own append 1 (1 thread, or 16 threads on 16 sessions), so a
    // change of the machine's speed during the section affects all alike.
    constexpr int kPairRounds = 3;
    struct Pair {
      Ceiling ceiling;
      double server_ms = 0;  // Server time per INSERT (pg_stat_statements).
      Ceiling floor;
      double floor_server_ms = 0;
      Ceiling silent;
      double silent_server_ms = 0;
      Ceiling function;
      double function_server_ms = 0;
      // Their statements' counters over the rounds (pg_stat_statements), for the exact costs
      // per call.
      a2::bench::Counters floor_d, silent_d, function_d;
      a2::bench::Block threaded;  // a2's statement from threads on blocking libpq connections.
      a2::bench::Block ours;
    };
    // a2's own statement for an append of one event (sql/append_one.sql, with its result
    // columns), called as a library's callers call the store, but with no library: a thread per
    // caller on a blocking libpq connection of its own (PQexecPrepared), the store's settings, a
    // fresh event id per call drawn as the store draws its default ids, each thread on its own
    // session. No validation, JSON, pool or
    // notifier: what any client of this statement that waits for each reply on its own thread
    // reaches on this machine.
    int threaded_runs = 0;  // Each run's sessions are its own (a repeated id would be a replay).
    auto threaded = [&](int threads, a2::bench::Budget budget) {
      ++threaded_runs;
      std::vector<std::unique_ptr<AppendOneConnection>> conns;
      for (int t = 0; t < threads; ++t) {
        const std::string warm = "a2bench-fn-threads-warm-" + std::to_string(t);
        conns.push_back(std::make_unique<AppendOneConnection>(
            connection, schema, warm,
            warm + "-" + std::to_string(threads) + "-" + std::to_string(threaded_runs)));
      }
      a2::TimeOrderedIdSource ids;  // The store's default ids (a2/clock.hpp).
      return meter.measure(threads, budget, [&](int t, std::int64_t) {
        conns[static_cast<std::size_t>(t)]->append(
            "a2bench-fn-threads-" + std::to_string(threaded_runs) + "-" + std::to_string(threads) +
                "-" + std::to_string(t),
            ids.next_id());  // As the store draws them.
      });
    };
    auto per_statement = [](const a2::bench::Counters& d) {
      return get(d, "statements") > 0 ? get(d, "exec_ms") / get(d, "statements") : 0.0;
    };
    auto paired = [&](int threads, const std::string& options) {
      Pair pair;
      a2::bench::Budget budget{args.ms(2500 / 2), INT64_MAX};
      std::int64_t offset = 0;
      auto ours = [&] {
        offset += 1000000;
        return meter.measure(threads, budget, [&](int t, std::int64_t i) {
          (void)store->append("pair-t" + std::to_string(threads) + "-" + std::to_string(t),
                              a2::bench::events(1, offset + i, false));
        });
      };
      // Each kind's counters over its runs, for its server time per statement.
      a2::bench::Counters d, f, q, fn;
      pair.ours = ours();
      for (int round = 0; round < kPairRounds; ++round) {
        d = a2::bench::plus(d, meter.around(
                                   [&] { pair.ceiling.merge(pgbench(exe, script, connection, options)); }));
        f = a2::bench::plus(f, meter.around([&] {
          pair.floor.merge(pgbench(exe, floor_script, connection, "-M prepared " + options));
        }));
        q = a2::bench::plus(q, meter.around([&] {
          pair.silent.merge(pgbench(exe, silent_script, connection, "-M prepared " + options));
        }));
        fn = a2::bench::plus(fn, meter.around([&] {
          pair.function.merge(
              pgbench(exe, function_script, function_connection, "-M prepared " + options));
        }));
        pair.threaded.merge(threaded(threads, {args.ms(2500 / kPairRounds), INT64_MAX}));
        pair.ours.merge(ours());
      }
      pair.server_ms = per_statement(d);
      pair.floor_server_ms = per_statement(f);
      pair.silent_server_ms = per_statement(q);
      pair.function_server_ms = per_statement(fn);
      pair.floor_d = f;
      pair.silent_d = q;
      pair.function_d = fn;
      return pair;
    };
    Pair p1 = paired(1, "-c 1 -t " + std::to_string(20000 / kPairRounds));
    Pair p16 = paired(16, "-c 16 -j 2 -t " + std::to_string(2500 / kPairRounds));
    // Placement: the 1-thread pair's floor without NOTIFY, a2's statement from a raw libpq
    // client and a2's append 1 again, client and server pinned (bench/cpu_placement.hpp); only
    // on a server of our own, whose processes it pins too.
    std::vector<a2::bench::Placed<Ceiling>> placements;
    if (server) {
      const a2::bench::Budget budget{args.ms(2500 / 2), INT64_MAX};
      placements = a2::bench::run_placements<Ceiling>(
          *server, *store, meter, budget, kPairRounds,
          [&] {
            return pgbench(exe, silent_script, connection,
                           "-M prepared -c 1 -t " + std::to_string(20000 / kPairRounds));
          },
          [&] {
            return threaded(1, {args.ms(2500 / kPairRounds), INT64_MAX});
          });
      std::tie(placed_apart, placed_together) =
          a2::bench::placement_ratios(placements, [](const Ceiling& c) { return c.tps; });
    }
    drop_floor();
    a2::test::remove_tree(dir);
    ceiling_ran = true;
    c1_tps = p1.ceiling.tps;
    c16_tps = p16.ceiling.tps;
    ours1 = p1.ours.m.ops_per_s();
    ours16 = p16.ours.m.ops_per_s();
    floor1_tps = p1.floor.tps;
    floor16_tps = p16.floor.tps;
    silent1_tps = p1.silent.tps;
    silent16_tps = p16.silent.tps;
    function1_tps = p1.function.tps;
    function16_tps = p16.function.tps;
    threaded1 = p1.threaded.m.ops_per_s();
    threaded16 = p16.threaded.m.ops_per_s();
    Table ceiling({"client", "TPS", "latency avg µs", "server µs/op", "a2 append 1 event ops/s",
                   "a2 latency avg µs", "a2 server µs/op", "a2 / ceiling (ops/s)"});
    Table floors({"client", "floor TPS", "floor server µs/op", "floor / ceiling",
                  "floor without NOTIFY TPS", "its server µs/op", "it / ceiling", "a2 / floor",
                  "a2 / floor without NOTIFY"});
    for (auto* pair : {&p1, &p16}) {
      int threads = pair == &p1 ? 1 : 16;
      double avg_us = pair->ours.m.ops > 0 ? pair->ours.m.seconds * 1e6 * threads /
                                                 static_cast<double>(pair->ours.m.ops)
                                           : 0;
      ceiling.add(
          {"`" + pair->ceiling.command + "`" +
               (threads == 16 ? " vs a2 with 16 threads on 16 sessions" : " vs a2 with 1 thread"),
           fmt(pair->ceiling.tps, 0), fmt(pair->ceiling.latency_ms * 1000, 0),
           fmt(pair->server_ms * 1000, 1), fmt(pair->ours.m.ops_per_s(), 0), fmt(avg_us, 0),
           fmt(pair->ours.per_op("exec_ms") * 1000, 1),
           percent(pair->ours.m.ops_per_s(), pair->ceiling.tps)});
      floors.add({"`" + pair->floor.command + "` (and `-f floor_without_notify.sql`)",
                  fmt(pair->floor.tps, 0), fmt(pair->floor_server_ms * 1000, 1),
                  percent(pair->floor.tps, pair->ceiling.tps), fmt(pair->silent.tps, 0),
                  fmt(pair->silent_server_ms * 1000, 1),
                  percent(pair->silent.tps, pair->ceiling.tps),
                  percent(pair->ours.m.ops_per_s(), pair->floor.tps),
                  percent(pair->ours.m.ops_per_s(), pair->silent.tps)});
    }
    std::cout
        << "### Ceiling: pgbench, one single-row INSERT per transaction\n\n"
        << "`insert.sql` = `insert into a2bench_ceiling (v) values (1);` (table `id bigserial "
           "primary key, v integer not null`), same server and connection string (TPS "
           "without initial connection time). The pgbench runs (ceiling and floors) go in "
        << kPairRounds
        << " rounds, each command once per round (the transactions shown per run; TPS over "
           "all its runs' transactions and time, latency their mean), and a block of a2's "
           "append 1 at the same concurrency (of "
        << args.ms(2500 / 2).count()
        << " ms, summed in the a2 columns) comes before the first round and after each, so "
           "a change of the machine's speed during the section affects all alike. a2's average latency = wall time x threads "
           "/ operations; server µs/op = `total_exec_time / calls` of pg_stat_statements "
           "(the INSERT, or a2's top-level statement).\n\n";
    ceiling.print();
    std::cout
        << "### Protocol floor: pgbench calling the least an append must do\n\n"
           "`floor.sql` = `select a2bench_floor(:client_id, true);` (each pgbench client "
           "appends to its own session, as a2's threads do), `floor_without_notify.sql` the "
           "same with `false`. The function does only what an append of one fresh event "
           "must do under the seed's protocol (docs/postgres-layout.md) and a2's wake-up: the "
           "per-session advisory lock, the head read and the insert into a2_events in one "
           "statement after it, and the NOTIFY. No request parsing, no id or cause checks, "
           "no result row, and a prepared statement (`-M prepared`, as a2 prepares its "
           "own): no implementation of the protocol can be cheaper:\n\n```sql\n"
        << floor_function << ";\n```\n\n";
    floors.print();
    Table function({"client", "a2_append_one_by_reply TPS", "its server µs/op",
                    "it / floor without NOTIFY", "a2 append 1 event ops/s", "a2 / it"});
    for (auto* pair : {&p1, &p16})
      function.add({"`" + pair->function.command + "`", fmt(pair->function.tps, 0),
                    fmt(pair->function_server_ms * 1000, 1),
                    percent(pair->function.tps, pair->silent.tps),
                    fmt(pair->ours.m.ops_per_s(), 0),
                    percent(pair->ours.m.ops_per_s(), pair->function.tps)});
    for (auto* pair : {&p1, &p16}) {
      const int threads = pair == &p1 ? 1 : 16;
      function.add({"a2's statement (sql/append_one.sql) from " + std::to_string(threads) +
                        (threads == 1 ? " thread" : " threads") +
                        ", each on a blocking libpq connection of its own",
                    fmt(pair->threaded.m.ops_per_s(), 0),
                    fmt(pair->threaded.per_op("exec_ms") * 1000, 1),
                    percent(pair->threaded.m.ops_per_s(), pair->silent.tps),
                    fmt(pair->ours.m.ops_per_s(), 0),
                    percent(pair->ours.m.ops_per_s(), pair->threaded.m.ops_per_s())});
    }
    std::cout
        << "### a2's append function without a2's client\n\n"
           "`append_one.sql` calls the server function a2 calls for an append of one "
           "event (`a2_append_one_by_reply`, sql/schema.sql: the session lock, the insert "
           "and the work index entry, with `check_id` false as the store calls it for the ids it "
           "draws, so without the probe of the id index a caller's id needs; the wake-ups, which "
           "the store's notifier "
           "turns into NOTIFYs after commit, are read from its reply by a2's statement: "
           "a2_append_wake) with the store's settings (its `SET`s; pgbench runs no "
           "set-up statement, so not the allocator warm-up of docs/postgres-layout.md"
           "#backend-memory, which the threaded rows below run), a fresh event "
           "id per call shaped as the store's default ids (TimeOrderedIdSource: the "
           "milliseconds first, so new ids go to the right edge of the id index; random "
           "ids would cost the function a random page of that index per call), each client "
           "on its own session; prepared (`-M prepared`), in the "
           "same rounds as above. `it / floor without NOTIFY` is what a2's "
           "server-side obligations beyond the protocol floor cost; `a2 / it` is what "
           "a2's client (validation, JSON, the pool and its idle check, the "
           "notifier's rounds) costs. The last two rows run a2's own statement "
           "(sql/append_one.sql, with its result columns) as a library's callers call "
           "the store, but with no library: a thread per caller waiting for its reply on "
           "a blocking libpq connection of its own (`PQexecPrepared`), a fresh event id "
           "per call drawn by a TimeOrderedIdSource, in the same rounds; TPS there is "
           "calls/s, server µs/op "
           "that statement's:\n\n```\n"
        << kAppendFunctionScript << "```\n\n";
    function.print();
    // Exact costs per call: counts, not times, so they do not move with the host's speed.
    auto per_call = [](const a2::bench::Counters& d, const char* key) {
      return get(d, "statements") > 0 ? fmt(get(d, key) / get(d, "statements"), 2)
                                      : std::string("-");
    };
    Table exact({"client", "floor: buffers hit/call", "floor: WAL records/call",
                 "floor without NOTIFY: buffers hit/call", "its WAL records/call",
                 "a2_append_one_by_reply: buffers hit/call", "its WAL records/call"});
    for (auto* pair : {&p1, &p16})
      exact.add({"`-c " + std::string(pair == &p1 ? "1" : "16") + "`",
                 per_call(pair->floor_d, "blks_hit"), per_call(pair->floor_d, "wal_records"),
                 per_call(pair->silent_d, "blks_hit"), per_call(pair->silent_d, "wal_records"),
                 per_call(pair->function_d, "blks_hit"),
                 per_call(pair->function_d, "wal_records")});
    std::cout << "**Exact costs per call** of the pgbench runs above (`shared_blks_hit` and "
                 "`wal_records` of pg_stat_statements over all their rounds, per top-level "
                 "statement): counts, which do not move with the host's speed as times do. "
                 "What a2's function hits beyond the floor without NOTIFY is its work index "
                 "entry, which the floor leaves out (the id probe a caller's id needs is "
                 "skipped for the ids the store draws, as here); one WAL record more "
                 "per call would be a write the floor does not make (docs/postgres-layout.md"
                 "#a2_append_one).\n\n";
    exact.print();
    Table placement({"client and server", "floor without NOTIFY TPS",
                     "a2's statement from a raw libpq client, calls/s", "a2 append 1 event ops/s",
                     "a2 / floor without NOTIFY", "a2 / raw client"});
    a2::bench::add_placement_rows(placement, p1.silent.tps, p1.threaded, p1.ours, placements,
                                  [](const Ceiling& c) { return c.tps; });
    a2::bench::print_placement(
        {.compared = "the floor without NOTIFY (`floor_without_notify.sql` by pgbench, `-M "
                     "prepared -c 1`), a2's statement from a raw libpq client (as above)",
         .tool = "pgbench",
         .server_side = "every process of the server (postmaster, backends, helpers)",
         .also = "On one CPU the store's notifier (its thread and its backend) shares the "
                 "writer's CPU too."},
        kPairRounds, args.ms(2500 / 2).count(), !placements.empty(), server != nullptr, placement);
  }

  // ---- Feed wake latency: 16 writer threads, one of them watched by a feed. ----
  // Thread 0's appends are read by a feed of its session (safety poll 1 s); the latency of an
  // event is from its append's return (just after its commit) to the feed's next() returning
  // it (0 when next() returned first: the wake-up can beat the reply). Three runs: the feed in
  // the writers' store (woken in the process as each write commits), in a second store on the
  // same schema (woken by the writers' notifier's NOTIFY, as another process's feed is), and
  // the floor below.
  struct WakeRun {
    std::string feed_in;
    a2::bench::LatencyRecorder latency;
  };
  std::vector<WakeRun> wake_runs;
  // ---- Appends at 16 threads with the default append groups and with none. ----
  // Interleaved rounds of append 1, and of claim + complete cycles, on 16 sessions, on stores
  // on the schema whose only differences are pool_size and append_groups and work_groups (set
  // alike); each counts its callers' round trips (observer).
  if (sections.has("groups")) {
    note("write groups at 16 threads");
    struct Variant {
      std::size_t pool;
      std::optional<std::size_t> groups;  // Unset: the default (pool_size).
      std::shared_ptr<a2::bench::RoundTripCounter> counter;
      std::unique_ptr<a2::Store> store;
      a2::bench::Block append;
      a2::bench::Block cycle;
      double append_rt = 0;  // Callers' round trips per call: appends,
      double cycle_rt = 0;   // claims and completions.
    };
    const std::size_t default_pool = a2::postgres::Options{}.pool_size;
    std::vector<Variant> variants;
    for (const auto& [pool, groups] :
         std::vector<std::pair<std::size_t, std::optional<std::size_t>>>{
             {kPool, kWriteGroups},
             {kPool, 2},
             {kPool, std::nullopt},
             {kPool, 0},
             {default_pool, std::nullopt},
             {default_pool, 0},
             {2, 0}}) {
      Variant v{pool, groups, std::make_shared<a2::bench::RoundTripCounter>(), nullptr, {}, {}};
      a2::postgres::Options o = suite_options();
      o.pool_size = pool;
      o.append_groups = groups;
      o.work_groups = groups;
      o.observe.observer = v.counter;
      v.store = a2::postgres::open(o);
      const std::string tag = "groups-" + std::to_string(variants.size()) + "-";
      for (int t = 0; t < 16; ++t)
        a2::bench::seed_cycle(*v.store, tag + "cycle-" + std::to_string(t));
      // Every pooled connection prepares its statements before the blocks.
      (void)meter.measure(16, a2::bench::Budget{args.ms(300), INT64_MAX},
                          [&](int t, std::int64_t i) {
                            (void)v.store->append("groups-warm-" + std::to_string(t),
                                                  a2::bench::events(1, i, false));
                            a2::bench::cycle(*v.store, tag + "cycle-" + std::to_string(t),
                                             "w" + std::to_string(t), i);
                          });
      (void)v.counter->take();
      variants.push_back(std::move(v));
    }
    constexpr int kRounds = 3;
    a2::bench::Budget budget{args.ms(1000), INT64_MAX};
    std::int64_t offset = 0;
    for (int round = 0; round < kRounds; ++round) {
      for (std::size_t n = 0; n < variants.size(); ++n) {
        auto& v = variants[n];
        v.append.merge(meter.measure(16, budget, [&](int t, std::int64_t i) {
          (void)v.store->append("groups-" + std::to_string(n) + "-" + std::to_string(t),
                                a2::bench::events(1, offset + i, false));
        }));
        v.append_rt += v.counter->take() / kRounds;
        v.cycle.merge(meter.measure(16, budget, [&](int t, std::int64_t i) {
          a2::bench::cycle(*v.store, "groups-" + std::to_string(n) + "-cycle-" + std::to_string(t),
                           "w" + std::to_string(t), offset + i);
        }));
        v.cycle_rt += v.counter->take() / kRounds;
      }
      offset += 1000000;
    }
    Table table({"pool_size", "append_groups, work_groups", "workload", "ops/s", "p50 µs", "p99 µs",
                 "callers' round trips per call", "statements/op (server)", "server ms/op",
                 "machine cores busy", "machine CPU µs/op"});
    for (auto& v : variants) {
      for (const bool appends : {true, false}) {
        auto& b = appends ? v.append : v.cycle;
        table.add({std::to_string(v.pool) + (v.pool == default_pool ? " (default)" : ""),
                   !v.groups        ? "default (" + std::to_string(v.pool) + ")"
                   : *v.groups == 0 ? std::string("0 (off)")
                   : v.pool == kPool && *v.groups == kWriteGroups
                       ? std::to_string(*v.groups) + " (the suite's)"
                       : std::to_string(*v.groups),
                   appends ? "append 1 event" : "claim + complete (1 child)",
                   fmt(b.m.ops_per_s(), 0), fmt(b.m.latency.p50_us(), 0),
                   fmt(b.m.latency.p99_us(), 0), fmt(appends ? v.append_rt : v.cycle_rt, 2),
                   fmt(b.per_op("statements"), 2), fmt(b.per_op("exec_ms"), 3),
                   fmt(b.cores_busy(), 2), fmt(b.per_op("machine_cpu_s") * 1e6, 0)});
      }
    }
    std::cout
        << "### Write groups at 16 threads\n\n"
           "16 threads, each on a session of its own, appending one event per call, then "
           "(the next block) running claim + complete cycles (as in Operations), on stores "
           "that differ only in `pool_size` and in `append_groups` and `work_groups` (set "
           "alike): with the suite's pool of "
        << kPool
        << ", " << kWriteGroups
        << " as the suite's store (writes of a kind started while "
        << (kWriteGroups == 1 ? std::string("one of that kind is")
                              : std::to_string(kWriteGroups) + " of that kind are")
        << " in flight wait and go together in the next call and "
           "transaction, docs/postgres-layout.md#write-groups), 2 (two of a kind in flight), "
           "the default (the pool size: "
           "16 threads never wait for a place, so nothing is grouped) and 0 (each call on "
           "its own); with the default pool, the default (calls that would wait for a "
           "pooled connection go together instead) and 0; with a pool of 2 and no groups "
           "(every call on its own, at most two server processes at work: the 16 threads take "
           "turns at the two connections). "
        << kRounds << " interleaved rounds of " << budget.duration.count()
        << " ms per row and workload, summed. Callers' round trips per call: counted by "
           "the client (an observer summing `OperationRecord::round_trips`) per call (a cycle "
           "is two calls); statements/op: top-level statements the server "
           "executed per operation (below one per call when calls share a group); the "
           "other columns as in Operations.\n\n";
    table.print();
    for (auto& v : variants) v.store->close();
  }

  // ---- Appends against a history of millions of events. ----
  // A schema whose a2_events already holds kHistoryEvents settled events (written by one
  // INSERT ... SELECT, then VACUUM ANALYZE), beside a fresh schema; stores with the default id
  // source (time-ordered) and, on the history, with RandomIdSource. Interleaved rounds of append
  // 1 at 1 and 16 threads, each thread on a session of its own.
  std::optional<double> history_ratio16;  // ops/s, time-ordered ids on the history vs fresh
  std::optional<double> history_ratio1;
  // ---- The spin wait (store option spin_wait). ----
  if (sections.has("spin")) {
    note("spin wait");
    auto open_spin = [&](std::chrono::microseconds spin) {
      a2::postgres::Options o = suite_options();
      o.spin_wait = spin;
      return a2::postgres::open(o);
    };
    auto plain = open_spin(std::chrono::microseconds(0));
    auto spun = open_spin(a2::bench::kBenchSpinWait);
    // The same server farther away: its replies through a proxy that delays them (TCP to the
    // proxy, which goes on to the server's own socket).
    std::optional<a2::bench::DelayProxy> far_server;
    std::unique_ptr<a2::Store> far_plain, far_spun;
    {
      PGconn* probe = PQconnectdb(connection.c_str());
      const std::string host = PQstatus(probe) == CONNECTION_OK ? PQhost(probe) : "";
      const int port = PQstatus(probe) == CONNECTION_OK ? std::atoi(PQport(probe)) : 0;
      PQfinish(probe);
      if (!host.empty()) {
        far_server.emplace(
            [host, port] {
              return host.front() == '/'
                         ? a2::bench::connect_unix(host + "/.s.PGSQL." + std::to_string(port))
                         : a2::bench::connect_tcp(host, port);
            },
            a2::bench::kFarDelay);
        const auto open_far = [&](std::chrono::microseconds spin) {
          a2::postgres::Options o = suite_options();
          o.connection = connection + " host=127.0.0.1 port=" + std::to_string(far_server->port());
          o.spin_wait = spin;
          return a2::postgres::open(o);
        };
        far_plain = open_far(std::chrono::microseconds(0));
        far_spun = open_far(a2::bench::kBenchSpinWait);
        for (auto* s : {far_plain.get(), far_spun.get()})
          (void)s->append("spinfar-warm", a2::bench::events(1, 0, false));
      }
    }
    int store_tag = 0;
    for (auto* s : {plain.get(), spun.get()}) {
      const std::string tag = "spin" + std::to_string(store_tag++) + "-";
      a2::bench::seed_cycle(*s, tag + "cycle");
      // Every pooled connection prepares its statements before the blocks.
      (void)meter.measure(
          16, a2::bench::Budget{args.ms(300), INT64_MAX}, [&](int t, std::int64_t i) {
            (void)s->append(tag + "warm-" + std::to_string(t), a2::bench::events(1, i, false));
          });
      a2::bench::cycle(*s, tag + "cycle", "warm", 0);
    }
    // a2's statement from one thread on a libpq connection of its own, its reply awaited asleep
    // or after polling as the store does.
    AppendOneConnection floor_client(connection, schema, "a2bench-spin-floor-warm",
                                     "a2bench-spin-floor-warm-1");
    a2::TimeOrderedIdSource ids;
    a2::detail::SpinPacer floor_pacer(a2::bench::kBenchSpinWait);  // Paced as a store's spins are.
    auto append_on = [](a2::Store& s, const std::string& session) {
      return [&s, session](int t, std::int64_t i) {
        (void)s.append(session + std::to_string(t), a2::bench::events(1, i, false));
      };
    };
    auto cycle_on = [](a2::Store& s, const std::string& session) {
      return [&s, session](int, std::int64_t i) { a2::bench::cycle(s, session, "w", i); };
    };
    a2::bench::run_spin_section(
        meter,
        {.append_plain = append_on(*plain, "spin0-append-"),
         .append_spun = append_on(*spun, "spin1-append-"),
         .floor_asleep =
             [&](int, std::int64_t) { floor_client.append("a2bench-spin-floor", ids.next_id()); },
         .floor_spinning =
             [&](int, std::int64_t) {
               floor_client.append("a2bench-spin-floor", ids.next_id(), &floor_pacer);
             },
         .cycle_plain = cycle_on(*plain, "spin0-cycle"),
         .cycle_spun = cycle_on(*spun, "spin1-cycle"),
         .floor_asleep_client = "a2's statement, blocking libpq connection, asleep",
         .floor_spinning_client = "a2's statement, blocking libpq connection, spinning first",
         .floor_workload = "append 1 event",
         .append_far_plain =
             far_plain ? append_on(*far_plain, "spinfar0-append-") : a2::bench::SpinOp{},
         .append_far_spun =
             far_spun ? append_on(*far_spun, "spinfar1-append-") : a2::bench::SpinOp{}},
        "a2's statement for an append of one event (sql/append_one.sql) from one thread on a "
        "libpq connection set up as the store's (`PQexecPrepared`), each store as the suite's "
        "(append_groups and work_groups 1)",
        3, a2::bench::Budget{args.ms(1000), INT64_MAX});
    plain->close();
    spun->close();
    if (far_plain) far_plain->close();
    if (far_spun) far_spun->close();
  }

  if (sections.has("history")) {
    constexpr std::int64_t kHistoryEvents = 2000000;
    constexpr std::int64_t kHistoryPerSession = 1000;
    const std::string fresh_schema = schema + "_fresh";
    const std::string history_schema = schema + "_history";
    struct Variant {
      std::string state;
      std::string ids;
      std::unique_ptr<a2::Store> store;
      a2::bench::Block at1;
      a2::bench::Block at16;
    };
    auto open_variant = [&](const std::string& in_schema,
                            std::shared_ptr<a2::IdSource> ids) -> std::unique_ptr<a2::Store> {
      a2::postgres::Options o = suite_options();
      o.schema = in_schema;
      if (ids) o.ids = std::move(ids);
      return a2::postgres::open(o);
    };
    std::vector<Variant> variants;
    variants.push_back({"fresh schema", "time-ordered (default)", open_variant(fresh_schema, nullptr),
                        {}, {}});
    variants.push_back({"2M events of history", "time-ordered (default)",
                        open_variant(history_schema, nullptr), {}, {}});
    variants.push_back({"2M events of history", "random (RandomIdSource)",
                        open_variant(history_schema, std::make_shared<a2::RandomIdSource>()),
                        {}, {}});
    note("history: writing " + std::to_string(kHistoryEvents) + " events");
    const auto written_from = std::chrono::steady_clock::now();
    std::string event_id_index;
    std::string history_table;
    {
      pqxx::nontransaction tx(admin);
      const std::string table = "\"" + history_schema + "\".a2_events";
      // Ids: 32 hex digits drawn as RandomIdSource draws them (md5 of the row's number), as a
      // store with random ids, or any caller's own ids, would have left them.
      tx.exec("insert into " + table +
              " (session_id, idx, event_id, event_type, payload, created_at, processed_at) "
              "select 'history-' || (g / " + std::to_string(kHistoryPerSession) + "), g % " +
              std::to_string(kHistoryPerSession) +
              " + 1, md5(g::text), 'bench.history', '{\"n\": 1, \"text\": \"benchmark event\"}', "
              "1700000000000 + g, 1700000000000 + g from generate_series(0, " +
              std::to_string(kHistoryEvents - 1) + ") g");
      tx.exec("vacuum analyze " + table);
      auto sizes = tx.exec("select pg_size_pretty(pg_relation_size('" + table +
                           "')), pg_size_pretty(pg_relation_size('\"" + history_schema +
                           "\".a2_events_event_id_key')), current_setting('shared_buffers')")[0];
      history_table = sizes[0].c_str();
      event_id_index = std::string(sizes[1].c_str()) + " (shared_buffers " + sizes[2].c_str() + ")";
    }
    const double written_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - written_from).count();
    // Every pooled connection prepares its statements before the blocks.
    for (std::size_t n = 0; n < variants.size(); ++n)
      (void)meter.measure(16, a2::bench::Budget{args.ms(300), INT64_MAX},
                          [&](int t, std::int64_t i) {
                            (void)variants[n].store->append(
                                "history-warm-" + std::to_string(n) + "-" + std::to_string(t),
                                a2::bench::events(1, i, false));
                          });
    note("history: appends");
    constexpr int kRounds = 3;
    const a2::bench::Budget budget{args.ms(1000), INT64_MAX};
    std::int64_t offset = 0;
    for (int round = 0; round < kRounds; ++round) {
      for (int threads : {1, 16}) {
        for (std::size_t n = 0; n < variants.size(); ++n) {
          auto& v = variants[n];
          (threads == 1 ? v.at1 : v.at16).merge(meter.measure(threads, budget, [&](int t, std::int64_t i) {
            (void)v.store->append("history-" + std::to_string(n) + "-" + std::to_string(t),
                                  a2::bench::events(1, offset + i, false));
          }));
        }
        offset += 1000000;
      }
    }
    Table table({"state", "event ids", "threads", "ops/s", "p50 µs", "p99 µs", "server ms/op",
                 "pages read/op", "pages dirtied/op", "machine CPU µs/op", "ops/s vs fresh"});
    for (int threads : {1, 16}) {
      auto& fresh = threads == 1 ? variants[0].at1 : variants[0].at16;
      for (auto& v : variants) {
        auto& b = threads == 1 ? v.at1 : v.at16;
        table.add({v.state, v.ids, std::to_string(threads), fmt(b.m.ops_per_s(), 0),
                   fmt(b.m.latency.p50_us(), 0), fmt(b.m.latency.p99_us(), 0),
                   fmt(b.per_op("exec_ms"), 3), fmt(b.per_op("blks_read"), 2),
                   fmt(b.per_op("blks_dirtied"), 2), fmt(b.per_op("machine_cpu_s") * 1e6, 0),
                   percent(b.m.ops_per_s(), fresh.m.ops_per_s())});
      }
    }
    if (variants[0].at16.m.ops_per_s() > 0)
      history_ratio16 = variants[1].at16.m.ops_per_s() / variants[0].at16.m.ops_per_s();
    if (variants[0].at1.m.ops_per_s() > 0)
      history_ratio1 = variants[1].at1.m.ops_per_s() / variants[0].at1.m.ops_per_s();
    std::cout << "### Appends against 2M events of history\n\n"
                 "A schema whose a2_events holds "
              << kHistoryEvents << " settled events (" << kHistoryEvents / kHistoryPerSession
              << " sessions of " << kHistoryPerSession << "; table " << history_table
              << ", its unique index on event_id " << event_id_index
              << "), written by one `INSERT ... SELECT` from `generate_series` and `VACUUM "
                 "ANALYZE` ("
              << fmt(written_s, 1)
              << " s), with event ids of 32 random hex digits (md5 of the row's number), as a "
                 "store with random ids or callers' own ids leave them; beside it a fresh schema. "
                 "Stores as the suite's (pool_size "
              << kPool << ", append_groups and work_groups " << kWriteGroups
              << "), with the default id "
                 "source (TimeOrderedIdSource: the drawing's milliseconds, then random bits) and, "
                 "on the history, with RandomIdSource. Each thread appends one event per call to "
                 "a session of its own. "
              << kRounds << " interleaved rounds of " << budget.duration.count()
              << " ms per row, summed. Pages read/op: `shared_blks_read` of pg_stat_statements per "
                 "append (pages the statement found outside the server's buffer cache), pages "
                 "dirtied/op: `shared_blks_dirtied`; the other columns as in Operations. An "
                 "append inserts its id into the unique index on event_id: a random id lands on "
                 "a random leaf of an index larger than the buffer cache, a time-ordered one on "
                 "the few leaves at its right end (docs/postgres-layout.md#indexes).\n\n";
    table.print();
    for (auto& v : variants) v.store->close();
    if (!server) {
      pqxx::nontransaction tx(admin);
      tx.exec("drop schema if exists \"" + fresh_schema + "\" cascade");
      tx.exec("drop schema if exists \"" + history_schema + "\" cascade");
    }
  }

  if (sections.has("wake")) {
    auto other = a2::postgres::open({.connection = connection,
                                     .schema = schema,
                                     .pool_size = kPool,
                                     .feed_safety_poll = std::chrono::milliseconds(1000)});
    // The third run is the floor of any wake-up under this load: no feed and no read, a bare
    // thread that thread 0 wakes by a condition variable after each append returned. Its latency
    // is the operating system's delay in running a woken thread while 16 writers and their 16
    // server processes share the machine's cores.
    for (int run = 0; run < 3; ++run) {
      const bool bare = run == 2;
      a2::Store& feed_store = run == 0 ? *store : *other;
      wake_runs.push_back({run == 0   ? "the writers' store (in-process wake)"
                           : run == 1 ? "another store (NOTIFY)"
                                      : "floor: a bare thread woken by a condition variable "
                                        "after each append (no feed, no read)",
                           {}});
      auto& wake_latency = wake_runs.back().latency;
      note("feed wake latency, 16 writer threads, feed in " + wake_runs.back().feed_in);
      constexpr std::int64_t kMaxWatched = 1 << 20;
      auto returned = std::make_unique<std::atomic<std::int64_t>[]>(kMaxWatched);
      const std::string watched =
          "wake-latency-" + std::to_string(::getpid()) + "-" + std::to_string(run);
      const auto origin = std::chrono::steady_clock::now();
      auto since = [&] {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now() - origin)
                   .count() +
               1;  // Never 0 ("not returned yet").
      };
      std::atomic<std::int64_t> last_index{0};
      std::atomic<bool> writers_done{false};
      std::mutex bare_mutex;
      std::condition_variable bare_wake;
      std::unique_ptr<a2::Feed> feed;
      if (!bare) feed = feed_store.subscribe(watched, 0);
      std::thread reader([&] {
        std::int64_t cursor = 0;
        while (!writers_done.load() || cursor < last_index.load()) {
          if (bare) {
            std::unique_lock<std::mutex> lock(bare_mutex);
            bare_wake.wait_for(lock, std::chrono::milliseconds(200),
                               [&] { return writers_done.load() || last_index.load() > cursor; });
            const auto at = since();
            const auto last = last_index.load();
            for (std::int64_t index = cursor + 1; index <= last && index < kMaxWatched; ++index) {
              const auto r = returned[index].load();
              if (r != 0) wake_latency.add(std::max<std::int64_t>(0, at - r));
            }
            cursor = last;
            continue;
          }
          auto got = feed->next(std::chrono::milliseconds(200));
          const auto at = since();
          for (const auto& e : got) {
            cursor = e.index;
            if (e.index >= kMaxWatched) continue;
            // Not returned yet: its append returns after `at`, so the feed was first (0). No
            // waiting for it here: a thread that spins on a busy machine loses its turn for
            // tens of ms, which the next events would then count as wake latency.
            const auto r = returned[e.index].load();
            wake_latency.add(r == 0 ? 0 : std::max<std::int64_t>(0, at - r));
          }
        }
      });
      std::this_thread::sleep_for(std::chrono::milliseconds(300));  // The feed's LISTEN starts.
      (void)meter.measure(16, {args.ms(2500), INT64_MAX}, [&](int t, std::int64_t i) {
        if (t != 0) {
          (void)store->append("wake-load-" + std::to_string(t), a2::bench::events(1, i, false));
          return;
        }
        auto r = store->append(watched, a2::bench::events(1, i, false));
        const auto index = r.events.at(0).index;
        if (index < kMaxWatched) returned[index].store(since());
        if (bare) {
          std::lock_guard<std::mutex> lock(bare_mutex);
          last_index.store(index);
          bare_wake.notify_one();
        } else {
          last_index.store(index);
        }
      });
      {
        std::lock_guard<std::mutex> lock(bare_mutex);
        writers_done.store(true);
      }
      bare_wake.notify_one();
      reader.join();
    }
    other->close();
    std::cout << "### Feed wake latency\n\n"
              << "16 threads append (one event per call, each to its own session) for "
              << args.ms(2500).count()
              << " ms; a feed of thread 0's session (`feed_safety_poll` 1000 ms) reads them, "
                 "first in the writers' store, whose writes wake its feeds in the process as "
                 "they commit, then in a second store on the same schema, which hears of them "
                 "by the writers' notifier's NOTIFY as another process would. Latency of an "
                 "event: from its append's return to the feed's next() returning it. The last "
                 "row is the floor of any wake-up under the same load: no feed, a bare thread "
                 "that thread 0 wakes by a condition variable after each append returned; its "
                 "latency is the time the operating system takes to run a woken thread while "
                 "16 writers and their 16 server processes share the cores.\n\n";
    Table wake({"feed in", "events", "p50 ms", "p99 ms", "max ms"});
    for (auto& w : wake_runs)
      wake.add({w.feed_in, std::to_string(w.latency.count()), fmt(w.latency.p50_us() / 1000, 2),
                fmt(w.latency.p99_us() / 1000, 2), fmt(w.latency.quantile_us(1.0) / 1000, 2)});
    wake.print();
  }

  // ---- Targets (the rows whose inputs this run measured). ----
  const bool ran_operations = sections.has("operations");
  const bool ran_cycle = blocks.count("cycle@1") > 0 && blocks.count("cycle@16") > 0;
  Table targets({"target", "measured", "met"});
  if (ran_operations) {
    double rt_append1 = blocks["append1@1"].per_op("round_trips");
    double rt_append10 = blocks["append10@1"].per_op("round_trips");
    double rt_cycle = blocks["cycle@1"].per_op("round_trips") / 2;
    double rt_append16 = blocks["append1@16"].per_op("round_trips");
    double rt_cycle16 = blocks["cycle@16"].per_op("round_trips") / 2;
    if (g_round_trips.load() > 0) {
      bool two = rt_append1 <= 2.001 && rt_append10 <= 2.001 && rt_cycle <= 2.001 &&
                 rt_append16 <= 2.001 && rt_cycle16 <= 2.001;
      targets.add({"at most two round trips per write",
                   "append 1: " + fmt(rt_append1, 2) + ", append 10: " + fmt(rt_append10, 2) +
                       ", claim and complete: " + fmt(rt_cycle, 2) +
                       " each; 16 threads: " + fmt(rt_append16, 2) + " / " + fmt(rt_cycle16, 2),
                   two ? "yes" : "no"});
    } else {
      targets.add(
          {"at most two round trips per write", "not measured (libpq calls not seen)", "?"});
    }
  }
  if (ceiling_ran) {
    // The first round's targets against the bare INSERT are replaced by the floor without
    // NOTIFY below (what the protocol allows); kept for comparison.
    targets.add({"(no target) append 1 vs pgbench's single-row INSERT, -c 1 / -c 16",
                 percent(ours1, c1_tps) + " / " + percent(ours16, c16_tps), "-"});
    targets.add(
        {"(no target) protocol floor vs the ceiling, -c 1 / -c 16: the most the "
         "protocol allows",
         percent(floor1_tps, c1_tps) + " / " + percent(floor16_tps, c16_tps), "-"});
    targets.add({"(no target) the same without NOTIFY, -c 1 / -c 16",
                 percent(silent1_tps, c1_tps) + " / " + percent(silent16_tps, c16_tps), "-"});
    targets.add({"(no target) a2 append 1 vs the protocol floor, 1 / 16 threads",
                 percent(ours1, floor1_tps) + " / " + percent(ours16, floor16_tps), "-"});
    targets.add({"sequential append 1 >= 90% of the floor without NOTIFY",
                 percent(ours1, silent1_tps), ours1 >= 0.9 * silent1_tps ? "yes" : "no"});
    if (placed_apart > 0)
      targets.add(
          {"(no target) sequential append 1 vs the floor without NOTIFY with client and "
           "server pinned (Placement): on different CPUs / on one CPU",
           percent(placed_apart, 1) + " / " + percent(placed_together, 1), "-"});
    targets.add({"append 1 at 16 threads >= 80% of the floor without NOTIFY at -c 16",
                 percent(ours16, silent16_tps), ours16 >= 0.8 * silent16_tps ? "yes" : "no"});
    targets.add(
        {"(no target) a2_append_one_by_reply by pgbench vs the floor without NOTIFY, -c 1 / -c 16: "
         "the most any client of a2's function reaches",
         percent(function1_tps, silent1_tps) + " / " + percent(function16_tps, silent16_tps), "-"});
    targets.add({"(no target) a2 append 1 vs a2_append_one_by_reply by pgbench, 1 / 16 threads",
                 percent(ours1, function1_tps) + " / " + percent(ours16, function16_tps), "-"});
    targets.add(
        {"(no target) a2's statement from threads on blocking libpq connections of their "
         "own vs the floor without NOTIFY, 1 / 16 threads: the most a client that waits "
         "for each reply on its own thread reaches",
         percent(threaded1, silent1_tps) + " / " + percent(threaded16, silent16_tps), "-"});
    targets.add({"(no target) a2 append 1 vs that threaded floor, 1 / 16 threads",
                 percent(ours1, threaded1) + " / " + percent(ours16, threaded16), "-"});
  }
  if (ran_cycle) {
    auto& b1 = blocks["cycle@1"];
    auto& b16 = blocks["cycle@16"];
    const double one = b1.m.ops_per_s();
    const double sixteen = b16.m.ops_per_s();
    targets.add({"claim + complete at 16 threads >= 2x its 1-thread rate",
                 fmt(sixteen, 0) + " / " + fmt(one, 0) +
                     " ops/s = " + fmt(one > 0 ? sixteen / one : 0, 2) + "x (server ms/op " +
                     fmt(b16.per_op("exec_ms"), 3) + " at 16 threads, " +
                     fmt(b1.per_op("exec_ms"), 3) + " at 1)",
                 sixteen >= 2 * one ? "yes" : "no"});
    // The CPU bound without write groups: 16 threads can run at most as many cycles per second
    // as the machine's cores do at the 1-thread cycle's CPU per cycle (contention only adds to
    // it); groups lift it by sharing a transaction's cost among the cycles of several threads.
    const double cores = std::thread::hardware_concurrency();
    const double cpu1 = b1.per_op("machine_cpu_s");
    const double cpu16 = b16.per_op("machine_cpu_s");
    targets.add({"(no target) the CPU bound of that ratio: the 1-thread cycle keeps this many "
                 "cores busy; at its CPU per cycle all cores run at most this multiple of it, at "
                 "the 16-thread cycle's (claims and completions in groups) this multiple",
                 fmt(b1.cores_busy(), 2) + " of " + fmt(cores, 0) + " cores (" +
                     fmt(cpu1 * 1e6, 0) + " µs of machine CPU per cycle; " +
                     fmt(cpu16 * 1e6, 0) + " at 16 threads): at most " +
                     fmt(cpu1 > 0 ? cores / cpu1 / one : 0, 2) + "x; " +
                     fmt(cpu16 > 0 ? cores / cpu16 / one : 0, 2) + "x",
                 "-"});
  }
  if (ran_operations) {
    // The read's floor: the same statement (sql/read.sql, prepared by the store) run by libpq
    // through a plain exec whose text rows are not decoded into events.
    a2::bench::LatencyRecorder raw;
    {
      pqxx::connection c(connection);
      std::ifstream file(std::string(A2_BENCH_SQL_DIR) + "/read.sql");
      std::stringstream text;
      text << file.rdbuf();
      pqxx::nontransaction(c).exec("set search_path to " + c.quote_name(schema));
      c.prepare("floor_read", text.str());
      for (int i = 0; i < 21; ++i) {
        pqxx::nontransaction tx(c);
        const auto start = std::chrono::steady_clock::now();
        auto rows = tx.exec_prepared("floor_read", "read10k", 0, std::int64_t{9007199254740991});
        raw.add(std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::steady_clock::now() - start)
                    .count());
        if (rows.size() != 10000) throw std::runtime_error("the read floor found no 10k rows");
      }
    }
    auto& read1 = blocks["read@1"];
    const double p50_ms = read1.m.latency.p50_us() / 1000;
    targets.add({"read() of 10k events <= 15 ms (1 thread, p50)",
                 fmt(p50_ms, 1) + " ms (server " + fmt(read1.per_op("exec_ms"), 1) +
                     " ms/op; floor: the same statement by libpq, rows not decoded, " +
                     fmt(raw.p50_us() / 1000, 1) + " ms p50 of 21)",
                 p50_ms <= 15 ? "yes" : "no"});
  }
  // The last wake run is the floor (a bare thread): shown beside the feeds, not a target.
  for (std::size_t w = 0; w + 1 < wake_runs.size(); ++w) {
    auto& run = wake_runs[w];
    auto& floor = wake_runs.back();
    targets.add({"feed wake latency p99 <= 10 ms at 16 writer threads, feed in " + run.feed_in,
                 fmt(run.latency.p99_us() / 1000, 2) + " ms (p50 " +
                     fmt(run.latency.p50_us() / 1000, 2) +
                     " ms; a bare thread woken by a condition variable under the same load: p99 " +
                     fmt(floor.latency.p99_us() / 1000, 2) + " ms, p50 " +
                     fmt(floor.latency.p50_us() / 1000, 2) + " ms)",
                 run.latency.count() > 0 && run.latency.p99_us() <= 10000 ? "yes" : "no"});
  }
  if (ran_operations) {
    a2::bench::add_growth_targets(targets, suite, have_statements ? "exec_ms" : "",
                                  have_statements ? "write_ms" : "",
                                  "the operations' own statements, without the notifier's rounds,");
    targets.add({"(no target) the floor's server time on 5,000 sessions round-robin vs one "
                 "session (Floor as sessions grow)",
                 gfloor.growth("exec_ms"), "-"});
  }
  if (sections.has("find_work")) {
    auto& base = find_blocks[0];
    auto& grown = find_blocks[1];
    const bool by_server = have_statements && base.per_op("exec_ms") > 0;
    const double ratio = by_server ? grown.per_op("exec_ms") / base.per_op("exec_ms")
                                   : base.m.ops_per_s() / std::max(grown.m.ops_per_s(), 1e-9);
    targets.add({"find_work (due now, limit 256) with 10k idle sessions within 10% of 100 sessions",
                 (by_server ? "server time/op " +
                                  percent(grown.per_op("exec_ms"), base.per_op("exec_ms")) + " ("
                            : std::string("(")) +
                     "ops/s " + percent(grown.m.ops_per_s(), base.m.ops_per_s()) +
                     (by_server ? "; buffers hit/op " + fmt(grown.per_op("blks_hit"), 2) + " vs " +
                                      fmt(base.per_op("blks_hit"), 2)
                                : std::string()) +
                     ")",
                 ratio <= 1.1 ? "yes" : "no"});
  }
  if (history_ratio1 && history_ratio16) {
    targets.add({"append 1 with 2M events of history within 10% of a fresh schema (ops/s, default "
                 "ids; Appends against 2M events of history)",
                 "1 thread: " + percent(*history_ratio1, 1.0) + ", 16 threads: " +
                     percent(*history_ratio16, 1.0),
                 *history_ratio1 >= 0.9 && *history_ratio16 >= 0.9 ? "yes" : "no"});
  }
  // The verdict uses the median repetition's server time; the worst one is shown beside it.
  for (auto& l : large) {
    if (!have_statements) {
      targets.add(
          {l.name + " <= 30 ms of server time", "not measured (no pg_stat_statements)", "?"});
      continue;
    }
    const double p50_ms = l.server.p50_us() / 1000;
    targets.add({l.name + " <= 30 ms of server time",
                 fmt(p50_ms, 1) + " ms (median of " + std::to_string(l.server.count()) + "; max " +
                     fmt(l.server.quantile_us(1.0) / 1000, 1) + " ms; client p50 " +
                     fmt(l.client.p50_us() / 1000, 1) + " ms; the statement floor of this claim: " +
                     fmt(large_floor_ms, 1) + " ms)",
                 p50_ms <= 30 ? "yes" : "no"});
  }
  std::cout << "### Postgres targets\n\n";
  targets.print();

  store->close();
  for (auto& fs : find_stores) fs->close();
  if (!server) {
    pqxx::nontransaction tx(admin);
    tx.exec("drop schema if exists \"" + schema + "\" cascade");
    for (int k = 0; k < 2; ++k)
      tx.exec("drop schema if exists \"" + schema + "_find" + std::to_string(k) + "\" cascade");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    // --only is this program's own; the rest are the shared options.
    std::vector<char*> rest;
    Sections sections;
    for (int i = 0; i < argc; ++i) {
      if (i > 0 && std::strcmp(argv[i], "--only") == 0) {
        if (i + 1 >= argc) throw std::runtime_error("--only needs a value");
        sections = Sections::parse(argv[++i]);
        continue;
      }
      rest.push_back(argv[i]);
    }
    return run(a2::bench::Args::parse(static_cast<int>(rest.size()), rest.data(), "--connection"),
               sections);
  } catch (const std::exception& e) {
    std::cerr << "a2_postgres_bench: " << e.what() << std::endl;
    return 1;
  }
}
