// SPDX-License-Identifier: MIT
#pragma once

// The spin wait scenarios S240-S242 (docs/semantics.md#S240) on a server backend, shared by
// test/redis/spin_wait_test.cpp and test/postgres/spin_wait_test.cpp: each backend says how to
// open its store and how to pause and resume its server. Counts are the process's spin counters
// (src/common/spin_wait.hpp; the tests include src/).

#include <time.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "a2/store.hpp"
#include "common/spin_wait.hpp"
#include "support/recorder.hpp"
#include "support/support.hpp"

namespace a2::conformance::spin_wait {

using namespace std::chrono_literals;

struct StoreSettings {
  std::chrono::microseconds spin_wait{0};
  std::optional<std::chrono::milliseconds> command_timeout{};  // Unset: the backend's default.
  std::shared_ptr<Observer> observer{};
};

struct Backend {
  std::function<std::unique_ptr<Store>(const StoreSettings&)> open;
  std::function<void()> pause;
  std::function<void()> resume;
  // How far past its timeout a call may end on this (busy, shared) machine.
  std::chrono::milliseconds margin{750};
};

// The CPU time the calling thread has used.
inline std::chrono::nanoseconds thread_cpu() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

// Pauses the backend's server for its lifetime (resume() ends the pause sooner).
class PausedServer {
 public:
  explicit PausedServer(const Backend& backend) : backend_(backend) { backend_.pause(); }
  ~PausedServer() { resume(); }
  PausedServer(const PausedServer&) = delete;
  PausedServer& operator=(const PausedServer&) = delete;
  void resume() {
    if (!resumed_) backend_.resume();
    resumed_ = true;
  }

