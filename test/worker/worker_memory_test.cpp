// SPDX-License-Identifier: MIT
// a2::Worker on the memory backend with a manual clock (docs/worker.md#scenarios): completion,
// failures with backoff and dead letters, snooze, lease loss, stop, lanes, bad options.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "a2/memory.hpp"
#include "a2/worker.hpp"
#include "worker/lossy_store.hpp"
#include "support/recorder.hpp"
#include "worker/support.hpp"

using namespace std::chrono_literals;
using a2::test::eventually;

namespace {

constexpr std::int64_t kT0 = 1'000'000;

struct MemoryFixture {
  std::shared_ptr<a2::ManualClock> clock = std::make_shared<a2::ManualClock>(kT0);
  std::unique_ptr<a2::Store> store = a2::memory::open({clock, nullptr});

  void add_jobs(const std::string& session, int n, std::optional<std::string> lane = {}) {
    std::vector<a2::NewEvent> events;
    for (int i = 0; i < n; ++i)
      events.push_back({std::nullopt, "job", a2::Json{{"n", i}}, std::nullopt, lane});
    store->append(session, std::move(events));
  }
  a2::StoredEvent row(const std::string& session, std::int64_t index) {
    return store->read_range(session, index - 1, index).at(0);
  }
};

// Options for quick tests: short polls so a manual clock move is seen at once.
a2::WorkerOptions quick(int concurrency = 1) {
  a2::WorkerOptions o;
  o.concurrency = concurrency;
  o.poll_interval = 20ms;
  o.holder = "w1";
  return o;
}

}  // namespace

TEST_CASE("a worker completes every job with its children", "[worker][W1]") {
  MemoryFixture f;
  f.add_jobs("s1", 10);
  f.add_jobs("s2", 10);
  std::atomic<int> runs{0};
  a2::Worker worker(
      *f.store,
      [&](const a2::Job& job, a2::JobContext&) {
        ++runs;
        return a2::JobOutcome::complete(
            {{std::nullopt, "done", a2::Json{{"of", job.index}}, std::nullopt, /*settled=*/true}});
      },
      quick(4));
  bool all = eventually([&] { return worker.stats().completed == 20; });
  auto st = worker.stats();
  INFO("claimed " << st.claimed << " started " << st.started << " completed " << st.completed
                  << " lost " << st.lease_lost << " failed " << st.failed << " calls "
                  << st.store_calls << " errors " << st.store_errors << " ready " << st.ready
                  << " running " << st.running);
  REQUIRE(all);
  worker.stop();
  CHECK(runs == 20);
  for (std::string s : {"s1", "s2"}) {
    auto rows = f.store->read(s);
    REQUIRE(rows.size() == 20);  // 10 jobs, 10 settled children.
    for (int i = 0; i < 10; ++i) {
      CHECK(rows[i].processed_at.has_value());
      CHECK(rows[i].processed_by_attempt == 1);
      REQUIRE(rows[i].returned_event_ids.has_value());
      CHECK(rows[i].returned_event_ids->size() == 1);
    }
    for (int i = 10; i < 20; ++i) {
      CHECK(rows[i].type == "done");
      REQUIRE(rows[i].cause.has_value());
      CHECK(rows[i].cause->attempt == 1);
    }
  }
  auto stats = worker.stats();
  CHECK(stats.claimed == 20);
  CHECK(stats.started == 20);
  CHECK(stats.failed == 0);
  CHECK(stats.lease_lost == 0);
}

