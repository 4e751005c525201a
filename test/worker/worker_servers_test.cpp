// SPDX-License-Identifier: MIT
// a2::Worker across processes on spawned Redis and Postgres servers (docs/worker.md#scenarios,
// W11..W16): each scenario spawns a2_worker_process children (worker_process.cpp) against one
// store and judges them by the store's rows and by the children's event logs (one line per
// handler start and end and per worker event). Every scenario runs on Redis and on Postgres.
// The children run with the worker's default options unless a comment says why not.
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "a2/postgres.hpp"
#include "a2/redis.hpp"
#include "servers/postgres_server.hpp"
#include "servers/process.hpp"
#include "servers/redis_server.hpp"

namespace {

using namespace std::chrono_literals;
using a2::test::PostgresServer;
using a2::test::Process;
using a2::test::RedisServer;

enum class Backend { redis, postgres };

std::string name_of(Backend b) { return b == Backend::redis ? "redis" : "postgres"; }

// Where a scenario's data lives: a server, and a key prefix (Redis) or schema (Postgres) of its
// own on it.
struct Target {
  Backend backend = Backend::redis;
  std::string url;     // Redis URL or libpq connection string.
  std::string prefix;  // Key prefix or schema.
  std::string dir;     // The children's logs, deleted with the last copy of the target.
  std::shared_ptr<void> cleanup{};

  std::unique_ptr<a2::Store> open() const {
    if (backend == Backend::redis) {
      a2::redis::Options o;
      o.url = url;
      o.key_prefix = prefix;
      return a2::redis::open(o);
    }
    a2::postgres::Options o;
    o.connection = url;
    o.schema = prefix;
    return a2::postgres::open(o);
  }
};

// Deletes `dir` when the last copy of the result goes, unless A2_WORKER_TEST_KEEP_LOGS is set
// (then its path is printed, to read the children's logs).
std::shared_ptr<void> scratch(const std::string& dir) {
  return std::shared_ptr<void>(nullptr, [dir](void*) {
    if (std::getenv("A2_WORKER_TEST_KEEP_LOGS"))
      std::cout << "logs kept in " << dir << "\n";
    else
      a2::test::remove_tree(dir);
  });
}

// A target on the executable's shared server of `backend`.
Target shared_target(Backend backend, const std::string& name) {
  Target t;
  t.backend = backend;
  t.url = backend == Backend::redis ? RedisServer::shared().url()
                                    : PostgresServer::shared().connection();
  t.prefix = name;
  t.dir = a2::test::make_temp_dir("a2-worker-" + name + "-");
  t.cleanup = scratch(t.dir);
  return t;
}

// One parsed log line of a child (worker_process.cpp describes the format).
struct Line {
  std::string kind;
  long pid = 0;
  std::string session;
  std::int64_t index = 0, attempt = 0, store_ms = 0, wall_us = 0;
  std::string detail;
  std::string who;  // The child's name in the test ("A", "B").
};

// A child process and its log, read incrementally (complete lines only).
class Child {
 public:
  Child(const Target& t, std::string who, std::vector<std::string> extra) : who_(std::move(who)) {
    log_path_ = t.dir + "/" + who_ + ".log";
    out_path_ = t.dir + "/" + who_ + ".out";
    std::vector<std::string> argv{A2_WORKER_PROCESS, "--backend", name_of(t.backend),
                                  "--url",           t.url,       "--prefix",
                                  t.prefix,          "--log",     log_path_};
    argv.insert(argv.end(), extra.begin(), extra.end());
    process_ = Process::spawn(argv, out_path_);
  }

  const std::vector<Line>& lines() {
    std::ifstream in(log_path_, std::ios::binary);
    if (!in) return lines_;
    in.seekg(static_cast<std::streamoff>(offset_));
    std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::size_t start = 0;
    for (;;) {
      std::size_t end = chunk.find('\n', start);
      if (end == std::string::npos) break;
      lines_.push_back(parse(chunk.substr(start, end - start)));
      start = end + 1;
    }
    offset_ += start;
    return lines_;
  }
  std::size_t count(const std::string& kind, const std::string& session = "") {
    std::size_t n = 0;
    for (const auto& l : lines())
      if (l.kind == kind && (session.empty() || l.session == session)) ++n;
    return n;
  }
  std::optional<Line> first(const std::string& kind) {
    for (const auto& l : lines())
      if (l.kind == kind) return l;
    return std::nullopt;
  }