 private:
  const Backend& backend_;
  bool resumed_ = false;
};

// Append, claim, complete (one child) and read on `session`; what each answered and its round
// trips.
struct Cycle {
  std::vector<std::int64_t> indexes;  // Appended, claimed, the child, then every index read.
  std::vector<std::int64_t> round_trips;
  std::vector<std::int64_t> spins;  // Each call's OperationRecord::spins.
};

inline Cycle run_cycle(Store& store, const Recorder& recorder, const std::string& session) {
  Cycle out;
  auto trips = [&] {
    out.round_trips.push_back(recorder.operations().back().round_trips);
    out.spins.push_back(recorder.operations().back().spins);
  };
  out.indexes.push_back(store.append(session, {ev()}).events.at(0).index);
  trips();
  const auto claim = store.claim_available({.session_id = session,
                                            .holder = "w",
                                            .ttl_ms = 60000,
                                            .expires_at_ms = std::nullopt,
                                            .exclude_indexes = {}});
  trips();
  REQUIRE(claim.events.size() == 1);
  out.indexes.push_back(claim.events.at(0).index);
  const auto done = store.complete_attempt({.session_id = session,
                                            .index = claim.events.at(0).index,
                                            .attempt = claim.events.at(0).attempt_count,
                                            .events = {child(session + "-child")}});
  trips();
  REQUIRE(done.events.size() == 1);
  out.indexes.push_back(done.events.at(0).index);
  for (const auto& e : store.read(session)) out.indexes.push_back(e.index);
  trips();
  return out;
}

// S240: calls answer as without the option, in the same round trips, and their waits spin.
inline void calls_spin_and_answer_alike(const Backend& backend) {
  auto spun_recorder = std::make_shared<Recorder>();
  auto plain_recorder = std::make_shared<Recorder>();
  auto spun = backend.open({.spin_wait = a2::detail::kMaxSpinWait, .observer = spun_recorder});
  auto plain = backend.open({.spin_wait = 0us, .observer = plain_recorder});
  // The scripts and statements are loaded and prepared by a first cycle on each.
  (void)run_cycle(*spun, *spun_recorder, "warm");
  (void)run_cycle(*plain, *plain_recorder, "warm");

  const auto before_plain = a2::detail::spin_counts();
  const Cycle without = run_cycle(*plain, *plain_recorder, "s");
  const auto after_plain = a2::detail::spin_counts();
  CHECK(after_plain.spins == before_plain.spins);  // The default never spins.
  CHECK(after_plain.declined == before_plain.declined);

  const Cycle with = run_cycle(*spun, *spun_recorder, "s");
  const auto after = a2::detail::spin_counts();
  CHECK(with.indexes == without.indexes);
  CHECK(with.indexes == std::vector<std::int64_t>{1, 1, 2, 1, 2});
  CHECK(with.round_trips == without.round_trips);
  // Each call's record counts its spins (docs/observe.md#O13); without the option none.
  CHECK(without.spins == std::vector<std::int64_t>{0, 0, 0, 0});
  for (const auto spins : with.spins) CHECK(spins >= 1);
  // Each of the four calls waited for at least one reply, and each wait spun (nothing else of
  // the process spins meanwhile); a reply of a server on this machine comes within 10 ms.
  CHECK(after.spins >= after_plain.spins + 4);
  CHECK(after.answered >= after_plain.answered + 1);
  CHECK(after.declined == after_plain.declined);
}

// S240: a wait whose reply takes longer than spin_wait spins once, then sleeps.
inline void a_late_reply_is_awaited_asleep(const Backend& backend) {
  auto recorder = std::make_shared<Recorder>();
  auto store = backend.open({.spin_wait = a2::detail::kMaxSpinWait, .observer = recorder});
  (void)store->append("s", {ev()});  // A connection is open and the script or statement ready.
  const auto before = a2::detail::spin_counts();
  PausedServer paused(backend);
  std::optional<std::int64_t> index;
  std::chrono::nanoseconds cpu{};
  std::chrono::steady_clock::duration took{};
  std::thread caller([&] {
    const auto cpu_start = thread_cpu();
    const auto start = std::chrono::steady_clock::now();
    try {
      index = store->append("s", {ev()}).events.at(0).index;
    } catch (...) {
    }
    took = std::chrono::steady_clock::now() - start;
    cpu = thread_cpu() - cpu_start;
  });
  std::this_thread::sleep_for(600ms);
  paused.resume();
  caller.join();
  const auto after = a2::detail::spin_counts();
  INFO("took " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms, CPU "
               << std::chrono::duration_cast<std::chrono::milliseconds>(cpu).count() << " ms");
  REQUIRE(index);
  CHECK(*index == 2);
  CHECK(took >= 500ms);
  CHECK(after.spins >= before.spins + 1);
  // At least one spin ended without its reply (the server was paused for longer than 10 ms).
  CHECK(after.spins - before.spins > after.answered - before.answered);
  // It slept after its 10 ms: a thread polling through the pause would have used about 600 ms.
  CHECK(cpu < 200ms);
}

// An append, and a read started 100 ms later, while the server is paused for 300 ms; what each
// answered (index; events read).
struct Overlap {
  std::optional<std::int64_t> appended;
  std::optional<std::size_t> read;
};

inline Overlap overlap_on_paused_server(const Backend& backend, Store& store) {
  PausedServer paused(backend);
  Overlap out;
  std::thread first([&] {
    try {
      out.appended = store.append("s", {ev()}).events.at(0).index;
    } catch (...) {
    }
  });
  std::this_thread::sleep_for(100ms);  // The append waits (the server is paused).
  std::thread second([&] {
    try {
      out.read = store.read("s").size();
    } catch (...) {
    }
  });
  std::this_thread::sleep_for(200ms);
  paused.resume();
  first.join();
  second.join();
  return out;
}

// S241: while a call of the store is in flight, another call's wait does not spin.
inline void overlapping_calls_do_not_spin(const Backend& backend) {
  auto store = backend.open({.spin_wait = a2::detail::kMaxSpinWait});
  (void)store->append("s", {ev()});
  // Once, so that the store holds a connection for each of the two calls (a call that must
  // connect meanwhile waits for the paused server in connecting, not for a reply).
  const Overlap warm = overlap_on_paused_server(backend, *store);
  REQUIRE(warm.appended);
  REQUIRE(warm.read);
  const auto before = a2::detail::spin_counts();
  const Overlap measured = overlap_on_paused_server(backend, *store);
  const auto after = a2::detail::spin_counts();
  REQUIRE(measured.appended);
  CHECK(*measured.appended == 3);
  REQUIRE(measured.read);
  CHECK((*measured.read == 2 || *measured.read == 3));
  // The read's wait found the append in flight (and the append's wait, had it come later, the
  // read), so at least one wait did not spin.
  CHECK(after.declined >= before.declined + 1);
}

// S240: spinning keeps the call's deadline.
inline void a_spinning_call_keeps_its_deadline(const Backend& backend) {
  // The set-up, by the same 100 ms: open() connects by it and the first append may need a
  // connection of its own. On a loaded machine (the CI's two cores running two test programs and
  // their servers) forking a Postgres backend alone can take longer, so the set-up is tried again;
  // what is tested is the call to the paused server below.
  std::unique_ptr<Store> store;
  for (int attempt = 1; !store; ++attempt) {
    try {
      auto s = backend.open({.spin_wait = a2::detail::kMaxSpinWait, .command_timeout = 100ms});
      (void)s->append("s", {ev()});
      store = std::move(s);
    } catch (const Unavailable&) {
      if (attempt == 5) throw;
    }
  }
  const PausedServer paused(backend);
  const auto start = std::chrono::steady_clock::now();
  try {
    (void)store->append("s", {ev()});
    FAIL("the append answered from a paused server");
  } catch (const Unavailable& e) {
    INFO(e.what());
    CHECK(e.outcome_unknown());
  }
  CHECK(std::chrono::steady_clock::now() - start <= 100ms + backend.margin);
}

// S242: a store whose replies keep coming later than its spin_wait pauses its spins; another
// store of the process, whose replies come in time, goes on spinning.
inline void late_replies_pause_the_stores_spins(const Backend& backend) {
  const auto first = a2::detail::spin_counts();  // The store's spins from its open on.
  auto late = backend.open({.spin_wait = 2ms});  // Its pause: 1 s.
  (void)late->append("late", {ev()});  // A connection is open and the script or statement ready.
  // Appends while the server is paused for 30 ms: each wait's spin runs out, until the store's
  // spins pause and an append's wait does not spin.
  std::int64_t next = 2;
  bool pausing = false;
  std::uint64_t spun_before_pause = 0;
  for (int i = 0; i < 30 && !pausing; ++i) {
    const auto before = a2::detail::spin_counts();
    PausedServer paused(backend);
    std::optional<std::int64_t> index;
    std::thread caller([&] {
      try {
        index = late->append("late", {ev()}).events.at(0).index;
      } catch (...) {
      }
    });
    std::this_thread::sleep_for(30ms);
    paused.resume();
    caller.join();
    REQUIRE(index);
    CHECK(*index == next++);
    pausing = a2::detail::spin_counts().paused > before.paused;
    if (!pausing) spun_before_pause = a2::detail::spin_counts().spins - first.spins;
  }
  INFO("spins before the pause: " << spun_before_pause);
  REQUIRE(pausing);
  CHECK(spun_before_pause >= static_cast<std::uint64_t>(a2::detail::kSpinMissesToPause));
  // Paused (1 s): appends to the running server answer as ever, and their waits do not spin.
  auto before = a2::detail::spin_counts();
  for (int i = 0; i < 20; ++i) CHECK(late->append("late", {ev()}).events.at(0).index == next++);
  auto after = a2::detail::spin_counts();
  CHECK(after.spins == before.spins);
  CHECK(after.paused >= before.paused + 20);
  // Another store of the process spins by its own pace.
  auto in_time = backend.open({.spin_wait = a2::detail::kMaxSpinWait});
  (void)in_time->append("in-time", {ev()});
  before = a2::detail::spin_counts();
  for (int i = 0; i < 5; ++i) (void)in_time->append("in-time", {ev()});
  after = a2::detail::spin_counts();
  CHECK(after.spins >= before.spins + 5);
  CHECK(after.answered >= before.answered + 1);
  CHECK(after.paused == before.paused);
}

}  // namespace a2::conformance::spin_wait
