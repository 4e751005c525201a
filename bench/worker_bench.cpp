// SPDX-License-Identifier: MIT
// The worker benchmark (issue 11): a2::Worker draining pre-enqueued no-op jobs at concurrency 1
// and 16, in one session and spread over 1,000 sessions, and the append -> handler start
// latency (closed loop, 2-4 ms think time, one worker at concurrency 1), on Redis and on
// Postgres. The workloads are those of ../shared/peers (BullMQ, graphile-worker, pg-boss), with
// their durability settings: Redis without persistence, Postgres with fsync and
// synchronous_commit on. Prints markdown.
//
//   a2_worker_bench [--backend redis|postgres|both] [--jobs N] [--latency-n N]
//                   [--only drain|latency] [--redis-url URL] [--spin-wait MICROSECONDS]
//                   [--calls] [--synchronous-commit on|off]
//
// --spin-wait sets the stores' spin_wait (docs/semantics.md#spin-wait; default 0, as users run).
// --calls adds, under each drain table, where the store time went: each operation's calls per
// job by verdict ("claim_available busy"), their mean duration, and their time over the drain's
// (the shares add up past 1 where calls ran side by side).
// --synchronous-commit off starts the Postgres cluster without a WAL flush at commit (a control:
// what of a drain's time is the flush; the peers' rows and bench/run-worker keep it on).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "a2/postgres.hpp"
#include "a2/redis.hpp"
#include "a2/worker.hpp"
#include "bench_common.hpp"
#include "call_tally.hpp"
#include "redis_admin.hpp"
#include "servers/postgres_server.hpp"
#include "servers/redis_server.hpp"

using namespace std::chrono_literals;
using a2::bench::fmt;
using a2::bench::note;
using a2::bench::SteadyClock;