  Process& process() { return process_; }
  const std::string& who() const { return who_; }
  // The child's stderr and the tail of its log, for failure messages.
  std::string output() const {
    std::string log = a2::test::read_file(log_path_);
    if (log.size() > 3000) log = "..." + log.substr(log.size() - 3000);
    return "[" + who_ + " stderr] " + a2::test::read_file(out_path_) + "\n[" + who_ +
           " log tail]\n" + log;
  }
  // SIGTERM, then waits for a clean exit: the process ends within `timeout` and logged its
  // "exit" line (written after worker.stop(), just before it returns 0).
  bool terminate(std::chrono::milliseconds timeout = 30s) {
    process_.signal(SIGTERM);
    return exited(timeout);
  }
  bool exited(std::chrono::milliseconds timeout) {
    return process_.wait_exit(timeout) && count("exit") == 1;
  }

 private:
  Line parse(const std::string& text) const {
    Line l;
    std::istringstream in(text);
    in >> l.kind >> l.pid >> l.session >> l.index >> l.attempt >> l.store_ms >> l.wall_us;
    std::getline(in >> std::ws, l.detail);
    l.who = who_;
    return l;
  }

  std::string who_, log_path_, out_path_;
  Process process_;
  std::size_t offset_ = 0;
  std::vector<Line> lines_;
};

// Fails the test case when `ok` is false, with the children's stderr and log tails.
void require(bool ok, const std::string& what, std::vector<Child*> children) {
  if (ok) return;
  std::string out;
  for (Child* c : children) out += c->output() + "\n";
  FAIL(what << "\n" << out);
}

// Polls `pred` every 20 ms until it holds (true) or `timeout` passes (false). The timeouts are
// generous limits (ThreadSanitizer runs are several times slower), not expected durations.
bool within(std::chrono::milliseconds timeout, const std::function<bool()>& pred) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

std::string session_name(int i) { return "s" + std::to_string(i); }

// Appends `n` jobs to `session` (indexes 1..n on a new session), in lanes round-robin if any.
void add_jobs(a2::Store& store, const std::string& session, int n,
              const std::vector<std::string>& lanes = {}) {
  std::vector<a2::NewEvent> events;
  for (int i = 0; i < n; ++i) {
    std::optional<std::string> lane;
    if (!lanes.empty()) lane = lanes[static_cast<std::size_t>(i) % lanes.size()];
    events.push_back({std::nullopt, "job", a2::Json{{"n", i}}, std::nullopt, lane});
  }
  store.append(session, std::move(events));
}

// Every job (indexes 1..jobs of each session) is completed exactly once in the store: processed
// by one attempt, which returned exactly one child, and the session holds exactly one "done"
// child per job, caused by that attempt and carrying it. Returns the problems found (empty: ok)
// and fills `completed_by` with each job's completing attempt.
std::vector<std::string> check_exactly_once(
    a2::Store& store, const std::vector<std::string>& sessions, int jobs,
    std::map<std::pair<std::string, std::int64_t>, std::int64_t>* completed_by = nullptr) {
  std::vector<std::string> problems;
  auto problem = [&](const std::string& session, std::int64_t index, const std::string& what) {
    if (problems.size() < 30)
      problems.push_back(session + "#" + std::to_string(index) + ": " + what);
    else if (problems.size() == 30)
      problems.push_back("...");
  };
  for (const auto& session : sessions) {
    auto rows = store.read(session);
    std::map<std::int64_t, std::vector<const a2::StoredEvent*>> children;
    for (const auto& r : rows) {
      if (r.type != "done") continue;
      if (!r.cause) {
        problem(session, r.index, "a child without a cause");
        continue;
      }
      children[r.cause->index].push_back(&r);
    }
    if (rows.size() != static_cast<std::size_t>(2 * jobs))
      problem(session, 0,
              std::to_string(rows.size()) + " rows, expected " + std::to_string(2 * jobs) +
                  " (jobs and one child each)");
    for (std::int64_t i = 1; i <= jobs; ++i) {
      if (static_cast<std::size_t>(i) > rows.size()) {
        problem(session, i, "missing");
        continue;
      }
      const auto& job = rows[static_cast<std::size_t>(i - 1)];
      if (job.type != "job" || job.index != i) {
        problem(session, i, "not the job row");
        continue;
      }
      if (!job.processed_at || !job.processed_by_attempt) {
        problem(session, i,
                "not completed (attempt_count " + std::to_string(job.attempt_count) +
                    ", failures " + std::to_string(job.failure_count) + ")");
        continue;
      }
      const std::int64_t attempt = *job.processed_by_attempt;
      if (completed_by) (*completed_by)[{session, i}] = attempt;
      if (!job.returned_event_ids || job.returned_event_ids->size() != 1)
        problem(session, i, "returned_event_ids is not one id");
      const auto& mine = children[i];
      if (mine.size() != 1) {
        problem(session, i, std::to_string(mine.size()) + " children");
        continue;
      }
      const auto& child = *mine[0];
      if (child.cause->attempt != attempt)
        problem(session, i,
                "the child's cause attempt " + std::to_string(child.cause->attempt) +
                    " is not the completing attempt " + std::to_string(attempt));
      if (child.payload.value("attempt", std::int64_t{-1}) != attempt ||
          child.payload.value("index", std::int64_t{-1}) != i ||
          child.payload.value("session", std::string()) != session)
        problem(session, i, "the child carries " + child.payload.dump());
      if (job.returned_event_ids && job.returned_event_ids->size() == 1 &&
          job.returned_event_ids->front() != child.id)
        problem(session, i, "returned_event_ids does not name the child");
    }
  }
  return problems;
}

using JobKey = std::pair<std::string, std::int64_t>;
using AttemptKey = std::tuple<std::string, std::int64_t, std::int64_t>;

// Handler runs beyond one per job, from the children's logs: every run of an attempt that did
// not complete the job must be explained by a lease_lost of that attempt (in any process), and
// no attempt may start twice. Returns the problems; `extra` gets the number of extra runs.
std::vector<std::string> check_extra_runs(const std::vector<Line>& lines,
                                          const std::map<JobKey, std::int64_t>& completed_by,
                                          std::size_t& extra) {
  std::map<AttemptKey, int> starts;
  std::set<AttemptKey> lost;
  std::map<JobKey, int> runs;
  for (const auto& l : lines) {
    if (l.kind == "start") {
      ++starts[{l.session, l.index, l.attempt}];
      ++runs[{l.session, l.index}];
    } else if (l.kind == "lease_lost") {
      lost.insert({l.session, l.index, l.attempt});
    }
  }
  std::vector<std::string> problems;
  extra = 0;
  for (const auto& [job, n] : runs) extra += static_cast<std::size_t>(n - 1);
  for (const auto& [key, n] : starts) {
    const auto& [session, index, attempt] = key;
    const std::string name =
        session + "#" + std::to_string(index) + " attempt " + std::to_string(attempt);
    if (n > 1) problems.push_back(name + " started " + std::to_string(n) + " times");
    auto done = completed_by.find({session, index});
    if (done != completed_by.end() && done->second == attempt) continue;
    if (!lost.count(key)) problems.push_back(name + " ran, did not complete, lost no lease");
  }
  if (problems.size() > 30) problems.resize(30);
  return problems;
}

std::vector<Line> all_lines(std::vector<Child*> children) {
  std::vector<Line> out;
  for (Child* c : children) {
    const auto& l = c->lines();
    out.insert(out.end(), l.begin(), l.end());
  }
  return out;
}

std::size_t count_kind(const std::vector<Line>& lines, const std::string& kind) {
  return static_cast<std::size_t>(
      std::count_if(lines.begin(), lines.end(), [&](const Line& l) { return l.kind == kind; }));
}

// Distinct (session, index) with a "completed" line in any of the children.
std::size_t completed_jobs(std::vector<Child*> children) {
  std::set<JobKey> done;
  for (Child* c : children)
    for (const auto& l : c->lines())
      if (l.kind == "completed") done.insert({l.session, l.index});
  return done.size();
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += s + "\n";
  return out;
}

// ---- W11 ---------------------------------------------------------------------------------------

void drain_many(const Target& t) {
  constexpr int kSessions = 100, kJobsPerSession = 100;
  auto store = t.open();
  std::vector<std::string> sessions;
  for (int s = 0; s < kSessions; ++s) {
    sessions.push_back(session_name(s));
    add_jobs(*store, sessions.back(), kJobsPerSession);
  }
  const auto begin = std::chrono::steady_clock::now();
  // Discovery mode (no --sessions); the children exit once the work index stays empty 1 s.
  std::vector<std::string> args{"--concurrency",    "4",   "--handler", "noop",
                                "--exit-when-idle", "1000"};
  Child a(t, "A", args), b(t, "B", args);
  const bool exited = a.exited(120s) && b.exited(30s);
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - begin);
  require(exited, "the children did not exit cleanly", {&a, &b});