TEST_CASE("a failing job waits for its backoff, then dead-letters", "[worker][W2]") {
  MemoryFixture f;
  f.add_jobs("s", 1);
  std::atomic<int> runs{0};
  auto options = quick();
  options.max_failures = 3;
  options.backoff = [](const a2::Job&, std::int64_t failures) {
    return std::chrono::milliseconds(5000 * failures);
  };
  std::mutex m;
  std::vector<std::string> seen;
  options.on_event = [&](const a2::WorkerEvent& e) {
    std::lock_guard lock(m);
    seen.push_back(std::string(a2::to_string(e.kind)));
  };
  a2::Worker worker(
      *f.store,
      [&](const a2::Job&, a2::JobContext&) -> a2::JobOutcome {
        ++runs;
        throw std::runtime_error("boom");
      },
      options);
  REQUIRE(eventually([&] { return worker.stats().failed == 1; }));
  auto row = f.row("s", 1);
  CHECK(row.failure_count == 1);
  CHECK(row.last_error == "boom");
  CHECK(row.available_at == kT0 + 5000);
  std::this_thread::sleep_for(200ms);  // Ten polls: none may run it before its time.
  CHECK(runs == 1);
  f.clock->advance(4999);
  std::this_thread::sleep_for(200ms);
  CHECK(runs == 1);
  f.clock->advance(1);
  REQUIRE(eventually([&] { return worker.stats().failed == 2; }));
  CHECK(runs == 2);
  CHECK(f.row("s", 1).available_at == kT0 + 5000 + 10000);
  f.clock->advance(10000);
  REQUIRE(eventually([&] { return worker.stats().dead_lettered == 1; }));
  CHECK(runs == 3);
  CHECK(f.store->dead_letters("s").size() == 1);
  worker.stop();
  std::lock_guard lock(m);
  CHECK(std::count(seen.begin(), seen.end(), "failed") == 2);
  CHECK(std::count(seen.begin(), seen.end(), "dead_lettered") == 1);
  CHECK(std::count(seen.begin(), seen.end(), "claimed") == 3);
}

TEST_CASE("a snoozed job runs again later without a failure", "[worker][W3]") {
  MemoryFixture f;
  f.add_jobs("s", 1);
  std::atomic<int> runs{0};
  a2::Worker worker(
      *f.store,
      [&](const a2::Job& job, a2::JobContext&) {
        ++runs;
        if (job.attempt == 1) return a2::JobOutcome::snooze(2000ms);
        return a2::JobOutcome::complete();
      },
      quick());
  REQUIRE(eventually([&] { return worker.stats().snoozed == 1; }));
  auto row = f.row("s", 1);
  CHECK(row.failure_count == 0);
  CHECK_FALSE(row.claim_holder.has_value());
  CHECK(row.available_at == kT0 + 2000);
  std::this_thread::sleep_for(200ms);
  CHECK(runs == 1);
  f.clock->advance(2000);
  REQUIRE(eventually([&] { return worker.stats().completed == 1; }));
  CHECK(runs == 2);
  CHECK(f.row("s", 1).processed_by_attempt == 2);
  worker.stop();
}

TEST_CASE("a lost lease stops the handler and drops its result", "[worker][W4]") {
  MemoryFixture f;
  f.add_jobs("s", 1);
  auto options = quick();
  options.lease = 1000ms;
  options.renew_interval = 20ms;
  std::atomic<int> runs{0};
  std::atomic<bool> saw_lease_lost{false};
  a2::Worker worker(
      *f.store,
      [&](const a2::Job& job, a2::JobContext& context) {
        ++runs;
        if (job.attempt == 1) {
          while (!context.stop_requested()) std::this_thread::sleep_for(1ms);
          saw_lease_lost = context.lease_lost();
        }
        return a2::JobOutcome::complete();
      },
      options);
  REQUIRE(eventually([&] { return runs == 1; }));
  f.clock->advance(1001);  // The lease (by the store's clock) has lapsed: renewal fails.
  REQUIRE(eventually([&] { return worker.stats().completed == 1; }));
  worker.stop();
  CHECK(saw_lease_lost);
  CHECK(runs == 2);
  CHECK(worker.stats().lease_lost == 1);
  CHECK(f.row("s", 1).processed_by_attempt == 2);
}

