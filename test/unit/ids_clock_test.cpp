// SPDX-License-Identifier: MIT
// The injectable id sources and clocks (a2/clock.hpp).

#include <chrono>
#include <cstdint>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "a2/clock.hpp"

namespace {

bool lower_hex(const std::string& s) {
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

// Draws `per_thread` ids on each of `threads` threads at once.
std::vector<std::string> draw_concurrently(a2::IdSource& ids, int threads, int per_thread) {
  std::vector<std::vector<std::string>> drawn(static_cast<std::size_t>(threads));
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) drawn[static_cast<std::size_t>(t)].push_back(ids.next_id());
    });
  for (auto& w : workers) w.join();
  std::vector<std::string> all;
  for (const auto& d : drawn) all.insert(all.end(), d.begin(), d.end());
  return all;
}

// 100 ids of 32 lowercase hex digits.
void require_32_lower_hex(a2::IdSource& ids) {
  for (int i = 0; i < 100; ++i) {
    auto id = ids.next_id();
    REQUIRE(id.size() == 32);
    REQUIRE(lower_hex(id));
  }
}

// No id twice among 10,000 drawn on 4 threads at once and 1,000 from a second instance.
template <class Source>
void check_never_repeats() {
  Source ids;
  auto all = draw_concurrently(ids, 4, 2500);
  Source other;
  for (int i = 0; i < 1000; ++i) all.push_back(other.next_id());
  std::set<std::string> distinct(all.begin(), all.end());
  CHECK(all.size() == 11000);
  CHECK(distinct.size() == all.size());
}

}  // namespace

TEST_CASE("RandomIdSource::next_id returns 32 lowercase hex digits", "[ids]") {
  a2::RandomIdSource ids;
  require_32_lower_hex(ids);
}

TEST_CASE("RandomIdSource::next_id never repeats, also across threads and instances", "[ids]") {
  check_never_repeats<a2::RandomIdSource>();
}

TEST_CASE("RandomIdSource::next_id uses all 128 bits", "[ids]") {
  // Every hex position takes more than one value over many ids (no constant or zero half).
  a2::RandomIdSource ids;
  std::vector<std::set<char>> seen(32);
  for (int i = 0; i < 200; ++i) {
    auto id = ids.next_id();
    for (std::size_t p = 0; p < 32; ++p) seen[p].insert(id[p]);
  }
  for (std::size_t p = 0; p < 32; ++p) CHECK(seen[p].size() > 1);
}

TEST_CASE("TimeOrderedIdSource::next_id returns 32 lowercase hex digits", "[ids]") {
  a2::TimeOrderedIdSource ids;
  require_32_lower_hex(ids);
}

TEST_CASE("TimeOrderedIdSource::next_id never repeats, also across threads and instances",
          "[ids]") {
  check_never_repeats<a2::TimeOrderedIdSource>();
}

TEST_CASE("TimeOrderedIdSource::next_id starts with the time it was drawn and sorts by it",
          "[ids]") {
  auto now_ms = [] {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count());
  };
  a2::TimeOrderedIdSource ids;
  const std::uint64_t before = now_ms();
  const std::string first = ids.next_id();
  const std::uint64_t after = now_ms();
  const std::uint64_t stamped = std::stoull(first.substr(0, 12), nullptr, 16);
  CHECK(stamped >= before);
  CHECK(stamped <= after);
  // Drawn at least 2 ms later: sorts after, bytewise.
  std::this_thread::sleep_for(std::chrono::milliseconds(3));
  CHECK(ids.next_id() > first);
  // The other 20 digits are random: every position takes more than one value.
  std::vector<std::set<char>> seen(20);
  for (int i = 0; i < 200; ++i) {
    auto id = ids.next_id();
    for (std::size_t p = 0; p < 20; ++p) seen[p].insert(id[12 + p]);
  }
  for (std::size_t p = 0; p < 20; ++p) CHECK(seen[p].size() > 1);
}

TEST_CASE("SequentialIdSource::next_id counts from 1 after the prefix", "[ids]") {
  SECTION("default prefix g") {
    a2::SequentialIdSource ids;
    CHECK(ids.next_id() == "g1");
    CHECK(ids.next_id() == "g2");
    CHECK(ids.next_id() == "g3");
  }
  SECTION("custom prefix") {
    a2::SequentialIdSource ids("evt-");
    CHECK(ids.next_id() == "evt-1");
    CHECK(ids.next_id() == "evt-2");
  }
  SECTION("each instance counts on its own") {
    a2::SequentialIdSource a;
    a2::SequentialIdSource b;
    CHECK(a.next_id() == "g1");
    CHECK(a.next_id() == "g2");
    CHECK(b.next_id() == "g1");
  }
}

TEST_CASE("SequentialIdSource::next_id hands out each number once across threads", "[ids]") {
  a2::SequentialIdSource ids("s");
  auto all = draw_concurrently(ids, 4, 500);
  std::set<std::string> distinct(all.begin(), all.end());
  CHECK(distinct.size() == 2000);
  for (int n = 1; n <= 2000; ++n) CHECK(distinct.count("s" + std::to_string(n)) == 1);
  CHECK(ids.next_id() == "s2001");
}

TEST_CASE("ManualClock::now_ms moves only when set or advanced", "[clock]") {
  SECTION("default start") {
    a2::ManualClock clock;
    CHECK(clock.now_ms() == 1'000'000);
    CHECK(clock.now_ms() == 1'000'000);
  }
  SECTION("set and advance") {
    a2::ManualClock clock(5);
    CHECK(clock.now_ms() == 5);
    clock.advance(10);
    CHECK(clock.now_ms() == 15);
    clock.set(1'700'000'000'000);
    CHECK(clock.now_ms() == 1'700'000'000'000);
    clock.advance(-1);
    CHECK(clock.now_ms() == 1'699'999'999'999);
  }
  SECTION("advances from many threads add up") {
    a2::ManualClock clock(0);
    std::vector<std::thread> workers;
    for (int t = 0; t < 4; ++t)
      workers.emplace_back([&] {
        for (int i = 0; i < 1000; ++i) clock.advance(1);
      });
    for (auto& w : workers) w.join();
    CHECK(clock.now_ms() == 4000);
  }
  SECTION("usable through the Clock interface") {
    a2::ManualClock manual(42);
    a2::Clock& clock = manual;
    CHECK(clock.now_ms() == 42);
  }
}

TEST_CASE("SystemClock::now_ms is the Unix time in milliseconds", "[clock]") {
  a2::SystemClock clock;
  auto a = clock.now_ms();
  CHECK(a > 1'600'000'000'000);   // After September 2020.
  CHECK(a < 10'000'000'000'000);  // Milliseconds, not microseconds.
}