  std::map<JobKey, std::int64_t> completed_by;
  auto problems = check_exactly_once(*store, sessions, kJobsPerSession, &completed_by);
  INFO(joined(problems));
  CHECK(problems.empty());
  CHECK(completed_by.size() == static_cast<std::size_t>(kSessions * kJobsPerSession));

  const auto lines = all_lines({&a, &b});
  std::size_t extra = 0;
  auto unexplained = check_extra_runs(lines, completed_by, extra);
  std::cout << "[W11 " << name_of(t.backend) << "] " << kSessions * kJobsPerSession << " jobs in "
            << took.count() << " ms (with startup and 1 s idle exit); runs "
            << count_kind(lines, "start") << ", extra runs after a lost lease " << extra
            << ", lease_lost events " << count_kind(lines, "lease_lost") << "; A completed "
            << a.count("completed") << ", B completed " << b.count("completed") << "\n";
  INFO(joined(unexplained));
  CHECK(unexplained.empty());
  CHECK(count_kind(lines, "completed") == static_cast<std::size_t>(kSessions * kJobsPerSession));
  CHECK(count_kind(lines, "failed") == 0);
}

// ---- W12 ---------------------------------------------------------------------------------------

void kill_mid_job(const Target& t) {
  auto store = t.open();
  add_jobs(*store, "k", 1);
  // A's lease is 2 s (the default 30 s would make the test wait 30 s); its handler hangs.
  Child a(t, "A", {"--handler", "hang", "--lease", "2000"});
  require(within(30s, [&] { return a.count("start") == 1; }), "A did not start the job", {&a});
  // B comes after A holds the job, so A is the one that runs attempt 1.
  Child b(t, "B", {"--handler", "noop"});
  require(within(30s, [&] { return b.count("ready") == 1; }), "B did not start", {&a, &b});

  a.process().signal(SIGKILL);
  REQUIRE(a.process().wait_exit(10s));
  // A is gone: the lease end stored now is final (no renewal can move it).
  const auto row = store->read_range("k", 0, 1).at(0);
  REQUIRE(row.claim_expires_at.has_value());
  const std::int64_t lease_end = *row.claim_expires_at;
  CHECK(row.attempt_count == 1);
  const auto ready = a.first("ready");
  REQUIRE(ready);
  CHECK(row.claim_holder == ready->detail);

  require(within(30s, [&] { return b.count("completed", "k") == 1; }), "B did not complete the job",
          {&a, &b});
  std::optional<Line> start;
  for (const auto& l : b.lines())
    if (l.kind == "start" && l.session == "k") start = l;
  REQUIRE(start);
  std::cout << "[W12 " << name_of(t.backend) << "] B started attempt " << start->attempt << " "
            << start->store_ms - lease_end << " ms after A's lease end\n";
  CHECK(start->attempt == 2);
  CHECK(start->store_ms >= lease_end);          // Not before the lease end.
  CHECK(start->store_ms <= lease_end + 10000);  // A generous limit: B does not wait forever.
  CHECK(b.count("start") == 1);

  auto problems = check_exactly_once(*store, {"k"}, 1);
  INFO(joined(problems));
  CHECK(problems.empty());
  CHECK(store->read_range("k", 0, 1).at(0).processed_by_attempt == 2);
  CHECK(b.terminate());
}

