// SPDX-License-Identifier: MIT
#pragma once

// Shared pieces of the benchmark programs: a latency recorder (p50/p99), a runner for N client
// threads (a fixed number of operations or a fixed time), markdown table printing, running an
// external command, and small formatting helpers.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <iomanip>
#include <iostream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

namespace a2::bench {

using SteadyClock = std::chrono::steady_clock;

// Latencies of one measured block and its wall time. Not thread-safe; the runner gives each
// thread its own recorder and merges them.
class LatencyRecorder {
 public:
  void add(std::int64_t ns) {
    samples_.push_back(ns);
    sorted_ = false;
  }
  void merge(const LatencyRecorder& other) {
    samples_.insert(samples_.end(), other.samples_.begin(), other.samples_.end());
    sorted_ = false;
  }
  std::size_t count() const { return samples_.size(); }
  // The q-quantile (0..1) in microseconds, nearest rank; 0 when empty.
  double quantile_us(double q) {
    if (samples_.empty()) return 0;
    if (!sorted_) {
      std::sort(samples_.begin(), samples_.end());
      sorted_ = true;
    }
    auto rank = static_cast<std::size_t>(q * static_cast<double>(samples_.size()));
    if (rank >= samples_.size()) rank = samples_.size() - 1;
    return static_cast<double>(samples_[rank]) / 1000.0;
  }
  double p50_us() { return quantile_us(0.50); }
  double p99_us() { return quantile_us(0.99); }

 private:
  std::vector<std::int64_t> samples_;
  bool sorted_ = true;
};

// One measured block: operations, wall seconds, latencies. Blocks of the same workload run in
// several rounds add up with merge().
struct Measurement {
  std::int64_t ops = 0;
  double seconds = 0;
  LatencyRecorder latency;

  double ops_per_s() const { return seconds > 0 ? static_cast<double>(ops) / seconds : 0; }
  void merge(const Measurement& other) {
    ops += other.ops;
    seconds += other.seconds;
    latency.merge(other.latency);
  }
};

// The CPU time every process of the machine has used so far (user, nice, system, irq and
// softirq of /proc/stat's first line), in seconds: the benchmark, its servers and anything else.
// Divided by a block's wall time it says how many of the machine's cores the block kept busy.
// 0 where /proc/stat cannot be read.
inline double machine_busy_seconds() {
  std::FILE* f = std::fopen("/proc/stat", "r");
  if (f == nullptr) return 0;
  unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0;
  const int n = std::fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu", &user, &nice, &system,
                            &idle, &iowait, &irq, &softirq);
  std::fclose(f);
  if (n != 7) return 0;
  const long ticks = ::sysconf(_SC_CLK_TCK);
  return ticks > 0 ? static_cast<double>(user + nice + system + irq + softirq) /
                         static_cast<double>(ticks)
                   : 0;
}

// How long a block runs: every thread does at most max_ops_per_thread operations and stops
// at the deadline (whichever comes first); every thread does at least one operation.
struct Budget {
  std::chrono::milliseconds duration{2000};
  std::int64_t max_ops_per_thread = INT64_MAX;
};

// Runs fn(thread, i) on `threads` threads, all released together, timing each call.
// fn may throw: the first exception is rethrown here after every thread has stopped.
inline Measurement run_threads(int threads, Budget budget,
                               const std::function<void(int, std::int64_t)>& fn) {
  std::vector<LatencyRecorder> recorders(static_cast<std::size_t>(threads));
  std::vector<std::int64_t> counts(static_cast<std::size_t>(threads), 0);
  std::mutex mutex;
  std::condition_variable cv;
  int ready = 0;
  bool go = false;
  std::atomic<bool> stop{false};
  std::exception_ptr error;
  SteadyClock::time_point start;
  SteadyClock::time_point deadline;

  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      {
        std::unique_lock lock(mutex);
        ++ready;
        cv.notify_all();
        cv.wait(lock, [&] { return go; });
      }
      auto& rec = recorders[static_cast<std::size_t>(t)];
      std::int64_t i = 0;
      try {
        while (i < budget.max_ops_per_thread && !stop.load(std::memory_order_relaxed)) {
          if (i > 0 && SteadyClock::now() >= deadline) break;
          auto t0 = SteadyClock::now();
          fn(t, i);
          auto t1 = SteadyClock::now();
          rec.add(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
          ++i;
        }
      } catch (...) {
        std::lock_guard lock(mutex);
        if (!error) error = std::current_exception();
        stop.store(true);
      }
      counts[static_cast<std::size_t>(t)] = i;
    });
  }
  {
    std::unique_lock lock(mutex);
    cv.wait(lock, [&] { return ready == threads; });
    start = SteadyClock::now();
    deadline = start + budget.duration;
    go = true;
  }
  cv.notify_all();
  for (auto& th : pool) th.join();
  auto end = SteadyClock::now();
  if (error) std::rethrow_exception(error);

  Measurement m;
  m.seconds = std::chrono::duration<double>(end - start).count();
  for (std::size_t t = 0; t < recorders.size(); ++t) {
    m.ops += counts[t];
    m.latency.merge(recorders[t]);
  }
  return m;
}