namespace {

struct Settings {
  std::string backend = "both";
  std::string only{};
  std::string redis_url{};  // --redis-url: a server of the caller's instead of a private one.
  std::chrono::microseconds spin_wait{0};  // --spin-wait: the stores' spin_wait.
  std::shared_ptr<a2::bench::CallTally> tally{};  // --calls: set as every store's observer.
  std::string synchronous_commit = "on";          // --synchronous-commit (Postgres).
  int jobs = 20000;
  int latency_n = 2000;
};

// Opens a fresh store (its own key prefix or schema) on the running server. On a private Redis
// server it first empties the server, as the peers' benchmarks do before each workload: keys
// left by an earlier workload would slow the work index's safety sweep (a SCAN).
using Opener = std::function<std::unique_ptr<a2::Store>(const std::string& name)>;
// The server's counters (Redis: INFO commandstats), or nothing.
using Probe = std::function<std::map<std::string, double>()>;

void prefill(a2::Store& store, int jobs, int sessions) {
  const int per_session = jobs / sessions;
  for (int s = 0; s < sessions; ++s) {
    std::vector<a2::NewEvent> batch;
    for (int i = 0; i < per_session; ++i) {
      batch.push_back({std::nullopt, "job", a2::Json{{"i", i}}, std::nullopt, std::nullopt});
      if (batch.size() == 1000 || i + 1 == per_session) {
        store.append("s" + std::to_string(s), std::move(batch));
        batch.clear();
      }
    }
  }
}

struct DrainRow {
  double jobs_per_s = 0;
  double calls_per_job = 0;
  double seconds = 0;
  double server_us_per_job = 0;   // Redis: EVALSHA time per job.
  double commands_per_job = 0;    // Redis: commands run per job (inside scripts too).
  std::map<std::string, a2::bench::CallTally::Totals> calls;  // --calls: the drain's store calls.
};

// prefetch -1: the worker's default (as many as concurrency).
DrainRow drain(const Opener& open, const Probe& probe, a2::bench::CallTally* tally,
               const std::string& name, int jobs, int sessions, int concurrency, int prefetch) {
  auto store = open(name);
  prefill(*store, jobs, sessions);
  if (tally) tally->take();  // Not the prefill's appends.
  const auto before = probe ? probe() : std::map<std::string, double>{};
  a2::WorkerOptions options;
  options.concurrency = concurrency;
  options.prefetch = prefetch;
  std::atomic<int> done{0};
  std::mutex m;
  std::condition_variable cv;
  options.on_event = [&](const a2::WorkerEvent& e) {
    if (e.kind == a2::WorkerEventKind::completed && ++done == jobs) cv.notify_all();
  };
  auto t0 = SteadyClock::now();
  a2::Worker worker(
      *store, [](const a2::Job&, a2::JobContext&) { return a2::JobOutcome{}; }, options);
  {
    std::unique_lock lock(m);
    if (!cv.wait_for(lock, 120s, [&] { return done.load() >= jobs; }))
      throw std::runtime_error("drain did not finish in 120 s: " + std::to_string(done.load()));
  }
  auto t1 = SteadyClock::now();
  auto stats = worker.stats();
  DrainRow r;
  if (tally) r.calls = tally->take();  // Not stop()'s.
  worker.stop();
  const auto after = probe ? probe() : std::map<std::string, double>{};
  if (probe) {
    r.server_us_per_job = (after.at("evalsha_usec") - before.at("evalsha_usec")) / jobs;
    r.commands_per_job = (after.at("all_calls") - before.at("all_calls")) / jobs;
  }
  r.seconds = std::chrono::duration<double>(t1 - t0).count();
  r.jobs_per_s = jobs / r.seconds;
  r.calls_per_job = static_cast<double>(stats.store_calls) / jobs;
  return r;
}

struct LatencyRow {
  double p50_ms = 0, p99_ms = 0;
  int n = 0;
};

LatencyRow latency(const Opener& open, const std::string& name, int n) {
  auto store = open(name);
  std::mutex m;
  std::condition_variable cv;
  std::int64_t started_ns = 0;
  a2::WorkerOptions options;
  a2::Worker worker(
      *store,
      [&](const a2::Job&, a2::JobContext&) {
        auto now = SteadyClock::now().time_since_epoch().count();
        {
          std::lock_guard lock(m);
          started_ns = now;
        }
        cv.notify_all();
        return a2::JobOutcome{};
      },
      options);
  std::this_thread::sleep_for(300ms);  // Let the worker settle into its wait.
  std::mt19937 rng(42);
  std::uniform_int_distribution<int> think_us(2000, 4000);
  a2::bench::LatencyRecorder rec;
  for (int i = 0; i < n; ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(think_us(rng)));
    {
      std::lock_guard lock(m);
      started_ns = 0;
    }
    auto t0 = SteadyClock::now().time_since_epoch().count();
    store->append("lat", {{std::nullopt, "job", a2::Json{{"i", i}}, std::nullopt, std::nullopt}});
    std::unique_lock lock(m);
    if (!cv.wait_for(lock, 10s, [&] { return started_ns != 0; }))
      throw std::runtime_error("latency: job " + std::to_string(i) + " did not start in 10 s");
    rec.add(started_ns - t0);
  }
  worker.stop();
  LatencyRow r;
  r.n = n;
  r.p50_ms = rec.p50_us() / 1000.0;
  r.p99_ms = rec.p99_us() / 1000.0;
  return r;
}