// ---- W13 ---------------------------------------------------------------------------------------

void stop_hands_over(const Target& t) {
  constexpr int kJobs = 20;
  auto store = t.open();
  add_jobs(*store, "h", kJobs);
  // A: one handler thread that hangs, and a prefetch large enough to hold every other job
  // claimed and unstarted. Lease 30 s (the default, said here because it matters): the TTL is
  // not what frees the jobs. A serves only "h", so the probe below goes to B.
  Child a(t, "A",
          {"--concurrency", "1", "--prefetch", "64", "--handler", "hang", "--lease", "30000",
           "--grace", "300", "--sessions", "h"});
  require(within(30s, [&] { return a.count("claimed", "h") == kJobs && a.count("start") == 1; }),
          "A did not claim every job", {&a});

  // B runs and watches (discovery mode) before A stops: a probe job in another session shows
  // that it claims what becomes available.
  // B's prefetch takes every released job in one claim, so the measure is the handover (A's
  // release, the work signal, B's claim), not B's completion round trips: with the default
  // prefetch (4 ready beside 4 running) the last jobs wait for two or three completions of the
  // first ones, each a round trip of up to ~20 ms on a loaded machine.
  Child b(t, "B", {"--concurrency", "4", "--prefetch", "32", "--handler", "noop"});
  require(within(30s, [&] { return b.count("ready") == 1; }), "B did not start", {&a, &b});
  add_jobs(*store, "probe", 1);
  require(within(30s, [&] { return b.count("completed", "probe") == 1; }),
          "B did not run the probe", {&a, &b});
  CHECK(b.count("start", "h") == 0);  // Everything in "h" is A's.

  a.process().signal(SIGTERM);
  require(within(30s, [&] { return b.count("completed", "h") == kJobs; }),
          "B did not complete the jobs A released", {&a, &b});
  require(a.exited(30s), "A did not exit cleanly", {&a, &b});

  std::map<std::int64_t, std::int64_t> released_us, started_us;
  for (const auto& l : a.lines())
    if (l.kind == "released" && l.session == "h") released_us[l.index] = l.wall_us;
  for (const auto& l : b.lines())
    if (l.kind == "start" && l.session == "h") started_us[l.index] = l.wall_us;
  CHECK(released_us.size() == static_cast<std::size_t>(kJobs));  // 19 unstarted, 1 cancelled.
  std::int64_t worst = -1'000'000'000;
  std::vector<std::int64_t> delays;
  for (const auto& [index, at] : released_us) {
    auto s = started_us.find(index);
    REQUIRE(s != started_us.end());
    delays.push_back(s->second - at);
    worst = std::max(worst, s->second - at);
  }
  std::sort(delays.begin(), delays.end());
  std::cout << "[W13 " << name_of(t.backend) << "] release -> start in B: median "
            << delays[delays.size() / 2] / 1000.0 << " ms, worst " << worst / 1000.0
            << " ms (negative: B started before A logged its release)\n";
  CHECK(worst < 100'000);  // Under 100 ms.

  for (const auto& l : b.lines())
    if (l.kind == "start" && l.session == "h") CHECK(l.attempt == 2);
  auto problems = check_exactly_once(*store, {"h"}, kJobs);
  INFO(joined(problems));
  CHECK(problems.empty());
  CHECK(b.terminate());
}

// ---- W14 ---------------------------------------------------------------------------------------

void backoff_across_processes(const Target& t) {
  constexpr std::int64_t kBackoffMs = 1500;
  const std::vector<std::string> sessions{"f1", "f2"};
  constexpr int kJobs = 2;  // Per session.
  auto store = t.open();
  for (const auto& s : sessions) add_jobs(*store, s, kJobs);
  // A fixed backoff (the default is exponential with jitter) so the bound is exact; the
  // children exit when the work index stays empty 1.5 s: after the dead letters, nobody runs
  // the jobs again in that time.
  std::vector<std::string> args{"--concurrency",    "2",    "--handler",      "fail-always",
                                "--backoff",        "1500", "--max-failures", "3",
                                "--exit-when-idle", "1500"};
  // A claims every job first and fails attempt 1 of each; B runs beside it from then on. Once
  // the failures are stored A stops, so the reruns happen in B, which knows of the failures
  // only through the store (left to race, the failing process's own timer wins most reruns).
  Child a(t, "A", args);
  require(within(30s, [&] { return a.count("claimed") == sessions.size() * kJobs; }),
          "A did not claim every job", {&a});
  Child b(t, "B", args);
  require(
      within(30s,
             [&] { return b.count("ready") == 1 && a.count("failed") == sessions.size() * kJobs; }),
      "A did not fail every job, or B did not start", {&a, &b});
  require(a.terminate(), "A did not exit cleanly", {&a, &b});
  require(b.exited(60s), "B did not exit cleanly", {&a, &b});

  const auto lines = all_lines({&a, &b});
  std::map<JobKey, std::map<std::int64_t, Line>> starts, ends;
  std::map<JobKey, int> start_count;
  std::set<JobKey> dead;
  for (const auto& l : lines) {
    const JobKey job{l.session, l.index};
    if (l.kind == "start") {
      starts[job][l.attempt] = l;
      ++start_count[job];
    } else if (l.kind == "end") {
      ends[job][l.attempt] = l;
    } else if (l.kind == "dead_lettered") {
      dead.insert(job);
    }
  }
  int cross = 0;
  std::int64_t tightest = INT64_MAX;
  for (const auto& s : sessions) {
    for (std::int64_t i = 1; i <= kJobs; ++i) {
      const JobKey job{s, i};
      INFO(s << "#" << i);
      CHECK(start_count[job] == 3);  // Three runs, then never again.
      CHECK(dead.count(job) == 1);
      for (std::int64_t attempt = 1; attempt <= 3; ++attempt) {
        REQUIRE(starts[job].count(attempt) == 1);
        REQUIRE(ends[job].count(attempt) == 1);
      }
      for (std::int64_t attempt = 2; attempt <= 3; ++attempt) {
        const Line& rerun = starts[job][attempt];
        const Line& failure = ends[job][attempt - 1];
        INFO("attempt " << attempt << " started " << rerun.store_ms - failure.store_ms
                        << " ms after the failure of attempt " << attempt - 1);
        CHECK(rerun.store_ms >= failure.store_ms + kBackoffMs);
        tightest = std::min(tightest, rerun.store_ms - failure.store_ms);
        if (rerun.who != failure.who) ++cross;
      }
    }
    const auto dl = store->dead_letters(s);
    REQUIRE(dl.size() == static_cast<std::size_t>(kJobs));
    for (const auto& row : dl) {
      CHECK(row.failure_count == 3);
      CHECK(row.attempt_count == 3);
      CHECK(row.last_error == "fail-always");
      CHECK_FALSE(row.processed_at.has_value());
    }
  }
  CHECK(cross >= 1);
  std::cout << "[W14 " << name_of(t.backend) << "] reruns " << 2 * kJobs * sessions.size()
            << ", in the other process " << cross << ", earliest rerun " << tightest
            << " ms after its failure (backoff " << kBackoffMs << " ms)\n";
}

// ---- W15 ---------------------------------------------------------------------------------------

void lanes_keep_order(const Target& t) {
  const std::vector<std::string> sessions{"l1", "l2"};
  const std::vector<std::string> lanes{"a", "b", "c"};
  constexpr int kPerLane = 50;
  const int jobs = kPerLane * static_cast<int>(lanes.size());
  auto store = t.open();
  for (const auto& s : sessions) add_jobs(*store, s, jobs, lanes);
  std::vector<std::string> args{"--concurrency",    "4",   "--handler", "lane-record",
                                "--exit-when-idle", "1000"};
  Child a(t, "A", args), b(t, "B", args);
  const bool exited = a.exited(120s) && b.exited(30s);
  require(exited, "the children did not exit cleanly", {&a, &b});

  auto problems = check_exactly_once(*store, sessions, jobs);
  INFO(joined(problems));
  CHECK(problems.empty());

  const auto lines = all_lines({&a, &b});
  // Per lane: the starts in time order, with each job's end.
  std::map<std::pair<std::string, std::string>, std::vector<Line>> by_lane;
  std::map<JobKey, Line> end_of;
  std::map<JobKey, int> runs;
  for (const auto& l : lines) {
    if (l.kind == "start") {
      by_lane[{l.session, l.detail}].push_back(l);
      ++runs[{l.session, l.index}];
    } else if (l.kind == "end") {
      end_of[{l.session, l.index}] = l;
    }
  }
  CHECK(runs.size() == sessions.size() * static_cast<std::size_t>(jobs));
  for (const auto& [job, n] : runs) {
    INFO(job.first << "#" << job.second);
    CHECK(n == 1);
  }
  CHECK(by_lane.size() == sessions.size() * lanes.size());
  int overlaps_checked = 0, in_other_process = 0;
  for (auto& [lane, starts] : by_lane) {
    INFO("session " << lane.first << " lane " << lane.second);
    std::stable_sort(starts.begin(), starts.end(),
                     [](const Line& x, const Line& y) { return x.wall_us < y.wall_us; });
    CHECK(starts.size() == static_cast<std::size_t>(kPerLane));
    for (std::size_t k = 0; k < starts.size(); ++k) {
      // Index order: the k-th job of lane number L is at index k * lanes + L + 1.
      const auto lane_no = std::find(lanes.begin(), lanes.end(), lane.second) - lanes.begin();
      const std::int64_t expected = static_cast<std::int64_t>(k * lanes.size()) + lane_no + 1;
      CHECK(starts[k].index == expected);
      if (k == 0) continue;
      const auto prev = end_of.find({lane.first, starts[k - 1].index});
      REQUIRE(prev != end_of.end());
      INFO("index " << starts[k].index << " started " << starts[k].wall_us - prev->second.wall_us
                    << " us after index " << starts[k - 1].index << " ended");
      CHECK(starts[k].wall_us >= prev->second.wall_us);  // No overlap in one lane.
      ++overlaps_checked;
      if (starts[k].who != starts[k - 1].who) ++in_other_process;
    }
  }
  std::cout << "[W15 " << name_of(t.backend) << "] " << overlaps_checked
            << " lane handoffs checked, " << in_other_process
            << " of them to the other process; A ran " << a.count("start") << ", B ran "
            << b.count("start") << "\n";
}

// ---- W16 ---------------------------------------------------------------------------------------

void restart_under_load(const Target& t, const std::function<void()>& restart) {
  constexpr int kSessions = 20, kJobsPerSession = 100, kJobs = kSessions * kJobsPerSession;
  std::vector<std::string> sessions;
  {
    auto store = t.open();
    for (int s = 0; s < kSessions; ++s) {
      sessions.push_back(session_name(s));
      add_jobs(*store, sessions.back(), kJobsPerSession);
    }
    store->close();
  }
  // Jobs of 2 ms, so the drain takes long enough to restart the server in its middle.
  std::vector<std::string> args{"--concurrency",    "4",   "--handler", "sleep:2",
                                "--exit-when-idle", "1500"};
  Child a(t, "A", args), b(t, "B", args);
  require(within(60s,
                 [&] {
                   return completed_jobs({&a, &b}) >= kJobs / 5;
                 }),
          "the children did not complete a fifth of the jobs", {&a, &b});
  const std::size_t before = completed_jobs({&a, &b});
  const auto down = std::chrono::steady_clock::now();
  restart();
  const auto outage = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - down);
  const bool exited = a.exited(120s) && b.exited(30s);
  require(exited, "the children did not exit cleanly after the restart", {&a, &b});

  auto store = t.open();
  std::map<JobKey, std::int64_t> completed_by;
  auto problems = check_exactly_once(*store, sessions, kJobsPerSession, &completed_by);
  INFO(joined(problems));
  CHECK(problems.empty());
  CHECK(completed_by.size() == static_cast<std::size_t>(kJobs));

  const auto lines = all_lines({&a, &b});
  std::size_t extra = 0;
  auto unexplained = check_extra_runs(lines, completed_by, extra);
  std::cout << "[W16 " << name_of(t.backend) << "] restarted after " << before << " of " << kJobs
            << " jobs, down " << outage.count() << " ms; store errors "
            << count_kind(lines, "store_error") << ", lease_lost "
            << count_kind(lines, "lease_lost") << ", extra runs " << extra << "; "
            << a.first("exit")->detail << " | " << b.first("exit")->detail << "\n";
  CHECK(before < static_cast<std::size_t>(kJobs));  // The restart came under load.
  INFO(joined(unexplained));
  CHECK(unexplained.empty());
}

}  // namespace

