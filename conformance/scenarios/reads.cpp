// SPDX-License-Identifier: MIT
// Conformance scenarios 29-39 and 42 (docs/semantics.md#read-scenarios): ranges, paging, chunking,
// the clear boundary, tails, feed pages and frozen bounds. 40 and 41 are Redis-only (test/redis/).

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "harness.hpp"
#include "support/as_json.hpp"
#include "support/claims.hpp"
#include "support/support.hpp"

using namespace a2::conformance;
using a2::ClaimVerdict;
using a2::Json;

namespace {

// n events whose type and payload tell them apart: type "t<i>", payload {"i": i}.
std::vector<a2::NewEvent> numbered(int first, int n) {
  std::vector<a2::NewEvent> out;
  for (int i = first; i < first + n; ++i)
    out.push_back(ev("t" + std::to_string(i), Json{{"i", i}, {"s", "x" + std::to_string(i)}}));
  return out;
}

}  // namespace

TEST_CASE("read and read_history return the rows of a bounded range", "[read][S29]") {
  auto f = a2::conformance::fresh();
  given(*f, numbered(1, 10));
  auto rows = f->read("s", {.after_index = 3, .through_index = 7});
  REQUIRE(indexes_of(rows) == range(4, 7));
  for (const auto& e : rows) {
    CHECK(e.type == "t" + std::to_string(e.index));
    CHECK(e.payload == Json{{"i", e.index}, {"s", "x" + std::to_string(e.index)}});
    CHECK(e.created_at == kT0);
    CHECK(e.session_id == "s");
  }
  auto history = f->read_history("s", {.after_index = 3, .through_index = 7});
  REQUIRE(history.size() == rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i)
    REQUIRE(event_json(history[i]) == event_json(rows[i]));
  auto ranged = f->read_range("s", 3, 7);
  REQUIRE(ranged.size() == rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) REQUIRE(to_json(ranged[i]) == to_json(rows[i]));
}

TEST_CASE("read of an empty or inverted range returns nothing", "[read][S30]") {
  auto f = a2::conformance::fresh();
  given(*f, numbered(1, 10));
  REQUIRE(f->read("s", {.after_index = 5, .through_index = 5}).empty());
  REQUIRE(f->read("s", {.after_index = 6, .through_index = 2}).empty());
  REQUIRE(f->read_history("s", {.after_index = 5, .through_index = 5}).empty());
  REQUIRE(f->read_history("s", {.after_index = 6, .through_index = 2}).empty());
  REQUIRE(f->read_range("s", 6, 2).empty());
}

TEST_CASE("read through an index beyond the head stops at the head", "[read][S31]") {
  auto f = a2::conformance::fresh();
  given(*f, numbered(1, 10));
  REQUIRE(indexes_of(f->read("s", {.after_index = 0, .through_index = 99})) == range(1, 10));
  REQUIRE(indexes_of(f->read_history("s", {.after_index = 0, .through_index = 99})) ==
          range(1, 10));
  REQUIRE(f->read("s", {.after_index = 10, .through_index = std::nullopt}).empty());
}

TEST_CASE("read pages through 600 events without holes", "[read][S32]") {
  auto f = a2::conformance::fresh();
  given(*f, numbered(1, 600));
  auto all = f->read("s");
  REQUIRE(indexes_of(all) == range(1, 600));
  for (const auto& e : all) REQUIRE(e.payload["i"] == e.index);
  REQUIRE(indexes_of(f->read("s", {.after_index = 255, .through_index = 513})) == range(256, 513));
  auto history = f->read_history("s");
  REQUIRE(indexes_of(history) == range(1, 600));
  for (const auto& e : history) REQUIRE(e.type == "t" + std::to_string(e.index));
}

TEST_CASE("read shows metadata across metadata chunks", "[read][S33]") {
  auto f = a2::conformance::fresh();
  const std::vector<std::int64_t> work = {999, 1000, 1001, 2000, 2001};
  std::vector<a2::NewEvent> batch;
  for (std::int64_t i = 1; i <= 2500; ++i) {
    bool unsettled = std::find(work.begin(), work.end(), i) != work.end();
    batch.push_back(unsettled ? ev() : settled(ev()));
  }
  given(*f, std::move(batch));
  auto c = claim(*f);
  REQUIRE(c.verdict == ClaimVerdict::claimed);
  REQUIRE(indexes_of(c.events) == work);
  f.clock->advance(10);
  for (auto i : work) REQUIRE(complete(*f, "s", i, 1).verdict == a2::CompleteVerdict::completed);
  REQUIRE_FALSE(has_pending(*f));
  auto rows = f->read("s");
  REQUIRE(indexes_of(rows) == range(1, 2500));
  for (const auto& e : rows) {
    bool worked = std::find(work.begin(), work.end(), e.index) != work.end();
    INFO("index " << e.index);
    REQUIRE(e.processed_at == (worked ? kT0 + 10 : kT0));
    REQUIRE(e.processed_by_attempt == (worked ? std::optional<std::int64_t>(1) : std::nullopt));
    REQUIRE(e.attempt_count == (worked ? 1 : 0));
    REQUIRE(e.first_claimed_at == (worked ? std::optional<std::int64_t>(kT0) : std::nullopt));
    REQUIRE(e.returned_event_ids ==
            (worked ? std::optional<std::vector<std::string>>(std::vector<std::string>{})
                    : std::nullopt));
    REQUIRE_FALSE(e.claim_holder.has_value());
  }
}

