// SPDX-License-Identifier: MIT
// Multiplexed writes (src/redis/multiplex.hpp, docs/redis-layout.md#multiplexed-writes,
// docs/semantics.md#S215 to S219): many
// threads' writes over the store's write connections land densely with one round trip each,
// requests queued behind a batch go in one write, a write queued past pool_acquire_timeout fails
// with nothing sent, close() fails the queued writes at once, and after CLIENT KILL of the write
// connections the next writes succeed. Default options unless a case says otherwise.
#include <atomic>
#include <latch>
#include <set>
#include <thread>

#include "support.hpp"
#include "support/recorder.hpp"

namespace a2::redis_test {
namespace {
using namespace a2::conformance;
using namespace std::chrono_literals;

a2::redis::Options options_on(const a2::test::RedisServer& server) {
  auto o = options_for(server.url(), unique_prefix("mux"));
  o.clock = std::make_shared<ManualClock>(kT0);
  return o;
}

long long info_counter(Raw& raw, const std::string& name) {
  const auto info = raw.get({"INFO", "stats"}).value_or("");
  const auto at = info.find(name + ":");
  REQUIRE(at != std::string::npos);
  return std::stoll(info.substr(at + name.size() + 1));
}

TEST_CASE("writes of many threads land densely, one round trip each, on the write connections",
          "[redis][multiplex][S215]") {
  const std::size_t write_connections = GENERATE(std::size_t{2}, std::size_t{1}, std::size_t{0});
  INFO("write_connections " << write_connections);
  a2::test::RedisServer server;
  auto options = options_on(server);
  auto recorder = std::make_shared<Recorder>();
  options.observe.observer = recorder;
  options.write_connections = write_connections;
  auto store = a2::redis::open(options);
  // The scripts' first use loads them (NOSCRIPT, SCRIPT LOAD, EVALSHA: three round trips).
  (void)store->append("warm", {ev()});
  auto warm = store->claim_available({.session_id = "warm",
                                      .holder = "w",
                                      .ttl_ms = 60000,
                                      .expires_at_ms = std::nullopt,
                                      .exclude_indexes = {}});
  (void)store->complete_attempt(
      {.session_id = "warm", .index = 1, .attempt = warm.events.at(0).attempt_count, .events = {}});
  recorder->clear();
  constexpr int kThreads = 16;
  constexpr int kEach = 40;
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  std::vector<std::vector<std::int64_t>> shared_indexes(kThreads);
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      try {
        for (int i = 0; i < kEach; ++i) {
          // One session per thread, claimed and completed, and one session all threads share.
          auto own = store->append("own-" + std::to_string(t), {ev()});
          if (own.events.at(0).index != 2 * i + 1) ++failures;
          auto claim = store->claim_available({.session_id = "own-" + std::to_string(t),
                                               .holder = "w",
                                               .ttl_ms = 60000,
                                               .expires_at_ms = std::nullopt,
                                               .exclude_indexes = {}});
          if (claim.verdict != ClaimVerdict::claimed) ++failures;
          auto done = store->complete_attempt({.session_id = "own-" + std::to_string(t),
                                               .index = claim.events.at(0).index,
                                               .attempt = claim.events.at(0).attempt_count,
                                               .events = {ChildEvent{.id = std::nullopt,
                                                                     .type = "child",
                                                                     .payload = nullptr,
                                                                     .lane = std::nullopt,
                                                                     .settled = true}}});
          if (done.verdict != CompleteVerdict::completed) ++failures;
          shared_indexes[t].push_back(store->append("shared", {ev()}).events.at(0).index);
        }
      } catch (const std::exception& e) {
        ++failures;
        FAIL_CHECK(e.what());
      }
    });
  for (auto& th : threads) th.join();
  REQUIRE(failures == 0);
  std::set<std::int64_t> all;
  for (const auto& v : shared_indexes) {
    CHECK(std::is_sorted(v.begin(), v.end()));  // A thread's writes keep their order.
    all.insert(v.begin(), v.end());
  }
  CHECK(all.size() == static_cast<std::size_t>(kThreads * kEach));
  CHECK(*all.begin() == 1);
  CHECK(*all.rbegin() == kThreads * kEach);
  CHECK(store->read("shared").size() == static_cast<std::size_t>(kThreads * kEach));
  for (int t = 0; t < kThreads; ++t)
    CHECK(store->read("own-" + std::to_string(t)).size() == static_cast<std::size_t>(2 * kEach));
  std::size_t writes = 0;
  for (const auto& op : recorder->operations()) {
    INFO(op.operation << " " << op.outcome);
    CHECK_FALSE(op.error);
    if (op.operation == "append" || op.operation == "claim_available" ||
        op.operation == "complete_attempt") {
      ++writes;
      CHECK(op.round_trips == 1);
    }
  }
  CHECK(writes == static_cast<std::size_t>(kThreads * kEach * 4));
  Raw raw(server.port());
  // The pool (reads, and writes with write_connections 0) and the write connections.
  CHECK(clients(raw) <= static_cast<long long>(options.pool_size + write_connections) + 1);
}

