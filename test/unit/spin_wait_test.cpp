// SPDX-License-Identifier: MIT
// The spin wait of both server backends (src/common/spin_wait.hpp, docs/semantics.md#S241 and
// #S242) on pipes: it returns as soon as its descriptor is readable, stops at its budget or at
// its deadline, one thread of the process spins at a time, and a store whose spins keep running
// out pauses them.
#include "common/spin_wait.hpp"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

namespace {

using namespace std::chrono_literals;
using a2::detail::spin_counts;
using a2::detail::spin_until_readable;
using a2::detail::SpinPacer;
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

// A deadline far enough for every case, near enough that a spin ignoring its budget fails the
// case soon.
Clock::time_point far() { return Clock::now() + 60s; }

// One wait of a store with spin_wait `budget` that has not spun before.
bool spin_once(int fd, std::chrono::microseconds budget, Clock::time_point deadline) {
  SpinPacer pacer(budget);
  return spin_until_readable(fd, pacer, deadline);
}

}  // namespace

TEST_CASE("a spin returns at once when its descriptor is readable", "[spin_wait][S241]") {
  Pipe p;
  p.put();
  const auto before = spin_counts();
  const auto start = Clock::now();
  CHECK(spin_once(p.read_end(), 5000ms, far()));
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
  CHECK_FALSE(spin_once(p.read_end(), 30ms, far()));
  auto took = Clock::now() - start;
  CHECK(took >= 30ms);
  CHECK(took < 2000ms);
  start = Clock::now();
  CHECK_FALSE(spin_once(p.read_end(), 10000ms, start + 30ms));
  took = Clock::now() - start;
  CHECK(took >= 30ms);
  CHECK(took < 2000ms);  // Not the budget's 10 s.
  const auto after = spin_counts();
  CHECK(after.spins == before.spins + 2);
  CHECK(after.answered == before.answered);
  // A budget of 0 does nothing, not even count.
  CHECK_FALSE(spin_once(p.read_end(), 0us, far()));
  CHECK(spin_counts().spins == after.spins);
}

TEST_CASE("a spin ends when its descriptor becomes readable meanwhile", "[spin_wait][S241]") {
  Pipe p;
  std::thread writer([&] {
    std::this_thread::sleep_for(50ms);
    p.put();
  });
  const auto start = Clock::now();
  const bool readable = spin_once(p.read_end(), 10000ms, far());
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
  std::thread spinner([&] { first_readable = spin_once(first.read_end(), 10000ms, far()); });
  const auto waited_from = Clock::now();
  while (!a2::detail::spin_in_progress() && Clock::now() - waited_from < 10s)
    std::this_thread::yield();
  REQUIRE(a2::detail::spin_in_progress());
  const auto before = spin_counts();
  const auto start = Clock::now();
  CHECK_FALSE(spin_once(second.read_end(), 10000ms, far()));
  CHECK(Clock::now() - start < 1000ms);  // Declined at once, not spun for 10 s.
  const auto after = spin_counts();
  CHECK(after.declined == before.declined + 1);
  CHECK(after.spins == before.spins);
  first.put();
  spinner.join();
  CHECK(first_readable);
  CHECK_FALSE(a2::detail::spin_in_progress());
}