void run_backend(const std::string& title, const Opener& open, const Probe& probe,
                 const Settings& s) {
  std::cout << "### " << title << "\n\n";
  if (s.only.empty() || s.only == "drain") {
    std::vector<std::string> headers{"drain of " + std::to_string(s.jobs) + " no-op jobs",
                                     "jobs/s", "store calls per job", "seconds"};
    if (probe) {
      headers.push_back("server µs per job (EVALSHA)");
      headers.push_back("server commands per job");
    }
    a2::bench::Table table(headers);
    a2::bench::Table calls({"store calls of the drain", "operation", "calls per job", "mean ms",
                            "call time / drain time"});
    int run = 0;
    for (int sessions : {1, 1000}) {
      // (concurrency, prefetch): the defaults at 1 and 16, and concurrency 1 with 16 claimed
      // jobs kept ready (completions then go in batches).
      for (auto [concurrency, prefetch] : {std::pair{1, -1}, std::pair{16, -1}, std::pair{1, 16}}) {
        std::string label =
            "concurrency " + std::to_string(concurrency) +
            (prefetch < 0 ? std::string() : ", prefetch " + std::to_string(prefetch)) + ", " +
            (sessions == 1 ? std::string("1 session") : std::to_string(sessions) + " sessions");
        note(title + ": drain, " + label);
        DrainRow r = drain(open, probe, s.tally.get(), "wd" + std::to_string(++run), s.jobs,
                           sessions, concurrency, prefetch);
        std::vector<std::string> row{label, fmt(r.jobs_per_s, 0), fmt(r.calls_per_job, 3),
                                     fmt(r.seconds, 2)};
        if (probe) {
          row.push_back(fmt(r.server_us_per_job, 1));
          row.push_back(fmt(r.commands_per_job, 1));
        }
        table.add(row);
        for (const auto& [operation, t] : r.calls) {
          const double seconds = std::chrono::duration<double>(t.time).count();
          calls.add({label, operation, fmt(static_cast<double>(t.calls) / s.jobs, 3),
                     fmt(seconds * 1000 / static_cast<double>(t.calls), 3),
                     fmt(seconds / r.seconds, 2)});
        }
      }
    }
    table.print();
    if (s.tally) calls.print();
  }
  if (s.only.empty() || s.only == "latency") {
    note(title + ": latency");
    LatencyRow r = latency(open, "wl", s.latency_n);
    a2::bench::Table table(
        {"append -> handler start (closed loop, think 2-4 ms, c=1)", "n", "p50 ms", "p99 ms"});
    table.add(
        {"one worker, discovery mode", std::to_string(r.n), fmt(r.p50_ms, 3), fmt(r.p99_ms, 3)});
    table.print();
  }
}

}  // namespace

int main(int argc, char** argv) {
  Settings s;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string arg = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw std::runtime_error(arg + " needs a value");
        return argv[++i];
      };
      if (arg == "--backend")
        s.backend = value();
      else if (arg == "--jobs")
        s.jobs = std::stoi(value());
      else if (arg == "--latency-n")
        s.latency_n = std::stoi(value());
      else if (arg == "--only")
        s.only = value();
      else if (arg == "--redis-url")
        s.redis_url = value();
      else if (arg == "--spin-wait")
        s.spin_wait = std::chrono::microseconds(std::stoll(value()));
      else if (arg == "--calls")
        s.tally = std::make_shared<a2::bench::CallTally>();
      else if (arg == "--synchronous-commit") {
        s.synchronous_commit = value();
        if (s.synchronous_commit != "on" && s.synchronous_commit != "off")
          throw std::runtime_error("--synchronous-commit is on or off");
      } else
        throw std::runtime_error("unknown argument " + arg);
    }
    std::cout << "## Worker (a2::Worker)\n\n";
    if (s.spin_wait.count() > 0)
      std::cout << "Stores with spin_wait = " << s.spin_wait.count() << " µs.\n\n";
    if (s.backend == "redis" || s.backend == "both") {
      std::unique_ptr<a2::test::RedisServer> server;
      std::string url = s.redis_url;
      if (url.empty()) {
        note("starting redis-server (no persistence)");
        server = std::make_unique<a2::test::RedisServer>(false);
        url = server->url();
      }
      Opener open = [&](const std::string& name) {
        a2::redis::Options o;
        o.url = url;
        o.key_prefix = name;
        o.spin_wait = s.spin_wait;
        o.observe.observer = s.tally;
        return a2::redis::open(o);
      };
      a2::bench::Admin admin(a2::bench::parse_url(url));
      Probe probe = [&] { return a2::bench::snapshot(admin); };
      if (server) {
        open = [&, plain = open](const std::string& name) {
          admin.command({"FLUSHALL"});
          return plain(name);
        };
      }
      run_backend("Redis (`--save '' --appendonly no`)", open, probe, s);
    }
    if (s.backend == "postgres" || s.backend == "both") {
      const std::string durability = "fsync on, synchronous_commit " + s.synchronous_commit;
      note("starting a scratch postgres cluster (" + durability + ")");
      a2::test::PostgresServer server(
          {"fsync=on", "synchronous_commit=" + s.synchronous_commit, "full_page_writes=on"});
      Opener open = [&](const std::string& name) {
        a2::postgres::Options o;
        o.connection = server.connection();
        o.schema = name;
        o.spin_wait = s.spin_wait;
        o.observe.observer = s.tally;
        return a2::postgres::open(o);
      };
      run_backend("Postgres (" + durability + ")", open, Probe{}, s);
    }
  } catch (const std::exception& e) {
    std::cerr << "a2_worker_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