TEST_CASE("stop releases unstarted claims at once and lets running jobs finish", "[worker][W5]") {
  MemoryFixture f;
  f.add_jobs("s", 4);
  auto options = quick(1);
  options.prefetch = 3;
  std::mutex m;
  std::condition_variable cv;
  bool go = false;
  std::atomic<int> started{0};
  a2::Worker worker(
      *f.store,
      [&](const a2::Job&, a2::JobContext&) {
        ++started;
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return go; });
        return a2::JobOutcome::complete();
      },
      options);
  REQUIRE(eventually([&] { return worker.stats().claimed == 4 && started == 1; }));
  std::thread stopper([&] { worker.stop(10s); });
  REQUIRE(eventually([&] { return worker.stats().released == 3; }));
  // Released: another holder claims them without waiting for the lease.
  auto claim = f.store->claim_available({"s", "w2", 30000});
  CHECK(claim.verdict == a2::ClaimVerdict::claimed);
  CHECK(claim.events.size() == 3);
  {
    std::lock_guard lock(m);
    go = true;
  }
  cv.notify_all();
  stopper.join();
  CHECK(started == 1);
  CHECK(worker.stats().completed == 1);
  CHECK(f.row("s", 1).processed_at.has_value());
}

TEST_CASE("stop past its grace requests the handlers' stop tokens", "[worker][W6]") {
  MemoryFixture f;
  f.add_jobs("s", 1);
  std::atomic<bool> lease_lost_flag{true};
  a2::Worker worker(
      *f.store,
      [&](const a2::Job&, a2::JobContext& context) {
        while (!context.stop_requested()) std::this_thread::sleep_for(1ms);
        lease_lost_flag = context.lease_lost();
        return a2::JobOutcome::complete();  // Done despite the stop: the completion is stored.
      },
      quick());
  REQUIRE(eventually([&] { return worker.stats().started == 1; }));
  auto t0 = std::chrono::steady_clock::now();
  worker.stop(100ms);
  CHECK(std::chrono::steady_clock::now() - t0 >= 100ms);
  CHECK_FALSE(lease_lost_flag);
  CHECK(worker.stats().completed == 1);
  CHECK(worker.stopped());
  CHECK(f.row("s", 1).processed_at.has_value());
}

TEST_CASE("a worker serving a list of sessions leaves the others alone", "[worker][W7]") {
  MemoryFixture f;
  f.add_jobs("mine", 3);
  f.add_jobs("other", 3);
  auto options = quick(2);
  options.sessions = {"mine"};
  a2::Worker worker(
      *f.store, [](const a2::Job&, a2::JobContext&) { return a2::JobOutcome{}; }, options);
  REQUIRE(eventually([&] { return worker.stats().completed == 3; }));
  std::this_thread::sleep_for(100ms);
  worker.stop();
  CHECK(worker.stats().completed == 3);
  for (const auto& e : f.store->read("other")) CHECK_FALSE(e.processed_at.has_value());
}

TEST_CASE("jobs of one lane run one at a time, in order", "[worker][W8]") {
  MemoryFixture f;
  f.add_jobs("s", 30, "L");
  f.add_jobs("s", 10);  // Unlaned work beside it.
  std::mutex m;
  std::vector<std::int64_t> order;
  std::atomic<int> in_lane{0}, overlap{0};
  a2::Worker worker(
      *f.store,
      [&](const a2::Job& job, a2::JobContext&) {
        if (job.event.lane) {
          if (++in_lane > 1) ++overlap;
          {
            std::lock_guard lock(m);
            order.push_back(job.index);
          }
          std::this_thread::sleep_for(1ms);
          --in_lane;
        }
        return a2::JobOutcome{};
      },
      quick(8));
  REQUIRE(eventually([&] { return worker.stats().completed == 40; }));
  worker.stop();
  CHECK(overlap == 0);
  std::vector<std::int64_t> expected;
  for (int i = 1; i <= 30; ++i) expected.push_back(i);
  CHECK(order == expected);
}

TEST_CASE("a refused completion is recorded as a failure", "[worker][W9]") {
  MemoryFixture f;
  f.store->append("elsewhere",
                  {{"taken", "x", a2::Json(nullptr), std::nullopt, std::nullopt, true}});
  f.add_jobs("s", 1);
  auto options = quick();
  options.max_failures = 1;
  a2::Worker worker(
      *f.store,
      [](const a2::Job&, a2::JobContext&) {
        return a2::JobOutcome::complete(
            {{"taken", "child", a2::Json(nullptr), std::nullopt, false}});
      },
      options);
  REQUIRE(eventually([&] { return worker.stats().dead_lettered == 1; }));
  worker.stop();
  auto row = f.row("s", 1);
  REQUIRE(row.last_error.has_value());
  CHECK(row.last_error->find("completion was refused") != std::string::npos);
  CHECK_FALSE(row.processed_at.has_value());
}