TEST_CASE("read starts at the clear marker", "[read][S34]") {
  auto f = a2::conformance::fresh();
  given(*f, numbered(1, 3));
  REQUIRE(clear(*f).clear_index == 4);
  given(*f, numbered(5, 2));
  auto rows = f->read("s");
  REQUIRE(indexes_of(rows) == range(4, 6));
  REQUIRE(rows[0].type == a2::kClearEventType);
  REQUIRE(rows[0].payload == Json(nullptr));
  REQUIRE(rows[1].type == "t5");
  REQUIRE(indexes_of(f->read("s", {.after_index = 5, .through_index = std::nullopt})) ==
          std::vector<std::int64_t>{6});
  REQUIRE(f->read("s", {.after_index = 0, .through_index = 3}).empty());
  REQUIRE(indexes_of(f->read("s", {.after_index = 1, .through_index = 4})) ==
          std::vector<std::int64_t>{4});
  auto history = f->read_history("s");
  REQUIRE(indexes_of(history) == range(4, 6));
  for (std::size_t i = 0; i < rows.size(); ++i)
    REQUIRE(event_json(history[i]) == event_json(rows[i]));
}

TEST_CASE("read_tail returns the newest events from an index", "[read_tail][S35]") {
  auto f = a2::conformance::fresh();
  given(*f, numbered(1, 10));
  auto tail = f->read_tail("s", 8);
  REQUIRE(tail.has_value());
  REQUIRE(indexes_of(*tail) == range(8, 10));
  for (const auto& e : *tail) {
    CHECK(e.type == "t" + std::to_string(e.index));
    CHECK(e.payload["i"] == e.index);
    CHECK(e.session_id == "s");
    CHECK(e.created_at == kT0);
  }
  auto bounded = f->read_tail("s", 8, 9);
  REQUIRE(bounded.has_value());
  REQUIRE(indexes_of(*bounded) == range(8, 9));
  auto beyond = f->read_tail("s", 11);
  REQUIRE(beyond.has_value());
  REQUIRE(beyond->empty());
}

TEST_CASE("read_tail returns null when the range does not fit one page", "[read_tail][S36]") {
  auto f = a2::conformance::fresh();
  given(*f, numbered(1, 300));
  auto tail = f->read_tail("s", 45);
  REQUIRE(tail.has_value());
  REQUIRE(indexes_of(*tail) == range(45, 300));
  REQUIRE_FALSE(f->read_tail("s", 44).has_value());
  REQUIRE_FALSE(f->read_tail("s", 1).has_value());
}

TEST_CASE("read_tail respects the clear boundary", "[read_tail][S37]") {
  auto f = a2::conformance::fresh();
  given(*f, numbered(1, 5));
  REQUIRE(clear(*f).clear_index == 6);
  given(*f, numbered(7, 2));
  REQUIRE_FALSE(f->read_tail("s", 3).has_value());
  auto old = f->read_tail("s", 2, 4);
  REQUIRE(old.has_value());
  REQUIRE(old->empty());
  auto tail = f->read_tail("s", 6);
  REQUIRE(tail.has_value());
  REQUIRE(indexes_of(*tail) == range(6, 8));
  REQUIRE((*tail)[0].type == a2::kClearEventType);
}