// Fixed-precision number text.
inline std::string fmt(double value, int precision = 1) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(precision) << value;
  return out.str();
}

// value / base as a percentage text ("83.1%"); "n/a" when base is 0.
inline std::string percent(double value, double base) {
  if (base <= 0) return "n/a";
  return fmt(100.0 * value / base, 1) + "%";
}

// A markdown table printed to stdout.
class Table {
 public:
  explicit Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(std::ostream& out = std::cout) const {
    print_row(out, headers_);
    out << '|';
    for (std::size_t i = 0; i < headers_.size(); ++i) out << (i == 0 ? " --- |" : " ---: |");
    out << '\n';
    for (const auto& r : rows_) print_row(out, r);
    out << '\n' << std::flush;
  }

 private:
  static void print_row(std::ostream& out, const std::vector<std::string>& row) {
    out << '|';
    for (const auto& cell : row) out << ' ' << cell << " |";
    out << '\n';
  }
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

// Runs a shell command and returns its stdout; throws if it exits non-zero.
inline std::string capture(const std::string& command) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) throw std::runtime_error("cannot run: " + command);
  std::string out;
  char buffer[4096];
  std::size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  int status = ::pclose(pipe);
  if (status != 0)
    throw std::runtime_error("command failed (status " + std::to_string(status) +
                             "): " + command + "\n" + out);
  return out;
}

// Single-quotes a word for /bin/sh.
inline std::string shell_quote(const std::string& word) {
  std::string out = "'";
  for (char c : word) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

// Merges a run of one external benchmark command (pgbench, redis-benchmark; every run of the same
// number of requests) into the `runs` merged so far: `rate` becomes that of all the requests over
// all the runs' time (a harmonic mean of the runs' rates), `figure` the mean of a per-run figure
// (an average latency, a median).
inline void merge_run(double& rate, double& figure, int& runs, double run_rate, double run_figure) {
  rate = runs == 0 ? run_rate : (runs + 1) / (runs / rate + 1 / run_rate);
  figure = (figure * runs + run_figure) / (runs + 1);
  ++runs;
}

// Progress notes go to stderr so stdout stays the report.
inline void note(const std::string& text) { std::cerr << "[bench] " << text << std::endl; }

// Command-line options shared by both programs.
struct Args {
  std::string server;  // --url / --connection: use this server instead of starting one.
  double scale = 1.0;  // --scale F: multiplies every duration (a quick smoke run: 0.1).

  static Args parse(int argc, char** argv, const std::string& server_flag) {
    Args a;
    for (int i = 1; i < argc; ++i) {
      std::string arg = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw std::runtime_error(arg + " needs a value");
        return argv[++i];
      };
      if (arg == server_flag)
        a.server = value();
      else if (arg == "--scale")
        a.scale = std::stod(value());
      else
        throw std::runtime_error("unknown argument " + arg + " (use " + server_flag +
                                 " <value>, --scale <factor>)");
    }
    return a;
  }
  std::chrono::milliseconds ms(std::int64_t base) const {
    return std::chrono::milliseconds(
        std::max<std::int64_t>(50, static_cast<std::int64_t>(static_cast<double>(base) * scale)));
  }
};

}  // namespace a2::bench