// The default number of write connections.
const int kWriteConnections = static_cast<int>(a2::redis::Options{}.write_connections);

// Threads that each append one event to session "s", started one after another: the first
// `holders` 200 ms apart (time to start sending, even in a sanitizer build), the others `gap`
// apart. With the server stopped, the first of them send on the idle write connections (calls
// take the connections in turn) and the rest queue behind them.
class Appenders {
 public:
  struct Outcome {
    bool ok = false;
    bool unknown = false;  // Failed with outcome_unknown().
    std::string error;
    std::chrono::steady_clock::time_point ended;
  };

  Appenders(Store& store, int count, int holders, std::chrono::milliseconds gap)
      : outcomes_(static_cast<std::size_t>(count)) {
    for (int t = 0; t < count; ++t) {
      threads_.emplace_back([this, &store, t] {
        auto& o = outcomes_[static_cast<std::size_t>(t)];
        try {
          (void)store.append("s", {ev()});
          o.ok = true;
        } catch (const Unavailable& e) {
          o.error = e.what();
          o.unknown = e.outcome_unknown();
        }
        o.ended = std::chrono::steady_clock::now();
      });
      std::this_thread::sleep_for(t < holders ? 200ms : gap);
    }
  }
  ~Appenders() { join(); }
  Appenders(const Appenders&) = delete;
  Appenders& operator=(const Appenders&) = delete;

  const std::vector<Outcome>& join() {
    for (auto& th : threads_)
      if (th.joinable()) th.join();
    return outcomes_;
  }

 private:
  std::vector<Outcome> outcomes_;  // Each thread writes its own element.
  std::vector<std::thread> threads_;
};

TEST_CASE("writes queued behind a write in flight go to the server in one write",
          "[redis][multiplex][S216]") {
  a2::test::RedisServer server;
  auto store = a2::redis::open(options_on(server));
  for (int i = 0; i < kWriteConnections; ++i) (void)store->append("s", {ev()});  // All open.
  Raw raw(server.port());
  const long long reads_before = info_counter(raw, "total_reads_processed");
  server.pause();
  constexpr int kWriters = 10;
  int ok = 0;
  {
    Appenders writers(*store, kWriters, kWriteConnections, 20ms);
    std::this_thread::sleep_for(200ms);
    server.resume();
    for (const auto& o : writers.join()) {
      CHECK(o.error == "");
      ok += o.ok ? 1 : 0;
    }
  }
  CHECK(ok == kWriters);
  // Per write connection: the request its first writer sent itself, then the ones queued behind
  // it in one batch; then this INFO.
  CHECK(info_counter(raw, "total_reads_processed") - reads_before <= 2 * kWriteConnections + 1);
  CHECK(store->read("s").size() == static_cast<std::size_t>(kWriters + kWriteConnections));
}

TEST_CASE("a write queued past pool_acquire_timeout fails with nothing sent",
          "[redis][multiplex][deadline][S216]") {
  a2::test::RedisServer server;
  auto options = options_on(server);
  options.command_timeout = 3000ms;
  options.pool_acquire_timeout = 300ms;
  auto store = a2::redis::open(options);
  (void)store->append("s", {ev()});
  server.pause();
  // Appends that hold every write connection; however the case leaves, the server continues
  // first (`resume` is destroyed first), then they are joined.
  Appenders holders(*store, kWriteConnections, kWriteConnections, 0ms);
  ResumeOnExit resume{server};
  // Queued behind appends the stopped server does not answer, it fails unsent.
  const auto took = a2::conformance::require_unsent([&] { (void)store->append("s", {ev()}); });
  CHECK(took >= 250ms);
  CHECK(took <= 300ms + kMargin);
  server.resume();
  for (const auto& o : holders.join()) CHECK(o.ok);
  // The held appends ran once the server continued (they were sent); the queued one never did.
  CHECK(store->read("s").size() == static_cast<std::size_t>(1 + kWriteConnections));
}