TEST_CASE("bad worker options are refused before anything starts", "[worker][W10]") {
  MemoryFixture f;
  auto handler = [](const a2::Job&, a2::JobContext&) { return a2::JobOutcome{}; };
  auto refuses = [&](auto change) {
    a2::WorkerOptions o;
    change(o);
    CHECK_THROWS_AS(a2::Worker(*f.store, handler, o), a2::InvalidArgument);
  };
  refuses([](a2::WorkerOptions& o) { o.concurrency = 0; });
  refuses([](a2::WorkerOptions& o) { o.concurrency = 1025; });
  refuses([](a2::WorkerOptions& o) { o.prefetch = -2; });
  refuses([](a2::WorkerOptions& o) { o.lease = 0ms; });
  refuses([](a2::WorkerOptions& o) { o.renew_interval = 30000ms; });
  refuses([](a2::WorkerOptions& o) { o.max_failures = 0; });
  refuses([](a2::WorkerOptions& o) { o.poll_interval = 0ms; });
  refuses([](a2::WorkerOptions& o) { o.max_batch = 0; });
  refuses([](a2::WorkerOptions& o) { o.holder = std::string(300, 'h'); });
  refuses([](a2::WorkerOptions& o) { o.sessions = {""}; });
  // Durations past 100 years would overflow the steady clock's nanoseconds.
  const auto century = std::chrono::milliseconds(36525LL * 24 * 3600 * 1000);
  refuses([&](a2::WorkerOptions& o) { o.lease = century + 1ms; });
  refuses([&](a2::WorkerOptions& o) { o.lease = std::chrono::milliseconds::max(); });
  refuses([&](a2::WorkerOptions& o) { o.poll_interval = century + 1ms; });
  refuses([&](a2::WorkerOptions& o) { o.sweep_interval = century + 1ms; });
  refuses([&](a2::WorkerOptions& o) { o.retry_max_delay = century + 1ms; });
  refuses([&](a2::WorkerOptions& o) { o.stop_grace = century + 1ms; });
  {
    a2::WorkerOptions o;  // At the bound: accepted.
    o.lease = century;
    o.poll_interval = 20ms;
    a2::Worker w(*f.store, handler, o);
    w.stop();
  }
  CHECK_THROWS_AS(a2::Worker(*f.store, a2::JobHandler{}, {}), a2::InvalidArgument);
  CHECK(f.store->find_work().sessions.empty());
}

TEST_CASE("the default holder names the host and process", "[worker][W10]") {
  MemoryFixture f;
  a2::Worker worker(*f.store, [](const a2::Job&, a2::JobContext&) { return a2::JobOutcome{}; });
  CHECK(worker.holder().find(":" + std::to_string(::getpid()) + ":") != std::string::npos);
}

TEST_CASE("a lost claim reply strands nothing: the held claims are released and re-claimed",
          "[worker][W17]") {
  auto store = std::make_shared<a2::test::LossyStore>(a2::memory::open());
  std::vector<a2::NewEvent> jobs(3);
  for (auto& e : jobs) e.type = "job";
  store->append("s", jobs);
  store->lose_claims = 1;
  auto options = quick(2);  // Default lease: 30 s. Waiting for it would take far longer.
  a2::Worker worker(*store, [](const a2::Job&, a2::JobContext&) { return a2::JobOutcome{}; },
                    options);
  REQUIRE(eventually([&] { return worker.stats().completed == 3; }, 5s));
  worker.stop();
  CHECK(store->lost == 1);
  CHECK(worker.stats().lease_lost == 0);
  for (const auto& e : store->read("s")) {
    CHECK(e.processed_by_attempt == 2);  // Attempt 1 was claimed, lost and released.
    CHECK_FALSE(e.claim_holder.has_value());
  }
  CHECK(store->held_claims("s", "w1").empty());
}