TEST_CASE("a store whose spins keep running out pauses them; the first spin after decides",
          "[spin_wait][S242]") {
  Pipe p;
  // Three misses in a row pause the store's spins for 300 ms.
  SpinPacer pacer(200ms, 3, 300ms);
  auto before = spin_counts();
  for (int i = 0; i < 3; ++i) CHECK_FALSE(spin_until_readable(p.read_end(), pacer, far()));
  CHECK(spin_counts().spins == before.spins + 3);
  CHECK(pacer.paused(Clock::now()));
  // Paused: the next wait returns at once without spinning.
  before = spin_counts();
  auto start = Clock::now();
  CHECK_FALSE(spin_until_readable(p.read_end(), pacer, far()));
  CHECK(Clock::now() - start < 150ms);
  auto after = spin_counts();
  CHECK(after.spins == before.spins);
  CHECK(after.paused == before.paused + 1);
  // After the pause one spin runs; running out, it pauses the store again at once.
  std::this_thread::sleep_for(400ms);
  CHECK_FALSE(pacer.paused(Clock::now()));
  before = spin_counts();
  CHECK_FALSE(spin_until_readable(p.read_end(), pacer, far()));
  CHECK_FALSE(spin_until_readable(p.read_end(), pacer, far()));
  after = spin_counts();
  CHECK(after.spins == before.spins + 1);
  CHECK(after.paused == before.paused + 1);
  // After the next pause a reply within the budget resumes spinning: the misses count anew, so
  // two more misses leave the store spinning and the third pauses it.
  std::this_thread::sleep_for(400ms);
  std::thread writer([&] {
    std::this_thread::sleep_for(20ms);
    p.put();
  });
  const bool readable = spin_until_readable(p.read_end(), pacer, far());
  writer.join();  // Before any assertion here: Catch2's assertions are one thread's at a time.
  CHECK(readable);
  char byte = 0;
  REQUIRE(::read(p.read_end(), &byte, 1) == 1);
  before = spin_counts();
  CHECK_FALSE(spin_until_readable(p.read_end(), pacer, far()));
  CHECK_FALSE(spin_until_readable(p.read_end(), pacer, far()));
  CHECK_FALSE(pacer.paused(Clock::now()));
  CHECK_FALSE(spin_until_readable(p.read_end(), pacer, far()));
  CHECK(pacer.paused(Clock::now()));
  after = spin_counts();
  CHECK(after.spins == before.spins + 3);
  CHECK(after.answered == before.answered);
}

TEST_CASE("a reply already there at the first poll counts as answered", "[spin_wait][S242]") {
  Pipe p;
  SpinPacer pacer(1ms, 2, 60s);  // Two misses in a row pause it for a minute.
  CHECK_FALSE(spin_until_readable(p.read_end(), pacer, far()));
  p.put();
  CHECK(spin_until_readable(p.read_end(), pacer, far()));  // Readable before it polled.
  char byte = 0;
  REQUIRE(::read(p.read_end(), &byte, 1) == 1);
  CHECK_FALSE(spin_until_readable(p.read_end(), pacer, far()));  // The misses counted anew.
  CHECK_FALSE(pacer.paused(Clock::now()));
  CHECK_FALSE(spin_until_readable(p.read_end(), pacer, far()));  // The second in a row.
  CHECK(pacer.paused(Clock::now()));
}

TEST_CASE("a spin cut short by its deadline or by another call does not count as a miss",
          "[spin_wait][S242]") {
  Pipe p;
  SpinPacer pacer(5000ms, 1, 60s);  // One miss would pause the store for a minute.
  // The deadline comes before the budget's end.
  const auto start = Clock::now();
  CHECK_FALSE(spin_until_readable(p.read_end(), pacer, start + 20ms));
  CHECK(Clock::now() - start < 2000ms);
  CHECK_FALSE(pacer.paused(Clock::now()));
  // Another call of a spinning store starts while this one spins.
  bool readable = true;
  std::thread spinner([&] {
    const a2::detail::SpinCallScope call(true);
    readable = spin_until_readable(p.read_end(), pacer, far());
  });
  const auto waited_from = Clock::now();
  while (!a2::detail::spin_in_progress() && Clock::now() - waited_from < 10s)
    std::this_thread::yield();
  REQUIRE(a2::detail::spin_in_progress());
  {
    const a2::detail::SpinCallScope other(true);
    spinner.join();
  }
  CHECK_FALSE(readable);
  CHECK(Clock::now() - waited_from < 2000ms);  // Cut short, not spun for 5 s.
  CHECK_FALSE(pacer.paused(Clock::now()));
  // A spin that runs out its budget is a miss: this pacer then pauses.
  SpinPacer short_pacer(1ms, 1, 60s);
  CHECK_FALSE(spin_until_readable(p.read_end(), short_pacer, far()));
  CHECK(short_pacer.paused(Clock::now()));
}

TEST_CASE("a store's pause is 500 times its spin_wait, 100 ms to 1 s", "[spin_wait][S242]") {
  using a2::detail::spin_pause_for;
  CHECK(spin_pause_for(1us) == 100ms);
  CHECK(spin_pause_for(200us) == 100ms);
  CHECK(spin_pause_for(1000us) == 500ms);
  CHECK(spin_pause_for(2000us) == 1000ms);
  CHECK(spin_pause_for(a2::detail::kMaxSpinWait) == 1000ms);
}
