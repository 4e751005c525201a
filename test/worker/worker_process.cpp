// SPDX-License-Identifier: MIT
// a2_worker_process: one worker process for the cross-process tests (worker_servers_test.cpp).
// It opens a Redis or Postgres store, runs an a2::Worker with a handler chosen by argument and
// logs every handler start and end and every worker event, one line each, to a log file. It runs
// until SIGTERM or SIGINT (then stop(grace), exit 0) or, with --exit-when-idle, until the store's
// work index has been empty and the worker idle for that long.
//
//   a2_worker_process --backend redis|postgres --url <url or connection string>
//       --prefix <key prefix or schema> --log <path> [--handler <h>] [--concurrency N]
//       [--prefetch N] [--lease ms] [--max-failures N] [--backoff ms] [--sessions a,b,...]
//       [--grace ms] [--exit-when-idle ms] [--holder id]
//
// Handlers (each completes with one settled child "done" carrying session, index, attempt, pid):
//   noop          completes at once
//   sleep:<ms>    sleeps, then completes (returns early when its stop token is requested)
//   fail-always   throws
//   hang          waits for its stop token, then throws (so stop() releases it)
//   lane-record   sleeps 2 ms, then completes (the start line names the lane)
//
// Log lines: `<kind> <pid> <session> <index> <attempt> <store_ms> <wall_us> <detail...>`, session
// "-" when none. Kinds: ready (detail: holder), start (detail: lane or -), end (detail: ok, threw
// or stopped), the worker events (claimed, completed, failed, dead_lettered, lease_lost,
// released, snoozed, store_error; detail: the event's text), stopping, exit (detail: stats).
// store_ms is the store's clock (Store::now_ms), wall_us CLOCK_REALTIME in microseconds (the
// same clock in every process of the machine). Each line is one write(2) to an O_APPEND file.
#include <fcntl.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "a2/postgres.hpp"
#include "a2/redis.hpp"
#include "a2/worker.hpp"

namespace {

using namespace std::chrono_literals;

struct Args {
  std::string backend, url, prefix, log, handler = "noop", holder;
  int concurrency = 1;
  std::optional<int> prefetch;
  std::optional<std::int64_t> lease_ms, backoff_ms;
  std::int64_t max_failures = 3;
  std::vector<std::string> sessions;
  std::int64_t grace_ms = 10000;
  std::int64_t exit_when_idle_ms = 0;
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "a2_worker_process: " << why << "\n";
  std::exit(2);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(s);
  while (std::getline(in, item, sep))
    if (!item.empty()) out.push_back(item);
  return out;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; i += 2) {
    const std::string key = argv[i];
    if (i + 1 >= argc) usage("missing value for " + key);
    const std::string v = argv[i + 1];
    if (key == "--backend")
      a.backend = v;
    else if (key == "--url")
      a.url = v;
    else if (key == "--prefix")
      a.prefix = v;
    else if (key == "--log")
      a.log = v;
    else if (key == "--handler")
      a.handler = v;
    else if (key == "--holder")
      a.holder = v;
    else if (key == "--concurrency")
      a.concurrency = std::stoi(v);
    else if (key == "--prefetch")
      a.prefetch = std::stoi(v);
    else if (key == "--lease")
      a.lease_ms = std::stoll(v);
    else if (key == "--backoff")
      a.backoff_ms = std::stoll(v);
    else if (key == "--max-failures")
      a.max_failures = std::stoll(v);
    else if (key == "--sessions")
      a.sessions = split(v, ',');
    else if (key == "--grace")
      a.grace_ms = std::stoll(v);
    else if (key == "--exit-when-idle")
      a.exit_when_idle_ms = std::stoll(v);
    else
      usage("unknown option " + key);
  }
  if (a.backend != "redis" && a.backend != "postgres") usage("--backend redis|postgres");
  if (a.url.empty() || a.prefix.empty() || a.log.empty()) usage("--url, --prefix, --log needed");
  return a;
}

std::int64_t wall_us() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

// The event log: one line per write(2), so lines of concurrent threads never interleave and a
// SIGKILL loses at most the line being formatted.
class Log {
 public:
  Log(const std::string& path, a2::Store& store) : store_(store) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0) throw std::runtime_error("cannot open the log " + path);
  }
  ~Log() { ::close(fd_); }
  Log(const Log&) = delete;
  Log& operator=(const Log&) = delete;

  void line(std::string_view kind, std::string_view session, std::int64_t index,
            std::int64_t attempt, std::string_view detail = {}) {
    std::string text;
    text.reserve(96 + session.size() + detail.size());
    text.append(kind).append(" ").append(std::to_string(::getpid())).append(" ");
    text.append(session.empty() ? std::string_view("-") : session).append(" ");
    text.append(std::to_string(index)).append(" ").append(std::to_string(attempt)).append(" ");
    text.append(std::to_string(store_.now_ms())).append(" ").append(std::to_string(wall_us()));
    text.append(" ");
    for (char c : detail) text.push_back(c == '\n' ? ' ' : c);
    text.push_back('\n');
    std::size_t done = 0;
    while (done < text.size()) {
      ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
      if (n <= 0) return;
      done += static_cast<std::size_t>(n);
    }
  }

 private:
  a2::Store& store_;
  int fd_ = -1;
};