TEST_CASE("a lost completion reply is retried: one completion, children written once",
          "[worker][W18]") {
  auto store = std::make_shared<a2::test::LossyStore>(a2::memory::open());
  std::vector<a2::NewEvent> jobs(5);
  for (auto& e : jobs) e.type = "job";
  store->append("s", jobs);
  store->lose_completions = 1;
  a2::Worker worker(*store, [](const a2::Job& job, a2::JobContext&) {
    a2::ChildEvent child;  // No id: the worker gives it one before the first call.
    child.type = "done";
    child.payload = {{"of", job.index}};
    child.settled = true;
    return a2::JobOutcome::complete({child});
  }, quick(1));
  REQUIRE(eventually([&] { return worker.stats().completed == 5; }, 5s));
  worker.stop();
  CHECK(store->lost == 1);
  CHECK(worker.stats().lease_lost == 0);
  auto rows = store->read("s");
  REQUIRE(rows.size() == 10);  // 5 jobs, each with exactly one child.
  std::set<std::int64_t> parents;
  for (std::size_t i = 5; i < rows.size(); ++i) {
    CHECK(rows[i].type == "done");
    REQUIRE(rows[i].cause.has_value());
    parents.insert(rows[i].cause->index);
  }
  CHECK(parents == std::set<std::int64_t>{1, 2, 3, 4, 5});
  for (std::size_t i = 0; i < 5; ++i) CHECK(rows[i].processed_at.has_value());
  CHECK(store->held_claims("s", "w1").empty());
}

TEST_CASE("children without id get ids from the store's IdSource", "[worker][W19]") {
  auto clock = std::make_shared<a2::ManualClock>(kT0);
  auto store = a2::memory::open({clock, std::make_shared<a2::SequentialIdSource>("k")});
  // Named jobs: the store's IdSource draws only for the children.
  std::vector<a2::NewEvent> jobs(3);
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    jobs[i].id = "j" + std::to_string(i + 1);
    jobs[i].type = "job";
  }
  store->append("s", jobs);
  a2::Worker worker(
      *store,
      [](const a2::Job&, a2::JobContext&) {
        a2::ChildEvent child;
        child.type = "done";
        child.settled = true;
        return a2::JobOutcome::complete({child});
      },
      quick(1));
  REQUIRE(eventually([&] { return worker.stats().completed == 3; }, 5s));
  worker.stop();
  auto rows = store->read("s");
  REQUIRE(rows.size() == 6);
  std::set<std::string> children, returned;
  for (std::size_t i = 0; i < 3; ++i) {
    REQUIRE(rows[i].returned_event_ids.has_value());
    REQUIRE(rows[i].returned_event_ids->size() == 1);
    returned.insert(rows[i].returned_event_ids->front());
  }
  for (std::size_t i = 3; i < 6; ++i) children.insert(rows[i].id);
  CHECK(children == std::set<std::string>{"k1", "k2", "k3"});
  CHECK(returned == children);
}

TEST_CASE("a worker reports each job it ran to the store's observer", "[worker][O10]") {
  auto recorder = std::make_shared<a2::conformance::Recorder>();
  auto clock = std::make_shared<a2::ManualClock>(kT0);
  auto store = a2::memory::open({.clock = clock, .observe = {.observer = recorder}});
  std::vector<a2::NewEvent> jobs;
  for (const char* kind : {"complete", "fail", "snooze"})
    jobs.push_back({std::nullopt, kind, nullptr, std::nullopt, std::nullopt});
  store->append("s", std::move(jobs));
  auto options = quick(1);
  options.max_failures = 1;
  a2::Worker worker(
      *store,
      [&](const a2::Job& job, a2::JobContext&) {
        if (job.event.type == "fail") throw std::runtime_error("boom");
        if (job.event.type == "snooze" && job.attempt == 1) return a2::JobOutcome::snooze(60s);
        return a2::JobOutcome::complete();
      },
      options);
  auto jobs_seen = [&] {
    std::size_t n = 0;
    for (const auto& r : recorder->operations()) n += r.operation == "job" ? 1 : 0;
    return n;
  };
  REQUIRE(eventually([&] { return jobs_seen() == 3; }));
  worker.stop();
  std::multiset<std::string> outcomes;
  for (const auto& r : recorder->operations()) {
    if (r.operation != "job") continue;
    outcomes.insert(r.outcome);
    CHECK(r.backend == "memory");
    CHECK(r.session_id == "s");
    CHECK(r.round_trips == 0);
    CHECK_FALSE(r.error.has_value());
  }
  CHECK(outcomes == std::multiset<std::string>{"completed", "dead_lettered", "snoozed"});
  // The worker's store calls are reported too, with their work transitions.
  std::multiset<a2::WorkTransition> work;
  for (const auto& w : recorder->work()) work.insert(w.transition);
  CHECK(work.count(a2::WorkTransition::claimed) == 3);
  CHECK(work.count(a2::WorkTransition::completed) == 1);
  CHECK(work.count(a2::WorkTransition::dead_lettered) == 1);
  CHECK(work.count(a2::WorkTransition::released) == 1);
}

