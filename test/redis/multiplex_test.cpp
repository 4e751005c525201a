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

// How far past its timeout a call may end on this (busy, shared) machine.
constexpr auto kMargin = 750ms;

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

// The clients connected to the server (the raw client included).
long long clients(Raw& raw) {
  auto list = raw.get({"CLIENT", "LIST", "TYPE", "normal"}).value_or("");
  return static_cast<long long>(std::count(list.begin(), list.end(), '\n'));
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

TEST_CASE("writes queued behind a write in flight go to the server in one write",
          "[redis][multiplex][S216]") {
  a2::test::RedisServer server;
  auto options = options_on(server);
  options.write_connections = 1;
  auto store = a2::redis::open(options);
  (void)store->append("s", {ev()});  // The write connection is open.
  Raw raw(server.port());
  const long long reads_before = info_counter(raw, "total_reads_processed");
  server.pause();
  constexpr int kWriters = 8;
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < kWriters; ++t) {
    threads.emplace_back([&] {
      try {
        (void)store->append("s", {ev()});
        ++ok;
      } catch (const std::exception& e) {
        FAIL_CHECK(e.what());
      }
    });
    // The first writer sends its own request and waits for the stopped server; the others queue.
    std::this_thread::sleep_for(t == 0 ? 200ms : 20ms);  // (Room for a slow sanitizer build.)
  }
  std::this_thread::sleep_for(200ms);
  server.resume();
  for (auto& th : threads) th.join();
  CHECK(ok == kWriters);
  // The first writer's request, then the seven queued ones in one batch, then this INFO.
  CHECK(info_counter(raw, "total_reads_processed") - reads_before <= 3);
  CHECK(store->read("s").size() == static_cast<std::size_t>(kWriters + 1));
}

TEST_CASE("a write queued past pool_acquire_timeout fails with nothing sent",
          "[redis][multiplex][deadline][S216]") {
  a2::test::RedisServer server;
  auto options = options_on(server);
  options.write_connections = 1;
  options.command_timeout = 3000ms;
  options.pool_acquire_timeout = 300ms;
  auto store = a2::redis::open(options);
  (void)store->append("s", {ev()});
  server.pause();
  ResumeAndJoin holder{server, std::thread([&] {
                         try {
                           (void)store->append("s", {ev()});  // Holds the one write connection.
                         } catch (const Unavailable&) {
                         }
                       })};
  std::this_thread::sleep_for(100ms);
  const auto start = std::chrono::steady_clock::now();
  try {
    (void)store->append("s", {ev()});
    FAIL("the append was answered by a stopped server");
  } catch (const Unavailable& e) {
    INFO(e.what());
    CHECK_FALSE(e.outcome_unknown());
    CHECK(std::string(e.what()).find("nothing was sent") != std::string::npos);
  }
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK(took >= 250ms);
  CHECK(took <= 300ms + kMargin);
  server.resume();
  holder.thread.join();
  // The held append ran once the server continued (it was sent); the queued one never did.
  CHECK(store->read("s").size() == 2);
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
  options.write_connections = 1;
  options.command_timeout = 2000ms;
  auto store = a2::redis::open(options);
  (void)store->append("s", {ev()});
  server.pause();
  struct Resume {
    a2::test::RedisServer& server;
    ~Resume() { server.resume(); }
  } resume{server};
  std::vector<std::thread> threads;
  std::vector<std::string> errors(4);
  std::vector<int> unknown(4, 0);  // Not vector<bool>: each thread writes its own element.
  std::vector<std::chrono::steady_clock::time_point> ended(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      try {
        (void)store->append("s", {ev()});
      } catch (const Unavailable& e) {
        errors[t] = e.what();
        unknown[t] = e.outcome_unknown() ? 1 : 0;
      }
      ended[t] = std::chrono::steady_clock::now();
    });
    // The first writer must be sending before the others queue (room for a sanitizer build).
    std::this_thread::sleep_for(t == 0 ? 200ms : 50ms);
  }
  std::this_thread::sleep_for(100ms);
  const auto closed_at = std::chrono::steady_clock::now();
  store->close();
  for (auto& th : threads) th.join();
  // The first writer sent its request (outcome unknown by its deadline); the three queued behind
  // it failed when the store closed, with nothing sent.
  CHECK(unknown[0] == 1);
  for (int t = 1; t < 4; ++t) {
    INFO("writer " << t << ": " << errors[t]);
    CHECK(errors[t].find("closed") != std::string::npos);
    CHECK(unknown[t] == 0);
    CHECK(ended[t] - closed_at <= kMargin);
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
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&] {
      try {
        (void)store->append("s", {ev()});
        ++ok;
      } catch (const std::exception& e) {
        FAIL_CHECK(e.what());
      }
    });
  for (auto& th : threads) th.join();
  CHECK(ok == 8);
  CHECK(store->read("s").size() == 16);
}

}  // namespace
}  // namespace a2::redis_test
