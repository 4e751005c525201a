// SPDX-License-Identifier: MIT
// docs/semantics.md#concurrency-and-lost-acknowledgement-scenarios: concurrency and lost
// acknowledgements (scenarios 131-141; 136 and 137 are Redis-only and live with the Redis tests).
// Threads share one store; Catch2 assertions run on the main thread only, after the threads joined.

#include <atomic>
#include <catch2/catch.hpp>
#include <functional>
#include <latch>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "support/lifecycle.hpp"
#include "support/support.hpp"

namespace a2::conformance {
namespace {

// Runs every function on its own thread, released together; REQUIREs that none threw.
void run_concurrently(std::vector<std::function<void()>> fns) {
  std::latch start(static_cast<std::ptrdiff_t>(fns.size()));
  std::mutex mutex;
  std::vector<std::string> errors;
  std::vector<std::thread> threads;
  for (auto& fn : fns) {
    threads.emplace_back([&, fn] {
      start.arrive_and_wait();
      try {
        fn();
      } catch (const std::exception& e) {
        std::lock_guard lock(mutex);
        errors.emplace_back(e.what());
      }
    });
  }
  for (auto& t : threads) t.join();
  std::string all;
  for (const auto& e : errors) all += e + "; ";
  INFO("threads threw: " << all);
  REQUIRE(errors.empty());
}

TEST_CASE("append from 8 threads assigns every index exactly once", "[append][S131]") {
  auto f = fresh();
  constexpr int kThreads = 8, kPerThread = 100;
  std::vector<std::vector<std::pair<std::string, std::int64_t>>> got(kThreads);
  std::vector<std::function<void()>> fns;
  for (int k = 0; k < kThreads; ++k) {
    fns.emplace_back([&, k] {
      for (int j = 0; j < kPerThread; ++j) {
        auto id = "t" + std::to_string(k) + "-" + std::to_string(j);
        auto r = f->append("s", {ev_id(id)});
        if (r.events.size() != 1) throw std::runtime_error("append returned no single row");
        got[k].emplace_back(id, r.events[0].index);
      }
    });
  }
  run_concurrently(std::move(fns));

  std::map<std::int64_t, std::string> by_index;
  for (const auto& per : got) {
    std::int64_t last = 0;
    for (const auto& [id, index] : per) {
      REQUIRE(index > last);  // One thread's appends are ordered.
      last = index;
      REQUIRE(by_index.emplace(index, id).second);
    }
  }
  REQUIRE(by_index.size() == 800);
  REQUIRE(by_index.begin()->first == 1);
  REQUIRE(by_index.rbegin()->first == 800);

  auto rows = f->read("s");
  REQUIRE(indexes_of(rows) == range(1, 800));
  for (const auto& row : rows) REQUIRE(row.id == by_index.at(row.index));
  // Owner records: a replay of each id returns its own row.
  for (std::int64_t i = 1; i <= 800; ++i) {
    auto replay = f->append("s", {ev_id(by_index.at(i))});
    REQUIRE(replay.events.size() == 1);
    REQUIRE(replay.events[0].index == i);
  }
  REQUIRE(indexes_of(f->read("s")) == range(1, 800));
}

TEST_CASE("claim_available from 4 threads claims every event exactly once", "[claim][S132]") {
  auto f = fresh();
  (void)f->append("s", evs_with_ids("e", 200));
  constexpr int kThreads = 4;
  std::vector<std::vector<StoredEvent>> got(kThreads);
  std::vector<std::function<void()>> fns;
  for (int k = 0; k < kThreads; ++k) {
    fns.emplace_back([&, k] {
      while (true) {
        auto r = claim(*f, "s", "w" + std::to_string(k));
        if (r.verdict != ClaimVerdict::claimed) break;
        for (auto& e : r.events) got[k].push_back(std::move(e));
      }
    });
  }
  run_concurrently(std::move(fns));

  std::map<std::int64_t, std::string> holder_of;
  for (int k = 0; k < kThreads; ++k) {
    for (const auto& e : got[k]) {
      REQUIRE(e.attempt_count == 1);
      REQUIRE(e.claim_holder == std::optional<std::string>("w" + std::to_string(k)));
      REQUIRE(holder_of.emplace(e.index, *e.claim_holder).second);  // Never claimed twice.
    }
  }
  REQUIRE(holder_of.size() == 200);
  for (const auto& row : f->read("s")) {
    REQUIRE(row.attempt_count == 1);
    REQUIRE(row.claim_holder == std::optional<std::string>(holder_of.at(row.index)));
  }
  REQUIRE(claim(*f, "s", "w9").verdict == ClaimVerdict::busy);
}

TEST_CASE("complete_attempt racing clear either finishes below the marker or is superseded",
          "[complete][clear][S133]") {
  auto f = fresh();
  constexpr int kRounds = 10, kEvents = 20;
  for (int round = 0; round < kRounds; ++round) {
    const std::string s = "r" + std::to_string(round);
    (void)f->append(s, evs_with_ids(s + "e", kEvents));
    REQUIRE(claim(*f, s).events.size() == kEvents);

    std::vector<CompleteResult> results(kEvents);
    ClearResult cleared;
    run_concurrently({[&] {
                        for (int i = 1; i <= kEvents; ++i)
                          results[i - 1] =
                              complete(*f, s, i, 1, {child(s + "k" + std::to_string(i))});
                      },
                      [&] {
                        std::this_thread::sleep_for(std::chrono::microseconds(200 * round));
                        cleared = clear(*f, s);
                      }});
    INFO("round " << round);
    REQUIRE(cleared.cleared);
    const auto marker = cleared.clear_index;
    int completed = 0;
    for (int i = 1; i <= kEvents; ++i) {
      if (results[i - 1].verdict == CompleteVerdict::completed) {
        ++completed;
        REQUIRE(results[i - 1].events.size() == 1);
        REQUIRE(results[i - 1].events[0].index < marker);
        REQUIRE(results[i - 1].events[0].cause == std::optional<EventCause>(EventCause{i, 1}));
      } else {
        REQUIRE(results[i - 1].events.empty());
      }
    }
    // Completions commit in order, so they are a prefix; their children precede the marker.
    REQUIRE(marker == kEvents + completed + 1);
    auto rows = f->read(s);
    REQUIRE(indexes_of(rows) == std::vector<std::int64_t>{marker});
    REQUIRE_FALSE(has_pending(*f, s));
    REQUIRE(claim(*f, s).verdict == ClaimVerdict::settled);
  }
}

TEST_CASE("claim_available racing clear never returns an old event after the clear returned",
          "[claim][clear][S134]") {
  auto f = fresh();
  constexpr int kRounds = 5;
  for (int round = 0; round < kRounds; ++round) {
    const std::string s = "r" + std::to_string(round);
    (void)f->append(s, evs_with_ids(s + "e", 10));
    struct Claimed {
      bool after_clear;
      std::int64_t index;
      std::int64_t attempt;
    };
    std::vector<Claimed> claimed;
    std::atomic<bool> clear_returned{false};
    std::atomic<int> iterations{0};
    ClearResult cleared;
    run_concurrently({[&] {
                        int after = 0;
                        for (int j = 0; after < 20; ++j) {
                          bool was_cleared = clear_returned.load();
                          if (was_cleared) ++after;
                          (void)f->append(s, {ev_id(s + "n" + std::to_string(j))});
                          auto r = claim(*f, s);
                          for (const auto& e : r.events)
                            claimed.push_back({was_cleared, e.index, e.attempt_count});
                          iterations.fetch_add(1);
                        }
                      },
                      [&] {
                        while (iterations.load() < 3 + round) std::this_thread::yield();
                        cleared = clear(*f, s);
                        clear_returned.store(true);
                      }});
    INFO("round " << round);
    const auto marker = cleared.clear_index;
    REQUIRE(marker > 10);
    int old = 0;
    for (const auto& c : claimed) {
      if (c.after_clear) REQUIRE(c.index > marker);
      REQUIRE(c.index != marker);
      if (c.index < marker) {
        ++old;
        REQUIRE(complete(*f, s, c.index, c.attempt).verdict == CompleteVerdict::superseded);
      } else {
        REQUIRE(complete(*f, s, c.index, c.attempt).verdict == CompleteVerdict::completed);
      }
    }
    REQUIRE(old >= 10);  // The first claims took the 10 old events before the clear.
    REQUIRE_FALSE(has_pending(*f, s));
  }
}

TEST_CASE("append with a cause racing a re-claim of the parent succeeds exactly before it",
          "[append][claim][S135]") {
  auto f = fresh();
  (void)f->append("s", {ev_id("p")});
  REQUIRE(claim(*f).verdict == ClaimVerdict::claimed);
  f.clock->advance(kTtl + 1);  // The lease lapsed: anyone may re-claim.

  constexpr int kAppends = 200;
  std::vector<std::string> outcome(kAppends);  // "ok" or the error code.
  std::vector<std::int64_t> index(kAppends, 0);
  std::atomic<int> done{0};
  ClaimResult reclaimed;
  run_concurrently({[&] {
                      for (int j = 0; j < kAppends; ++j) {
                        try {
                          auto r = f->append(
                              "s", {settled(caused(ev_id("c" + std::to_string(j)), 1, 1))});
                          outcome[j] = "ok";
                          index[j] = r.events.at(0).index;
                        } catch (const Error& e) {
                          outcome[j] = std::string(to_string(e.code()));
                        }
                        done.fetch_add(1);
                      }
                    },
                    [&] {
                      while (done.load() < 5) std::this_thread::yield();
                      reclaimed = claim(*f, "s", "w2");
                    }});
  REQUIRE(reclaimed.verdict == ClaimVerdict::claimed);
  REQUIRE(indexes_of(reclaimed.events) == std::vector<std::int64_t>{1});
  REQUIRE(reclaimed.events[0].attempt_count == 2);

  int ok = 0;
  bool superseded_seen = false;
  for (int j = 0; j < kAppends; ++j) {
    INFO("append " << j);
    if (outcome[j] == "ok") {
      REQUIRE_FALSE(superseded_seen);  // Successes form a prefix.
      ++ok;
      REQUIRE(index[j] == ok + 1);
    } else {
      REQUIRE(outcome[j] == "superseded_attempt");
      superseded_seen = true;
    }
  }
  REQUIRE(ok >= 5);
  auto rows = f->read("s");
  REQUIRE(rows.size() == static_cast<std::size_t>(ok) + 1);
  for (std::size_t i = 1; i < rows.size(); ++i)
    REQUIRE(rows[i].cause == std::optional<EventCause>(EventCause{1, 1}));
  require_error(ErrorCode::superseded_attempt,
                [&] { (void)f->append("s", {caused(ev_id("late"), 1, 1)}); });
  REQUIRE(f->append("s", {caused(ev_id("current"), 1, 2)}).events.at(0).index == ok + 2);
}

TEST_CASE("put_snapshots racing clear never exposes a checkpoint below the new marker",
          "[put_snapshots][clear][S138]") {
  auto f = fresh();
  constexpr int kRounds = 6;
  for (int round = 0; round < kRounds; ++round) {
    const std::string s = "r" + std::to_string(round);
    (void)f->append(s, evs_with_ids(s + "e", 5));
    std::atomic<int> puts{0};
    ClearResult cleared;
    run_concurrently({[&] {
                        for (int j = 0; j < 40; ++j) {
                          auto head =
                              f->append(s, {ev_id(s + "n" + std::to_string(j))}).events.at(0).index;
                          // A head at the new event and a history checkpoint pinned by it.
                          f->put_snapshots(s, "r",
                                           {{head - 1, Json{{"at", head - 1}}, {head}},
                                            {head, Json{{"at", head}}, {}}});
                          puts.fetch_add(1);
                        }
                      },
                      [&] {
                        while (puts.load() < 2 * round + 1) std::this_thread::yield();
                        cleared = clear(*f, s);
                      }});
    INFO("round " << round);
    const auto marker = cleared.clear_index;
    REQUIRE(marker > 5);
    auto check = [&](const StateResult& st) {
      REQUIRE(st.clear_index == std::optional<std::int64_t>(marker));
      if (st.head_index) REQUIRE(*st.head_index >= marker);
      if (st.snapshot) {
        REQUIRE(st.snapshot->index >= marker);
        REQUIRE(st.snapshot->state == Json{{"at", st.snapshot->index}});
      }
      for (const auto& e : st.events) REQUIRE(e.index >= marker);
    };
    check(f->read_state(s, "r"));
    for (std::int64_t cap = 0; cap <= marker + 45; ++cap)
      check(f->read_state(s, "r", {.through_index = std::nullopt, .snapshot_through_index = cap}));
    auto many = f->read_states(
        "r",
        {{.session_id = s, .through_index = std::nullopt, .snapshot_through_index = marker - 1}});
    REQUIRE(many.size() == 1);
    check(many[0]);
  }
}

// The steps of scenario 139; each retry-safe step runs `reps` times. Returns every result.
Json lost_ack_run(Fixture& f, int reps) {
  Json out = Json::array();
  auto repeat = [&](const char* step, auto&& op) {
    Json first;
    for (int k = 0; k < reps; ++k) {
      Json r = op();
      if (k == 0) first = r;
      INFO("step " << step << ", repetition " << k + 1);
      REQUIRE(r == first);  // A retry answers like the original.
    }
    out.push_back({{"step", step}, {"result", first}});
  };
  auto rows_json = [](const std::vector<StoredEvent>& rows) {
    Json j = Json::array();
    for (const auto& r : rows) j.push_back(to_json(r));
    return j;
  };

  repeat("append", [&] {
    auto r = f->append("s", {ev_id("a", "t", {{"n", 1}}), in_lane(ev_id("b"), "L"), ev_id("c"),
                             in_lane(ev_id("d"), "L")});
    return Json{{"events", rows_json(r.events)}, {"has_pending", r.has_pending}};
  });
  f.clock->advance(10);
  auto c = claim(*f);
  REQUIRE(indexes_of(c.events) == std::vector<std::int64_t>{1, 2, 3});
  f.clock->advance(10);
  repeat("complete", [&] {
    auto r = complete(*f, "s", 1, 1, {child("k1"), in_lane_child("k2", "L")});
    return Json{{"verdict", std::string(to_string(r.verdict))}, {"events", rows_json(r.events)}};
  });
  repeat("complete without children", [&] {
    auto r = complete(*f, "s", 2, 1);
    return Json{{"verdict", std::string(to_string(r.verdict))}, {"events", rows_json(r.events)}};
  });
  f.clock->advance(10);
  repeat("fail", [&] {
    auto r = fail(*f, "s", 3, 1, 3, "first");
    return Json{{"verdict", std::string(to_string(r.verdict))}, {"failures", r.failure_count}};
  });
  auto again = claim(*f);
  REQUIRE(indexes_of(again.events) == std::vector<std::int64_t>{3, 4, 5});
  f.clock->advance(10);
  repeat("fail to a dead letter", [&] {
    auto r = fail(*f, "s", 3, 2, 2, "second");
    return Json{{"verdict", std::string(to_string(r.verdict))}, {"failures", r.failure_count}};
  });
  f.clock->advance(10);
  repeat("clear", [&] {
    auto r = clear(*f, "s", 6);
    return Json{{"cleared", r.cleared}, {"index", r.index}, {"clear_index", r.clear_index}};
  });
  f.clock->advance(10);
  repeat("append after the clear", [&] {
    auto r = f->append("s", {ev_id("a"), ev_id("e")});
    return Json{{"events", rows_json(r.events)}, {"has_pending", r.has_pending}};
  });
  return out;
}

TEST_CASE(
    "append, complete, fail and clear retried after a lost acknowledgement leave the "
    "state of a single call",
    "[append][complete][fail][clear][S139]") {
  auto once = fresh();
  auto twice = fresh();
  auto results_once = lost_ack_run(once, 1);
  auto results_twice = lost_ack_run(twice, 2);
  REQUIRE(results_twice == results_once);
  REQUIRE(observe(*twice) == observe(*once));
  REQUIRE(twice->read("s").size() == 3);  // The marker 7 and the two appends after it.
  REQUIRE(indexes_of(twice->read("s")) == std::vector<std::int64_t>{7, 8, 9});
}

TEST_CASE("redrive skip racing appends in the same lane leaves exactly one claimable lane event",
          "[redrive][append][S140]") {
  auto f = fresh();
  constexpr int kRounds = 10;
  for (int round = 0; round < kRounds; ++round) {
    const std::string s = "r" + std::to_string(round);
    (void)f->append(s, {in_lane(ev_id(s + "head"), "L")});
    REQUIRE(claim(*f, s).verdict == ClaimVerdict::claimed);
    REQUIRE(fail(*f, s, 1, 1, 1).verdict == FailVerdict::dead_lettered);
    RedriveResult skipped;
    run_concurrently({[&] {
                        std::this_thread::sleep_for(std::chrono::microseconds(100 * round));
                        skipped = redrive(*f, s, 1, RedriveAction::skip);
                      },
                      [&] {
                        for (int j = 0; j < 5; ++j)
                          (void)f->append(s, {in_lane(ev_id(s + "x" + std::to_string(j)), "L")});
                      }});
    INFO("round " << round);
    REQUIRE(skipped.redriven);
    auto c = claim(*f, s);
    REQUIRE(c.verdict == ClaimVerdict::claimed);
    REQUIRE(indexes_of(c.events) == std::vector<std::int64_t>{2});
    REQUIRE(complete(*f, s, 2, 1).verdict == CompleteVerdict::completed);
    REQUIRE(indexes_of(claim(*f, s).events) == std::vector<std::int64_t>{3});
  }
}

TEST_CASE("complete_attempt and fail_attempt of the same attempt racing: exactly one wins",
          "[complete][fail][S141]") {
  auto f = fresh();
  constexpr int kRounds = 20;
  int completions = 0, failures = 0;
  for (int round = 0; round < kRounds; ++round) {
    const std::string s = "r" + std::to_string(round);
    (void)f->append(s, {ev_id(s + "e")});
    REQUIRE(claim(*f, s).verdict == ClaimVerdict::claimed);
    CompleteResult completed;
    FailResult failed;
    run_concurrently({[&] { completed = complete(*f, s, 1, 1, {child(s + "k")}); },
                      [&] { failed = fail(*f, s, 1, 1); }});
    INFO("round " << round << ": complete " << to_string(completed.verdict) << ", fail "
                  << to_string(failed.verdict));
    auto r = row(*f, s, 1);
    if (completed.verdict == CompleteVerdict::completed) {
      ++completions;
      REQUIRE(failed.verdict == FailVerdict::superseded);
      REQUIRE(r.processed_by_attempt == std::optional<std::int64_t>(1));
      REQUIRE(r.failure_count == 0);
      REQUIRE(indexes_of(f->read(s)) == std::vector<std::int64_t>{1, 2});
    } else {
      ++failures;
      REQUIRE(failed.verdict == FailVerdict::failed);
      REQUIRE(failed.failure_count == 1);
      REQUIRE_FALSE(r.processed_at.has_value());
      REQUIRE(r.failure_count == 1);
      REQUIRE(indexes_of(f->read(s)) == std::vector<std::int64_t>{1});
      // The loser's retry is still superseded; the winner's retry is idempotent.
      REQUIRE(complete(*f, s, 1, 1, {child(s + "k")}).verdict == CompleteVerdict::superseded);
      REQUIRE(fail(*f, s, 1, 1).verdict == FailVerdict::failed);
    }
  }
  REQUIRE(completions + failures == kRounds);
}

}  // namespace
}  // namespace a2::conformance