TEST_CASE("a store clock the store refuses fails the worker's calls, never its threads",
          "[worker][W20]") {
  MemoryFixture f;
  f.add_jobs("s", 1);
  std::atomic<int> errors{0}, fail_errors{0};
  auto options = quick();
  // A backoff past 2^53-1 ms: the retry time is 2^53-1 (a2::detail::time_after), not an overflow.
  options.backoff = [](const a2::Job&, std::int64_t) { return std::chrono::milliseconds::max(); };
  options.on_event = [&](const a2::WorkerEvent& e) {
    if (e.kind != a2::WorkerEventKind::store_error) return;
    ++errors;
    if (e.index == 2) ++fail_errors;
  };
  a2::Worker worker(
      *f.store,
      [&](const a2::Job& job, a2::JobContext&) -> a2::JobOutcome {
        if (job.index == 1) throw std::runtime_error("boom");  // Failed with the huge backoff.
        if (job.attempt == 1) {
          f.clock->set(-1);  // Its failure's retry time cannot be read: a store_error.
          throw std::runtime_error("boom");
        }
        return a2::JobOutcome::complete();
      },
      options);
  REQUIRE(eventually([&] { return worker.stats().failed == 1; }));
  CHECK(f.row("s", 1).available_at == a2::kMaxSafeInteger);
  CHECK(errors == 0);

  f.add_jobs("s", 1);  // Index 2.
  REQUIRE(eventually([&] { return fail_errors == 1; }));
  // Polls and claims with the clock at -1 report store errors; the worker keeps running.
  const int seen = errors;
  REQUIRE(eventually([&] { return errors > seen + 2; }));
  CHECK(worker.stats().completed == 0);
  CHECK(worker.stats().failed == 1);
  // The clock reads valid times again, past the lease of job 2's first attempt: it runs again.
  f.clock->set(kT0 + 3'600'000);
  REQUIRE(eventually([&] { return worker.stats().completed == 1; }));
  CHECK(f.row("s", 2).processed_by_attempt == 2);
  CHECK(f.row("s", 2).failure_count == 0);
  CHECK(f.row("s", 1).failure_count == 1);
  worker.stop();
}

namespace {

// W21's set-up: 30 sessions of 3 jobs each on a store whose completion calls take 30 ms longer,
// observed (the inner store reports its calls).
struct SpreadFixture {
  std::shared_ptr<a2::conformance::Recorder> recorder =
      std::make_shared<a2::conformance::Recorder>();
  std::shared_ptr<a2::test::LossyStore> store =
      std::make_shared<a2::test::LossyStore>(a2::memory::open({.observe = {.observer = recorder}}));
  std::vector<std::string> sessions;

