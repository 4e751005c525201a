// SPDX-License-Identifier: MIT
// Fault injection: a persistent redis-server (appendfsync always) is killed with SIGKILL while
// threads write, then restarted on the same port and dir. Operations fail with
// store_unavailable meanwhile; afterwards nothing acknowledged is lost and the retries of
// id-carrying appends and completions are idempotent.
#include <atomic>
#include <map>
#include <mutex>
#include <thread>

#include "support.hpp"

namespace a2::redis_test {
namespace {
using namespace a2::conformance;
using namespace std::chrono_literals;

struct Outcome {
  std::map<std::string, std::int64_t> appended;   // Acknowledged id -> index.
  std::map<std::int64_t, std::string> completed;  // Acknowledged parent index -> child id.
  int unavailable = 0;                            // store_unavailable failures seen.
  std::vector<std::string> wrong;                 // Any other error.
};

TEST_CASE("a server killed mid-load loses nothing acknowledged and retries are idempotent",
          "[redis][fault]") {
  a2::test::RedisServer server(/*persistent=*/true);
  auto clock = std::make_shared<ManualClock>(kT0);
  a2::redis::Options options;
  options.url = server.url();
  options.key_prefix = "fault";
  options.pool_size = 4;
  options.connect_timeout = 500ms;
  options.command_timeout = 3000ms;
  options.clock = clock;
  auto store = a2::redis::open(options);

  constexpr int kThreads = 4;
  std::atomic<bool> stop{false};
  std::vector<Outcome> outcomes(kThreads);
  // Repeats `op` (same arguments) until it succeeds: the caller's retry after a lost ack.
  auto retry = [&](Outcome& out, auto&& op) {
    for (auto deadline = std::chrono::steady_clock::now() + 60s;;) {
      try {
        return op();
      } catch (const Error& e) {
        if (e.code() == ErrorCode::store_unavailable)
          ++out.unavailable;
        else
          out.wrong.push_back(e.what());
        if (e.code() != ErrorCode::store_unavailable || std::chrono::steady_clock::now() > deadline)
          throw;
        std::this_thread::sleep_for(20ms);
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      auto& out = outcomes[t];
      const std::string s = "s" + std::to_string(t);
      try {
        for (int i = 0; !stop.load() || i < 20; ++i) {
          const std::string id = s + "-e" + std::to_string(i);
          auto appended = retry(out, [&] { return store->append(s, {ev_id(id)}); });
          out.appended[id] = appended.events.at(0).index;
          const std::int64_t index = appended.events.at(0).index;
          if (i % 2 == 1) continue;
          // Claim; a lost claim ack shows up as busy, so learn the attempt from the row.
          (void)retry(out, [&] { return claim(*store, s); });
          auto row = retry(out, [&] {
            return store->read(s, {.after_index = index - 1, .through_index = index});
          });
          const std::int64_t attempt = row.at(0).attempt_count;
          const std::string child_id = id + "-child";
          auto done =
              retry(out, [&] { return complete(*store, s, index, attempt, {child(child_id)}); });
          if (done.verdict == CompleteVerdict::completed && done.events.size() == 1 &&
              done.events[0].id == child_id)
            out.completed[index] = child_id;
          else
            out.wrong.push_back("completion of " + id + " was not acknowledged as completed");
        }
      } catch (const std::exception& e) {
        out.wrong.push_back(e.what());
      }
    });

  std::this_thread::sleep_for(400ms);
  server.kill();
  std::this_thread::sleep_for(700ms);
  server.restart();
  std::this_thread::sleep_for(400ms);
  stop.store(true);
  for (auto& th : threads) th.join();

  int unavailable = 0;
  for (int t = 0; t < kThreads; ++t) {
    const auto& out = outcomes[t];
    INFO("thread " << t);
    for (const auto& w : out.wrong) INFO(w);
    CHECK(out.wrong.empty());
    unavailable += out.unavailable;
    const std::string s = "s" + std::to_string(t);
    auto rows = store->read(s);
    // Dense, and every id exactly once.
    std::map<std::string, int> seen;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      CHECK(rows[i].index == static_cast<std::int64_t>(i + 1));
      ++seen[rows[i].id];
    }
    for (const auto& [id, n] : seen) {
      INFO(id);
      CHECK(n == 1);
    }
    // Every acknowledged append is there at its acknowledged index.
    for (const auto& [id, index] : out.appended) {
      INFO(id);
      REQUIRE(index >= 1);
      REQUIRE(index <= static_cast<std::int64_t>(rows.size()));
      CHECK(rows[static_cast<std::size_t>(index - 1)].id == id);
    }
    // Every acknowledged completion is recorded with exactly its child.
    for (const auto& [index, child_id] : out.completed) {
      const auto& parent = rows[static_cast<std::size_t>(index - 1)];
      CHECK(parent.processed_at.has_value());
      CHECK(parent.returned_event_ids == std::optional<std::vector<std::string>>({child_id}));
      CHECK(seen[child_id] == 1);
    }
    CHECK(out.appended.size() >= 20);
  }
  CHECK(unavailable > 0);  // The kill really happened under load.
  store->close();
}

}  // namespace
}  // namespace a2::redis_test