// Sleeps `d` or until the stop token is requested; true if it slept the whole time.
bool sleep_for(const std::stop_token& token, std::chrono::milliseconds d) {
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock lock(m);
  return !cv.wait_for(lock, token, d, [] { return false; });
}

a2::JobHandler make_handler(const std::string& name, Log& log) {
  std::chrono::milliseconds sleep{0};
  bool fail = false, hang = false;
  if (name == "noop") {
  } else if (name.rfind("sleep:", 0) == 0) {
    sleep = std::chrono::milliseconds(std::stoll(name.substr(6)));
  } else if (name == "fail-always") {
    fail = true;
  } else if (name == "hang") {
    hang = true;
  } else if (name == "lane-record") {
    sleep = 2ms;
  } else {
    usage("unknown handler " + name);
  }
  return [&log, sleep, fail, hang](const a2::Job& job, a2::JobContext& ctx) -> a2::JobOutcome {
    log.line("start", job.session_id, job.index, job.attempt, job.event.lane.value_or("-"));
    if (fail) {
      log.line("end", job.session_id, job.index, job.attempt, "threw");
      throw std::runtime_error("fail-always");
    }
    if (hang) {
      std::mutex m;
      std::condition_variable_any cv;
      std::unique_lock lock(m);
      cv.wait(lock, ctx.stop_token(), [] { return false; });
      log.line("end", job.session_id, job.index, job.attempt, "stopped");
      throw std::runtime_error("hang: stopped");
    }
    if (sleep.count() > 0 && !sleep_for(ctx.stop_token(), sleep))
      log.line("end", job.session_id, job.index, job.attempt, "stopped");
    else
      log.line("end", job.session_id, job.index, job.attempt, "ok");
    a2::Json payload{{"session", job.session_id},
                     {"index", job.index},
                     {"attempt", job.attempt},
                     {"pid", static_cast<std::int64_t>(::getpid())}};
    return a2::JobOutcome::complete(
        {{std::nullopt, "done", std::move(payload), std::nullopt, /*settled=*/true}});
  };
}

std::unique_ptr<a2::Store> open_store(const Args& a) {
  if (a.backend == "redis") {
    a2::redis::Options o;
    o.url = a.url;
    o.key_prefix = a.prefix;
    return a2::redis::open(o);
  }
  a2::postgres::Options o;
  o.connection = a.url;
  o.schema = a.prefix;
  return a2::postgres::open(o);
}

std::string describe(const a2::WorkerStats& s) {
  std::ostringstream o;
  o << "claimed=" << s.claimed << " started=" << s.started << " completed=" << s.completed
    << " failed=" << s.failed << " dead_lettered=" << s.dead_lettered
    << " lease_lost=" << s.lease_lost << " released=" << s.released
    << " store_errors=" << s.store_errors << " store_calls=" << s.store_calls;
  return o.str();
}

int run(const Args& a) {
  // SIGTERM and SIGINT are taken by sigtimedwait below; blocked before any thread starts, so
  // every thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto store = open_store(a);
  Log log(a.log, *store);

  a2::WorkerOptions options;
  options.sessions = a.sessions;
  options.concurrency = a.concurrency;
  if (a.prefetch) options.prefetch = *a.prefetch;
  if (!a.holder.empty()) options.holder = a.holder;
  if (a.lease_ms) options.lease = std::chrono::milliseconds(*a.lease_ms);
  options.max_failures = a.max_failures;
  if (a.backoff_ms) {
    const auto fixed = std::chrono::milliseconds(*a.backoff_ms);
    options.backoff = [fixed](const a2::Job&, std::int64_t) { return fixed; };
  }
  options.on_event = [&log](const a2::WorkerEvent& e) {
    log.line(a2::to_string(e.kind), e.session_id, e.index, e.attempt, e.detail);
  };

  auto worker = std::make_unique<a2::Worker>(*store, make_handler(a.handler, log), options);
  log.line("ready", "", 0, 0, worker->holder());

  bool was_idle = false;
  auto idle_since = std::chrono::steady_clock::now();
  for (;;) {
    timespec wait{0, 50'000'000};
    const int sig = sigtimedwait(&signals, nullptr, &wait);
    if (sig == SIGTERM || sig == SIGINT) break;
    if (a.exit_when_idle_ms <= 0) continue;
    // Idle: nothing running or ready here, and the store's work index is empty (every job
    // settled or dead-lettered; a session still in flight elsewhere keeps its entry).
    const auto stats = worker->stats();
    bool idle = stats.running == 0 && stats.ready == 0;
    if (idle) {
      try {
        idle = store->find_work({.after = std::nullopt, .due_by_ms = std::nullopt, .limit = 1})
                   .sessions.empty();
      } catch (const a2::Error&) {
        idle = false;  // The server is away: not idle, wait for it.
      }
    }
    const auto now = std::chrono::steady_clock::now();
    if (!idle) {
      was_idle = false;
    } else if (!was_idle) {
      was_idle = true;
      idle_since = now;
    } else if (now - idle_since >= std::chrono::milliseconds(a.exit_when_idle_ms)) {
      break;
    }
  }
  log.line("stopping", "", 0, 0);
  worker->stop(std::chrono::milliseconds(a.grace_ms));
  const std::string stats = describe(worker->stats());
  worker.reset();
  log.line("exit", "", 0, 0, stats);
  store->close();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::cerr << "a2_worker_process: " << e.what() << "\n";
    return 1;
  }
}