TEST_CASE("a write sent to a server that stops answering fails by its deadline, outcome unknown",
          "[redis][multiplex][deadline][S217]") {
  a2::test::RedisServer server;
  auto options = options_on(server);
  options.command_timeout = 1000ms;
  auto store = a2::redis::open(options);
  (void)store->append("s", {ev()});
  server.pause();
  constexpr int kWriters = 12;
  std::vector<std::thread> threads;
  std::vector<int> outcome(kWriters, 0);  // 1: nothing sent, 2: outcome unknown.
  std::vector<std::chrono::steady_clock::duration> took(kWriters);
  for (int t = 0; t < kWriters; ++t)
    threads.emplace_back([&, t] {
      const auto started = std::chrono::steady_clock::now();
      try {
        (void)store->append("s", {ev()});
      } catch (const Unavailable& e) {
        outcome[t] = e.outcome_unknown() ? 2 : 1;
      }
      took[t] = std::chrono::steady_clock::now() - started;
    });
  for (auto& th : threads) th.join();
  int unknown = 0;
  for (int t = 0; t < kWriters; ++t) {
    INFO("writer " << t);
    CHECK(outcome[t] != 0);
    CHECK(took[t] <= options.command_timeout + kMargin);
    if (outcome[t] == 2) ++unknown;
  }
  CHECK(unknown >= 1);  // At least the writes each channel sent itself.
  server.resume();
  // What was sent may run once the server continues (on connections the store has dropped, read
  // by the server in its own time): wait until the log stops growing. Nothing else ran, and the
  // store works.
  int before = 0;
  for (int stable = 0, round = 0; stable < 4 && round < 100; ++round) {
    const auto now = static_cast<int>(store->read("s").size());
    stable = now == before ? stable + 1 : 0;
    before = now;
    std::this_thread::sleep_for(50ms);
  }
  CHECK(before >= 1);
  CHECK(before <= 1 + unknown);
  CHECK(store->append("s", {ev()}).events.at(0).index == before + 1);
}

TEST_CASE("close fails the queued writes at once and later writes with Unavailable",
          "[redis][multiplex][S218]") {
  a2::test::RedisServer server;
  auto options = options_on(server);
  options.command_timeout = 2000ms;
  auto store = a2::redis::open(options);
  (void)store->append("s", {ev()});
  server.pause();
  const int writers_count = kWriteConnections + 3;
  Appenders writers(*store, writers_count, kWriteConnections, 50ms);
  ResumeOnExit resume{server};
  std::this_thread::sleep_for(100ms);
  const auto closed_at = std::chrono::steady_clock::now();
  store->close();
  const auto& outcomes = writers.join();
  // The first writers sent their requests on the idle write connections (outcome unknown by
  // their deadline); the three queued behind them failed when the store closed, nothing sent.
  for (int t = 0; t < writers_count; ++t) {
    const auto& o = outcomes[static_cast<std::size_t>(t)];
    INFO("writer " << t << ": " << o.error);
    CHECK_FALSE(o.ok);
    if (t < kWriteConnections) {
      CHECK(o.unknown);
    } else {
      CHECK(o.error.find("closed") != std::string::npos);
      CHECK_FALSE(o.unknown);
      CHECK(o.ended - closed_at <= kMargin);
    }
  }
  CHECK_THROWS_AS(store->append("s", {ev()}), Unavailable);
}

TEST_CASE("after CLIENT KILL of the write connections the next writes succeed and log reconnect",
          "[redis][multiplex][O9][S219]") {
  a2::test::RedisServer server;
  auto options = options_on(server);
  auto recorder = std::make_shared<Recorder>();
  options.observe.observer = recorder;
  auto store = a2::redis::open(options);
  // Requests take the channels in turn: two writes open both write connections.
  (void)store->append("s", {ev()});
  (void)store->append("s", {ev()});
  Raw raw(server.port());
  REQUIRE(raw.integer({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"}) >= 2);
  recorder->clear();
  for (int i = 0; i < 6; ++i) CHECK(store->append("s", {ev()}).events.at(0).index == 3 + i);
  int reconnects = 0;
  for (const auto& l : recorder->logs())
    if (l.event == "reconnect") {
      ++reconnects;
      CHECK(l.message.rfind("a2 redis append: connected again", 0) == 0);
    }
  CHECK(reconnects == 2);  // One per write connection.
  // And from many threads at once, after a second kill.
  REQUIRE(raw.integer({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"}) >= 2);
  Appenders writers(*store, 8, 0, 0ms);
  for (const auto& o : writers.join()) {
    CHECK(o.error == "");
    CHECK(o.ok);
  }
  CHECK(store->read("s").size() == 16);
}

}  // namespace
}  // namespace a2::redis_test