TEST_CASE("W11 redis: 2 processes x 4 threads drain 10,000 jobs over 100 sessions",
          "[worker][W11][redis]") {
  drain_many(shared_target(Backend::redis, "w11"));
}
TEST_CASE("W11 postgres: 2 processes x 4 threads drain 10,000 jobs over 100 sessions",
          "[worker][W11][postgres]") {
  drain_many(shared_target(Backend::postgres, "w11"));
}

TEST_CASE("W12 redis: kill -9 mid-job, another process completes it after the lease",
          "[worker][W12][redis]") {
  kill_mid_job(shared_target(Backend::redis, "w12"));
}
TEST_CASE("W12 postgres: kill -9 mid-job, another process completes it after the lease",
          "[worker][W12][postgres]") {
  kill_mid_job(shared_target(Backend::postgres, "w12"));
}

TEST_CASE("W13 redis: stop() hands unstarted claims to another process in under 100 ms",
          "[worker][W13][redis]") {
  stop_hands_over(shared_target(Backend::redis, "w13"));
}
TEST_CASE("W13 postgres: stop() hands unstarted claims to another process in under 100 ms",
          "[worker][W13][postgres]") {
  stop_hands_over(shared_target(Backend::postgres, "w13"));
}

TEST_CASE("W14 redis: no rerun before the backoff across processes; dead letter after 3",
          "[worker][W14][redis]") {
  backoff_across_processes(shared_target(Backend::redis, "w14"));
}
TEST_CASE("W14 postgres: no rerun before the backoff across processes; dead letter after 3",
          "[worker][W14][postgres]") {
  backoff_across_processes(shared_target(Backend::postgres, "w14"));
}