TEST_CASE("read_feed_page returns up to 1000 serialized events after a cursor",
          "[read_feed_page][S38]") {
  auto f = a2::conformance::fresh();
  given(*f, numbered(1, 1200));
  auto first = f->read_feed_page("s", 0);
  REQUIRE(first.size() == 1000);
  for (std::size_t i = 0; i < first.size(); ++i) {
    const auto& e = first[i];
    auto n = static_cast<std::int64_t>(i) + 1;
    INFO("index " << n);
    REQUIRE(e.index == n);
    REQUIRE(e.id == "g" + std::to_string(n));
    REQUIRE(e.type == "t" + std::to_string(n));
    REQUIRE(e.session_id == "s");
    REQUIRE(e.created_at == kT0);
    REQUIRE(Json::parse(e.payload_json) == Json{{"i", n}, {"s", "x" + std::to_string(n)}});
  }
  auto second = f->read_feed_page("s", 1000);
  REQUIRE(second.size() == 200);
  REQUIRE(second.front().index == 1001);
  REQUIRE(second.back().index == 1200);
  REQUIRE(f->read_feed_page("s", 1200).empty());
  auto c = clear(*f);
  REQUIRE(c.clear_index == 1201);
  auto after_clear = f->read_feed_page("s", 5);
  REQUIRE(after_clear.size() == 1);
  REQUIRE(after_clear[0].index == 1201);
  REQUIRE(after_clear[0].type == a2::kClearEventType);
  REQUIRE(Json::parse(after_clear[0].payload_json) == Json(nullptr));
}

TEST_CASE("read_events pages through events after a cursor and resumes at the marker",
          "[read_events][S39]") {
  auto f = a2::conformance::fresh();
  given(*f, numbered(1, 300));
  std::vector<std::int64_t> seen;
  std::int64_t cursor = 0;
  for (int pages = 0; cursor < 300; ++pages) {
    REQUIRE(pages < 300);
    auto page = f->read_events("s", cursor);
    REQUIRE_FALSE(page.empty());
    REQUIRE(page.size() <= 256);
    REQUIRE(indexes_of(page) == range(cursor + 1, cursor + static_cast<std::int64_t>(page.size())));
    for (const auto& e : page) REQUIRE(e.payload["i"] == e.index);
    cursor = page.back().index;
  }
  REQUIRE(f->read_events("s", 300).empty());
  auto mid = f->read_events("s", 297);
  REQUIRE(indexes_of(mid) == range(298, 300));
  REQUIRE(clear(*f).clear_index == 301);
  given(*f, numbered(302, 2));
  auto resumed = f->read_events("s", 5);
  REQUIRE(indexes_of(resumed) == range(301, 303));
  REQUIRE(resumed[0].type == a2::kClearEventType);
  REQUIRE(indexes_of(f->read_events("s", 301)) == range(302, 303));
}

TEST_CASE("read freezes its bounds while appends run concurrently", "[read][S42]") {
  auto f = a2::conformance::fresh();
  constexpr int kBatches = 150;
  constexpr int kBatchSize = 3;
  std::atomic<std::int64_t> started{0};    // Batches whose append has begun.
  std::atomic<std::int64_t> committed{0};  // Head after the latest append that returned.
  std::atomic<bool> writer_done{false};
  std::atomic<bool> reader_started{false};
  std::exception_ptr writer_error;
  std::thread writer([&] {
    while (!reader_started.load()) std::this_thread::yield();
    try {
      for (int b = 0; b < kBatches; ++b) {
        started.fetch_add(1);
        auto r = f->append("s", evs(kBatchSize));
        committed.store(r.events.back().index);
      }
    } catch (...) {
      writer_error = std::current_exception();
    }
    writer_done.store(true);
  });

  struct Observation {
    std::int64_t low, high;
    std::vector<std::int64_t> indexes;
  };
  std::vector<Observation> observations;
  std::exception_ptr reader_error;
  try {
    reader_started.store(true);
    do {
      auto low = committed.load();
      auto rows = f->read("s");
      auto high = started.load() * kBatchSize;
      observations.push_back({low, high, indexes_of(rows)});
    } while (!writer_done.load());
  } catch (...) {
    reader_error = std::current_exception();
  }
  writer.join();
  if (writer_error) std::rethrow_exception(writer_error);
  if (reader_error) std::rethrow_exception(reader_error);

  REQUIRE_FALSE(observations.empty());
  std::int64_t previous = 0;
  for (const auto& o : observations) {
    auto k = static_cast<std::int64_t>(o.indexes.size());
    INFO("read returned " << k << " rows; committed before " << o.low << ", started after "
                          << o.high);
    REQUIRE(o.indexes == range(1, k));  // A contiguous prefix...
    REQUIRE(k % kBatchSize == 0);       // ...ending at a head some append produced...
    REQUIRE(o.low <= k);                // ...no older than the call's start...
    REQUIRE(k <= o.high);               // ...and no newer than its end.
    REQUIRE(previous <= k);             // Sequential reads never go back.
    previous = k;
  }
  REQUIRE(indexes_of(f->read("s")) == range(1, kBatches * kBatchSize));
}