  SpreadFixture() {
    for (int i = 0; i < 30; ++i) {
      sessions.push_back("s" + std::to_string(i));
      std::vector<a2::NewEvent> jobs(3);
      for (auto& e : jobs) e.type = "job";
      store->append(sessions.back(), jobs);
    }
    store->completion_delay_ms = 30;
  }
  // How many complete_in_sessions calls the store answered.
  int calls_in_sessions() const {
    int n = 0;
    for (const auto& op : recorder->operations())
      if (op.operation == "complete_in_sessions" && op.outcome == "ok") ++n;
    return n;
  }
  // Every job of every session processed once, with exactly one child, nothing held.
  void require_each_job_once_with_one_child(const std::string& except = "") {
    for (const auto& s : sessions) {
      if (s == except) continue;
      INFO("session " << s);
      auto rows = store->read(s);
      REQUIRE(rows.size() == 6);
      for (std::size_t i = 0; i < 3; ++i) {
        CHECK(rows[i].processed_at.has_value());
        REQUIRE(rows[i].returned_event_ids.has_value());
        CHECK(rows[i].returned_event_ids->size() == 1);
      }
      for (std::size_t i = 3; i < 6; ++i) CHECK(rows[i].type == "done");
      CHECK(store->held_claims(s, "w1").empty());
    }
  }
};

a2::JobOutcome one_child(const a2::Job& job) {
  a2::ChildEvent child;
  child.type = "done";
  child.payload = {{"of", job.index}};
  child.settled = true;
  return a2::JobOutcome::complete({child});
}

// Concurrency 1 with prefetch 16: one completion thread, whose flushes find many sessions' jobs
// finished behind a slow call.
a2::WorkerOptions spread_options() {
  auto o = quick(1);
  o.prefetch = 16;
  return o;
}

}  // namespace

TEST_CASE("completions of many sessions go in complete_in_sessions calls", "[worker][W21]") {
  SpreadFixture f;
  a2::Worker worker(
      *f.store, [](const a2::Job& job, a2::JobContext&) { return one_child(job); },
      spread_options());
  REQUIRE(eventually([&] { return worker.stats().completed == 90; }, 30s));
  worker.stop();
  const auto st = worker.stats();
  CHECK(st.lease_lost == 0);
  CHECK(st.failed == 0);
  CHECK(f.calls_in_sessions() > 0);
  // Fewer completion calls than sessions flushed one by one would need.
  int completion_calls = 0;
  for (const auto& op : f.recorder->operations())
    if (op.operation == "complete_attempts" || op.operation == "complete_in_sessions")
      ++completion_calls;
  CHECK(completion_calls < 30);
  f.require_each_job_once_with_one_child();
}

TEST_CASE("a session refused within complete_in_sessions fails alone; the others complete",
          "[worker][W21][W9]") {
  SpreadFixture f;
  std::vector<a2::NewEvent> owners(3);
  for (std::size_t i = 0; i < owners.size(); ++i) {
    owners[i].id = "taken" + std::to_string(i + 1);
    owners[i].type = "note";
    owners[i].settled = true;
  }
  f.store->append("other", owners);
  auto options = spread_options();
  options.max_failures = 1;
  a2::Worker worker(
      *f.store,
      [](const a2::Job& job, a2::JobContext&) {
        if (job.session_id != "s7") return one_child(job);
        a2::ChildEvent child;
        child.id = "taken" + std::to_string(job.index);  // Owned by "other": refused.
        child.type = "done";
        return a2::JobOutcome::complete({child});
      },
      options);
  REQUIRE(eventually(
      [&] {
        const auto st = worker.stats();
        return st.completed == 87 && st.dead_lettered == 3;
      },
      30s));
  worker.stop();
  CHECK(f.calls_in_sessions() > 0);
  f.require_each_job_once_with_one_child("s7");
  const auto dead = f.store->dead_letters("s7");
  REQUIRE(dead.size() == 3);
  for (const auto& e : dead) {
    REQUIRE(e.last_error.has_value());
    CHECK(e.last_error->find("the completion was refused") != std::string::npos);
  }
}

TEST_CASE("a lost complete_in_sessions reply is retried: each job completed once",
          "[worker][W21][W18]") {
  SpreadFixture f;
  f.store->lose_completions = 3;
  a2::Worker worker(
      *f.store, [](const a2::Job& job, a2::JobContext&) { return one_child(job); },
      spread_options());
  REQUIRE(eventually([&] { return worker.stats().completed == 90; }, 30s));
  worker.stop();
  CHECK(f.store->lost == 3);
  CHECK(worker.stats().lease_lost == 0);
  f.require_each_job_once_with_one_child();
}