TEST_CASE("W15 redis: 8 threads in 2 processes keep per-lane order", "[worker][W15][redis]") {
  lanes_keep_order(shared_target(Backend::redis, "w15"));
}
TEST_CASE("W15 postgres: 8 threads in 2 processes keep per-lane order", "[worker][W15][postgres]") {
  lanes_keep_order(shared_target(Backend::postgres, "w15"));
}

TEST_CASE("W16 redis: a server restart under load loses and duplicates no completion",
          "[worker][W16][redis]") {
  // Its own server, persistent (every acknowledged write survives the SIGKILL of restart()).
  RedisServer server(/*persistent=*/true);
  Target t{Backend::redis, server.url(), "w16", a2::test::make_temp_dir("a2-worker-w16-")};
  t.cleanup = scratch(t.dir);
  restart_under_load(t, [&] { server.restart(); });
}
TEST_CASE("W16 postgres: a server restart under load loses and duplicates no completion",
          "[worker][W16][postgres]") {
  PostgresServer server;  // Its own cluster: stop() and start() would hit the other tests.
  Target t{Backend::postgres, server.connection(), "w16",
           a2::test::make_temp_dir("a2-worker-w16-")};
  t.cleanup = scratch(t.dir);
  restart_under_load(t, [&] {
    server.stop();
    server.start();
  });
}
