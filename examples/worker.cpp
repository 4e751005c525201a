// SPDX-License-Identifier: MIT
// A small job service on a2::Worker (docs/worker.md), on the in-memory backend:
//   - "email" jobs: the first two attempts fail (a flaky provider), the third succeeds after the
//     backoff;
//   - a "report" job that takes longer than its lease and lives on the worker's lease renewals;
//   - an "import" job that always fails until an operator fixes its input: it becomes a dead
//     letter, is redriven, and succeeds;
//   - SIGTERM or SIGINT stops the service gracefully (unstarted jobs handed back, running ones
//     given 5 s). Without a signal it stops by itself once every job is done.
#include "a2/worker.hpp"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>

#include "a2/a2.hpp"

using namespace std::chrono_literals;

namespace {

std::atomic<bool> g_stop{false};
extern "C" void on_signal(int) { g_stop = true; }

std::atomic<bool> g_import_fixed{false};

a2::NewEvent job_event(std::string type, a2::Json payload) {
  a2::NewEvent e;
  e.type = std::move(type);
  e.payload = std::move(payload);
  return e;
}

a2::JobOutcome handle(const a2::Job& job, a2::JobContext& context) {
  const std::string& type = job.event.type;
  if (type == "email") {
    if (job.attempt < 3) throw std::runtime_error("smtp: 451 try again later");
    std::printf("email %lld sent on attempt %lld\n", static_cast<long long>(job.index),
                static_cast<long long>(job.attempt));
    return a2::JobOutcome::complete({{.id = std::nullopt,
                                      .type = "email.sent",
                                      .payload = {{"to", job.event.payload["to"]}},
                                      .lane = std::nullopt,
                                      .settled = true}});
  }
  if (type == "report") {
    // 2.5 s of work with a 1 s lease: the renewals keep it ours. A long handler watches its stop
    // token: a lost lease or a stop out of grace ends the work early.
    for (int step = 0; step < 25; ++step) {
      if (context.stop_requested()) throw std::runtime_error("report: stopped");
      std::this_thread::sleep_for(100ms);
    }
    std::printf("report %lld done (lease renewed in the background)\n",
                static_cast<long long>(job.index));
    return a2::JobOutcome::complete();
  }
  if (type == "import") {
    if (!g_import_fixed) throw std::runtime_error("import: row 17 has no customer id");
    std::printf("import %lld done after the redrive\n", static_cast<long long>(job.index));
    return a2::JobOutcome::complete();
  }
  return a2::JobOutcome::complete();
}

}  // namespace

int main() {
  std::signal(SIGTERM, on_signal);
  std::signal(SIGINT, on_signal);

  auto store = a2::memory::open();
  store->append("mail", {job_event("email", {{"to", "ada@example.com"}})});
  store->append("reports", {job_event("report", {{"month", 11}})});
  store->append("imports", {job_event("import", {{"file", "c.csv"}})});

  a2::WorkerOptions options;
  options.concurrency = 4;
  options.lease = 1s;  // Short, to show the renewals (the default is 30 s).
  options.max_failures = 3;
  options.backoff = [](const a2::Job&, std::int64_t failures) { return failures * 100ms; };
  options.poll_interval = 100ms;
  options.on_event = [](const a2::WorkerEvent& e) {
    if (e.kind == a2::WorkerEventKind::failed || e.kind == a2::WorkerEventKind::dead_lettered)
      std::printf("  %s %s/%lld: %s\n", std::string(a2::to_string(e.kind)).c_str(),
                  e.session_id.c_str(), static_cast<long long>(e.index), e.detail.c_str());
  };
  a2::Worker worker(*store, handle, options);

  // The operator's side: find the dead letter, fix its cause, redrive it.
  bool redriven = false;
  while (!g_stop) {
    if (!redriven && worker.stats().dead_lettered == 1) {
      for (const auto& dead : store->dead_letters("imports")) {
        std::printf("dead letter imports/%lld after %lld failures: %s\n",
                    static_cast<long long>(dead.index), static_cast<long long>(dead.failure_count),
                    dead.last_error.value_or("").c_str());
        g_import_fixed = true;
        (void)store->redrive(
            {.session_id = "imports", .index = dead.index, .action = a2::RedriveAction::retry});
      }
      redriven = true;
    }
    if (worker.stats().completed == 3) break;
    std::this_thread::sleep_for(20ms);
  }
  worker.stop(5s);
  auto stats = worker.stats();
  std::printf("stopped: %llu completed, %llu failed, %llu dead-lettered, %llu lease lost\n",
              static_cast<unsigned long long>(stats.completed),
              static_cast<unsigned long long>(stats.failed),
              static_cast<unsigned long long>(stats.dead_lettered),
              static_cast<unsigned long long>(stats.lease_lost));
  return stats.completed == 3 || g_stop ? 0 : 1;
}
