// SPDX-License-Identifier: MIT
// The connection pool both server backends share (src/common/pool.hpp), with a connection type
// of its own: callers that wait are served in arrival order, a waiter past its deadline leaves
// the line, and a broken connection's place goes to the longest waiter.
#include "common/pool.hpp"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;

struct Conn {
  int id = 0;
  bool is_broken = false;
  bool broken() const { return is_broken; }
  bool idle_alive() { return true; }
};

using TestPool = a2::detail::Pool<Conn>;

struct Fixture {
  std::atomic<int> opened{0};
  TestPool pool{"test", 1, 10s, [this](a2::detail::SteadyTime) {
                  auto c = std::make_unique<Conn>();
                  c->id = ++opened;
                  return c;
                }};
  TestPool::Lease take(std::chrono::milliseconds within = 5s) {
    return pool.acquire("take", std::chrono::steady_clock::now() + within);
  }
  // Waits until `n` callers wait (each thread below announces itself by waiting).
  void until_waiting(std::size_t n) {
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (pool.waiting() != n && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(1ms);
    REQUIRE(pool.waiting() == n);
  }
};

}  // namespace

TEST_CASE("a connection given back goes to the caller that waited, not to one that asks later",
          "[pool]") {
  Fixture f;
  std::optional<TestPool::Lease> held(f.take());
  std::atomic<bool> waiter_got{false};
  std::thread waiter([&] {
    auto lease = f.take();
    waiter_got = true;
    std::this_thread::sleep_for(300ms);  // Holds it while the main thread asks again.
  });
  f.until_waiting(1);
  held.reset();  // Given back, and asked for again at once by the same thread:
  CHECK_THROWS_AS(f.take(50ms), a2::Unavailable);  // the waiter has it.
  waiter.join();
  CHECK(waiter_got);
  CHECK(f.take()->id == 1);  // The same connection throughout.
}

TEST_CASE("waiting callers are served in the order they came", "[pool]") {
  Fixture f;
  std::optional<TestPool::Lease> held(f.take());
  std::mutex order_mutex;
  std::vector<int> order;
  std::vector<std::thread> waiters;
  for (int i = 1; i <= 4; ++i) {
    waiters.emplace_back([&, i] {
      auto lease = f.take();
      std::lock_guard lock(order_mutex);
      order.push_back(i);
    });
    f.until_waiting(static_cast<std::size_t>(i));
  }
  held.reset();
  for (auto& t : waiters) t.join();
  CHECK(order == std::vector<int>{1, 2, 3, 4});
  CHECK(f.pool.waiting() == 0);
}

TEST_CASE("a waiter past its deadline leaves the line and the next one is served", "[pool]") {
  Fixture f;
  std::optional<TestPool::Lease> held(f.take());
  std::atomic<bool> first_timed_out{false};
  std::thread first([&] {
    try {
      (void)f.take(100ms);
    } catch (const a2::Unavailable& e) {
      first_timed_out = std::string(e.what()).find("became free in time") != std::string::npos;
    }
  });
  f.until_waiting(1);
  std::atomic<int> second_got{0};
  std::thread second([&] { second_got = f.take()->id; });
  f.until_waiting(2);
  first.join();
  CHECK(first_timed_out);
  CHECK(f.pool.waiting() == 1);  // Only the second is left in line.
  held.reset();
  second.join();
  CHECK(second_got == 1);
  CHECK(f.pool.waiting() == 0);
}

TEST_CASE("a broken connection given back lets the longest waiter open a new one", "[pool]") {
  Fixture f;
  std::optional<TestPool::Lease> held(f.take());
  std::atomic<int> got{0};
  std::thread waiter([&] { got = f.take()->id; });
  f.until_waiting(1);
  (*held)->is_broken = true;
  held.reset();  // Dropped: its place goes to the waiter, which connects.
  waiter.join();
  CHECK(got == 2);
  CHECK(f.opened == 2);
}

TEST_CASE("closing the pool fails the callers that wait", "[pool]") {
  Fixture f;
  std::optional<TestPool::Lease> held(f.take());
  std::atomic<bool> failed{false};
  std::thread waiter([&] {
    try {
      (void)f.take(10s);
    } catch (const a2::Unavailable& e) {
      failed = std::string(e.what()).find("closed") != std::string::npos;
    }
  });
  f.until_waiting(1);
  const auto start = std::chrono::steady_clock::now();
  f.pool.close();
  waiter.join();
  CHECK(failed);
  CHECK(std::chrono::steady_clock::now() - start < 5s);
  CHECK(f.pool.waiting() == 0);
}
