// SPDX-License-Identifier: MIT
// The spin wait of both server backends (src/common/spin_wait.hpp, docs/semantics.md#S241) on
// pipes: it returns as soon as its descriptor is readable, stops at its budget or at its
// deadline, and one thread of the process spins at a time.
#include "common/spin_wait.hpp"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

namespace {

using namespace std::chrono_literals;
using a2::detail::spin_counts;
using a2::detail::spin_until_readable;
using Clock = std::chrono::steady_clock;

struct Pipe {
  int fd[2] = {-1, -1};
  Pipe() { REQUIRE(::pipe(fd) == 0); }
  ~Pipe() {
    ::close(fd[0]);
    ::close(fd[1]);
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  int read_end() const { return fd[0]; }
  void put() const { REQUIRE(::write(fd[1], "x", 1) == 1); }
};

// Far enough for every case, near enough that a spin ignoring its budget fails the case soon.
const auto kFar = Clock::now() + 60s;

}  // namespace

TEST_CASE("a spin returns at once when its descriptor is readable", "[spin_wait][S241]") {
  Pipe p;
  p.put();
  const auto before = spin_counts();
  const auto start = Clock::now();
  CHECK(spin_until_readable(p.read_end(), 5000ms, kFar));
  CHECK(Clock::now() - start < 1000ms);
  const auto after = spin_counts();
  CHECK(after.spins == before.spins + 1);
  CHECK(after.answered == before.answered + 1);
}

TEST_CASE("a spin stops at its budget, or at its deadline when that comes first",
          "[spin_wait][S241]") {
  Pipe p;
  const auto before = spin_counts();
  auto start = Clock::now();
  CHECK_FALSE(spin_until_readable(p.read_end(), 30ms, kFar));
  auto took = Clock::now() - start;
  CHECK(took >= 30ms);
  CHECK(took < 2000ms);
  start = Clock::now();
  CHECK_FALSE(spin_until_readable(p.read_end(), 10000ms, start + 30ms));
  took = Clock::now() - start;
  CHECK(took >= 30ms);
  CHECK(took < 2000ms);  // Not the budget's 10 s.
  const auto after = spin_counts();
  CHECK(after.spins == before.spins + 2);
  CHECK(after.answered == before.answered);
  // A budget of 0 does nothing, not even count.
  CHECK_FALSE(spin_until_readable(p.read_end(), 0us, kFar));
  CHECK(spin_counts().spins == after.spins);
}

TEST_CASE("a spin ends when its descriptor becomes readable meanwhile", "[spin_wait][S241]") {
  Pipe p;
  std::thread writer([&] {
    std::this_thread::sleep_for(50ms);
    p.put();
  });
  const auto start = Clock::now();
  const bool readable = spin_until_readable(p.read_end(), 10000ms, kFar);
  const auto took = Clock::now() - start;
  writer.join();
  CHECK(readable);
  CHECK(took >= 40ms);
  CHECK(took < 5000ms);
}

TEST_CASE("while one thread spins, another thread's wait does not spin", "[spin_wait][S241]") {
  Pipe first;
  Pipe second;
  bool first_readable = false;
  std::thread spinner(
      [&] { first_readable = spin_until_readable(first.read_end(), 10000ms, kFar); });
  const auto waited_from = Clock::now();
  while (!a2::detail::spin_in_progress() && Clock::now() - waited_from < 10s)
    std::this_thread::yield();
  REQUIRE(a2::detail::spin_in_progress());
  const auto before = spin_counts();
  const auto start = Clock::now();
  CHECK_FALSE(spin_until_readable(second.read_end(), 10000ms, kFar));
  CHECK(Clock::now() - start < 1000ms);  // Declined at once, not spun for 10 s.
  const auto after = spin_counts();
  CHECK(after.declined == before.declined + 1);
  CHECK(after.spins == before.spins);
  first.put();
  spinner.join();
  CHECK(first_readable);
  CHECK_FALSE(a2::detail::spin_in_progress());
}
