// SPDX-License-Identifier: MIT
// Hostile values, the same answer on every backend: JSON nested deeper than kMaxJsonDepth,
// U+0000 in strings and keys, numbers whose plain decimal form is huge, integers up to 2^53-1
// through every script and reply, and the configurable clear marker type.

#include <catch2/catch.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "support/bad_input.hpp"
#include "support/lifecycle.hpp"
#include "support/support.hpp"

namespace a2::conformance {
namespace {

// `depth` arrays (or objects under key "k") around the number 1, built without recursion. Move
// it where it goes: copying, comparing or dumping a value 30,000 levels deep recurses.
Json nested(std::size_t depth, bool objects = false) {
  Json root = 1;
  for (std::size_t i = 0; i < depth; ++i) {
    Json outer = objects ? Json::object() : Json::array();
    if (objects)
      outer["k"] = std::move(root);
    else
      outer.push_back(std::move(root));
    root = std::move(outer);
  }
  return root;
}

// Events and a checkpoint and presence to protect, and a claimed event (index 2, attempt 1) to
// complete.
Fixture seeded() {
  auto f = fresh();
  (void)f->append("s", {settled(ev_id("a", "t", Json{{"n", 1}})), ev_id("b")});
  auto c = claim(*f);
  REQUIRE(indexes_of(c.events) == std::vector<std::int64_t>{2});
  f->put_snapshots("s", "r", {{1, Json{{"n", 1}}, {}}});
  (void)f->append("s2", {ev_id("x")});
  (void)f->patch_presence("s", {.participant = "p1", .state = Json(1), .ttl_ms = 60000});
  return f;
}

// Each write that takes a JSON value, given `make()` fresh for each (moved in, never copied).
template <class Make>
void each_json_write_refuses(Store& s, Make&& make) {
  SECTION("append payload") {
    require_invalid_and_unchanged(s, [&] {
      std::vector<NewEvent> batch;
      batch.push_back(ev_id("n", "t", make()));
      (void)s.append("s", std::move(batch));
    });
  }
  SECTION("append payload of a later event of the batch") {
    require_invalid_and_unchanged(s, [&] {
      std::vector<NewEvent> batch;
      batch.push_back(ev_id("n1"));
      batch.push_back(settled(ev_id("n2", "t", make())));
      (void)s.append("s", std::move(batch));
    });
  }
  SECTION("complete_attempt child payload") {
    require_invalid_and_unchanged(s, [&] {
      std::vector<ChildEvent> children;
      children.push_back(child("c1", "child", make()));
      (void)complete(s, "s", 2, 1, std::move(children));
    });
  }
  SECTION("put_snapshots state") {
    require_invalid_and_unchanged(s, [&] {
      std::vector<SnapshotWrite> writes;
      writes.push_back({2, make(), {}});
      s.put_snapshots("s", "r", std::move(writes));
    });
  }
  SECTION("patch_presence state") {
    require_invalid_and_unchanged(s, [&] {
      PresencePatch patch{.participant = "p2", .state = make(), .ttl_ms = 60000};
      (void)s.patch_presence("s", patch);
    });
  }
}

TEST_CASE(
    "append, complete_attempt, put_snapshots and patch_presence refuse JSON nested deeper "
    "than kMaxJsonDepth",
    "[append][complete][snapshots][presence][bad_input][values]") {
  auto f = seeded();
  SECTION("30,000 levels of arrays (a stack overflow in a recursive walk)") {
    each_json_write_refuses(*f, [] { return nested(30'000); });
  }
  SECTION("30,000 levels of objects") {
    each_json_write_refuses(*f, [] { return nested(30'000, true); });
  }
  SECTION("one level over the limit") {
    each_json_write_refuses(*f, [] { return nested(kMaxJsonDepth + 1); });
  }
  SECTION("an array at the limit holding one more array") {
    each_json_write_refuses(*f, [] {
      Json j = nested(kMaxJsonDepth - 1);
      Json* leaf = &j;
      while (leaf->is_array()) leaf = &leaf->back();
      *leaf = Json::array({Json::array()});
      return j;
    });
  }
}

TEST_CASE(
    "append, complete_attempt, put_snapshots and patch_presence accept JSON nested exactly "
    "kMaxJsonDepth levels and read it back",
    "[append][complete][snapshots][presence][values]") {
  auto f = seeded();
  Store& s = *f;
  const Json expected_array = nested(kMaxJsonDepth);
  const Json expected_object = nested(kMaxJsonDepth, true);
  {
    std::vector<NewEvent> batch;
    batch.push_back(settled(ev_id("deep1", "t", nested(kMaxJsonDepth))));
    batch.push_back(settled(ev_id("deep2", "t", nested(kMaxJsonDepth, true))));
    REQUIRE(indexes_of(s.append("s", std::move(batch)).events) == std::vector<std::int64_t>{3, 4});
  }
  {
    std::vector<ChildEvent> children;
    children.push_back(child("c1", "child", nested(kMaxJsonDepth)));
    REQUIRE(complete(s, "s", 2, 1, std::move(children)).verdict == CompleteVerdict::completed);
  }
  auto rows = s.read("s");
  REQUIRE(rows.size() == 5);
  REQUIRE(rows[2].payload == expected_array);
  REQUIRE(rows[3].payload == expected_object);
  REQUIRE(rows[4].payload == expected_array);
  auto page = s.read_feed_page("s", 2);
  REQUIRE(page.size() == 3);
  REQUIRE(Json::parse(page[0].payload_json) == expected_array);
  {
    std::vector<SnapshotWrite> writes;
    writes.push_back({5, nested(kMaxJsonDepth, true), {}});
    s.put_snapshots("s", "r", std::move(writes));
  }
  auto state = s.read_state("s", "r");
  REQUIRE(state.snapshot);
  REQUIRE(state.snapshot->index == 5);
  REQUIRE(state.snapshot->state == expected_object);
  (void)s.patch_presence("s",
                         {.participant = "deep", .state = nested(kMaxJsonDepth), .ttl_ms = 60000});
  auto presence = s.read_presence("s");
  REQUIRE(presence.at("deep") == expected_array);
}

TEST_CASE(
    "append, complete_attempt, put_snapshots and patch_presence refuse U+0000 in strings "
    "and keys",
    "[append][complete][snapshots][presence][bad_input][values]") {
  auto f = seeded();
  SECTION("in a string") {
    each_json_write_refuses(*f, [] { return Json{{"k", std::string("a\0b", 3)}}; });
  }
  SECTION("as a whole string") {
    each_json_write_refuses(*f, [] { return Json(std::string(1, '\0')); });
  }
  SECTION("in a key") {
    each_json_write_refuses(*f, [] { return Json{{std::string("k\0", 2), 1}}; });
  }
  SECTION("parsed from the escape \\u0000, deep in an array") {
    each_json_write_refuses(*f, [] { return Json::parse(R"([1, {"a": ["x\u0000y"]}])"); });
  }
}

TEST_CASE(
    "append and the other JSON writes count numbers at their plain decimal length toward "
    "kMaxPayloadBytes",
    "[append][complete][snapshots][presence][bad_input][values]") {
  // 14,000 numbers 1e308 are about 100 KB of JSON text but 4.3 MB in plain decimal notation, as
  // Postgres prints jsonb numbers: over the limit everywhere.
  auto many = [](std::size_t n) {
    Json a = Json::array();
    for (std::size_t i = 0; i < n; ++i) a.push_back(i % 2 ? 1e308 : -1.5e-300);
    return a;
  };
  SECTION("over the limit") {
    auto f = seeded();
    each_json_write_refuses(*f, [&] { return many(14'000); });
  }
  SECTION("under the limit: stored, and read back as the same values") {
    auto f = seeded();
    const Json value = many(1'000);
    (void)f->append("s", {settled(ev_id("big", "t", value))});
    REQUIRE(f->read("s").back().payload == value);
    f->put_snapshots("s", "r", {{3, value, {}}});
    REQUIRE(f->read_state("s", "r").snapshot->state == value);
  }
}

TEST_CASE("claim_available, renew_claims and reads carry every integer up to 2^53-1 exactly",
          "[claim][renew][numbers][values]") {
  auto f = fresh();
  Store& s = *f;
  auto claim_until = [&](const std::string& session, std::int64_t expires_at) {
    return s.claim_available({.session_id = session,
                              .holder = "w1",
                              .ttl_ms = std::nullopt,
                              .expires_at_ms = expires_at,
                              .exclude_indexes = {}});
  };
  SECTION("a lease ending at 2^53-1: claims of other events still work, then busy") {
    (void)s.append("s", {ev_id("a")});
    auto first = claim_until("s", kMaxSafeInteger);
    REQUIRE(first.verdict == ClaimVerdict::claimed);
    REQUIRE(first.events.at(0).claim_expires_at == kMaxSafeInteger);
    auto busy = claim(s);
    REQUIRE(busy.verdict == ClaimVerdict::busy);
    REQUIRE(busy.retry_at == kMaxSafeInteger);
    (void)s.append("s", {ev_id("b")});
    auto second = claim(s);
    REQUIRE(second.verdict == ClaimVerdict::claimed);
    REQUIRE(indexes_of(second.events) == std::vector<std::int64_t>{2});
    auto rows = s.read("s");
    REQUIRE(rows[0].claim_expires_at == kMaxSafeInteger);
    REQUIRE(rows[1].claim_expires_at == kT0 + kTtl);
  }
  SECTION("15- and 16-digit lease ends come back unrounded") {
    for (std::int64_t end : {std::int64_t{123'456'789'012'345}, std::int64_t{4'503'599'627'370'497},
                             kMaxSafeInteger - 1}) {
      INFO("lease end " << end);
      const std::string session = "s" + std::to_string(end);
      (void)s.append(session, {ev_id("e" + std::to_string(end))});
      auto c = claim_until(session, end);
      REQUIRE(c.verdict == ClaimVerdict::claimed);
      REQUIRE(c.events.at(0).claim_expires_at == end);
      auto busy = claim(s, session);
      REQUIRE(busy.verdict == ClaimVerdict::busy);
      REQUIRE(busy.retry_at == end);
      auto renewed = s.renew_claims({.session_id = session,
                                     .holder = "w1",
                                     .claims = {{1, 1}},
                                     .ttl_ms = std::nullopt,
                                     .expires_at_ms = end + 1});
      REQUIRE(renewed.renewed == std::vector<std::int64_t>{1});
      REQUIRE(s.read(session).at(0).claim_expires_at == end + 1);
      REQUIRE(claim(s, session).retry_at == end + 1);
    }
  }
  SECTION("times near 2^53 from the clock: created, claimed, failed") {
    const std::int64_t now = 4'503'599'627'370'497;  // 2^52 + 1: 16 digits.
    f.clock->set(now);
    (void)s.append("s", {ev_id("a")});
    auto c = claim(s);
    REQUIRE(c.verdict == ClaimVerdict::claimed);
    REQUIRE(c.events.at(0).created_at == now);
    REQUIRE(c.events.at(0).first_claimed_at == now);
    REQUIRE(c.events.at(0).claim_expires_at == now + kTtl);
    REQUIRE(claim(s).retry_at == now + kTtl);
    f.clock->advance(3);
    REQUIRE(fail(s, "s", 1, 1, 5).verdict == FailVerdict::failed);
    auto row = s.read("s").at(0);
    REQUIRE(row.created_at == now);
    REQUIRE(row.last_failed_at == now + 3);
    REQUIRE(row.last_claimed_at == now);
  }
  SECTION("a cause index of 2^53-1 is above the head: invalid_argument, not a store failure") {
    (void)s.append("s", {ev_id("a")});
    require_error(ErrorCode::invalid_argument,
                  [&] { (void)s.append("s", {caused(ev_id("n"), kMaxSafeInteger, 1)}); });
    require_error(ErrorCode::invalid_argument, [&] {
      (void)s.clear({.session_id = "s",
                     .if_last_index = std::nullopt,
                     .cause = EventCause{kMaxSafeInteger, 1}});
    });
    REQUIRE(s.read("s").size() == 1);
  }
}

TEST_CASE("clear writes the configured marker type and every read keeps the lifetimes",
          "[clear][read][subscribe][values]") {
  const std::string marker_type = "custom.session-reset";
  auto f = fresh(StoreSettings{.clear_event_type = marker_type});
  Store& s = *f;
  (void)s.append("s", {ev_id("a"), ev_id("b")});
  auto cleared = s.clear({.session_id = "s", .if_last_index = 2, .cause = std::nullopt});
  REQUIRE(cleared.cleared);
  REQUIRE(cleared.clear_index == 3);
  (void)s.append("s", {ev_id("c")});
  auto rows = s.read("s");
  REQUIRE(indexes_of(rows) == std::vector<std::int64_t>{3, 4});
  REQUIRE(rows[0].type == marker_type);
  REQUIRE(rows[0].payload.is_null());
  auto history = s.read_history("s");
  REQUIRE(history.at(0).type == marker_type);
  auto tail = s.read_tail("s", 3);
  REQUIRE(tail);
  REQUIRE(tail->at(0).type == marker_type);
  auto events = s.read_events("s", 0);
  REQUIRE(indexes_of(events) == std::vector<std::int64_t>{3, 4});
  REQUIRE(events[0].type == marker_type);
  auto page = s.read_feed_page("s", 2);
  REQUIRE(page.at(0).index == 3);
  REQUIRE(page.at(0).type == marker_type);
  auto state = s.read_state("s", "r");
  REQUIRE(state.clear_index == 3);
  REQUIRE(state.events.at(0).type == marker_type);
  auto c = claim(s);
  REQUIRE(indexes_of(c.events) == std::vector<std::int64_t>{4});
  REQUIRE(c.events[0].clear_index == 3);
  auto feed = s.subscribe("s", 0);
  auto got = collect(*feed, 2);
  REQUIRE(indexes_of(got) == std::vector<std::int64_t>{3, 4});
  REQUIRE(got[0].type == marker_type);
  // A second clear, live feed open: the marker arrives with the configured type.
  auto again = s.clear({.session_id = "s", .if_last_index = std::nullopt, .cause = std::nullopt});
  REQUIRE(again.clear_index == 5);
  auto live = collect(*feed, 1);
  REQUIRE(live.size() == 1);
  REQUIRE(live[0].type == marker_type);
  REQUIRE(s.read("s").at(0).type == marker_type);
  // A store with the default writes the default, in its own store.
  auto plain = fresh();
  (void)plain->append("s", {ev_id("a")});
  (void)plain->clear({.session_id = "s", .if_last_index = std::nullopt, .cause = std::nullopt});
  REQUIRE(plain->read("s").at(0).type == kClearEventType);
}

TEST_CASE("open refuses a clear marker type that is not a valid event type",
          "[open][bad_input][values]") {
  for (const auto& bad : bad_texts(kMaxEventTypeBytes)) {
    INFO("clear_event_type '" << printable(bad) << "'");
    require_error(ErrorCode::invalid_argument,
                  [&] { (void)fresh(StoreSettings{.clear_event_type = bad}); });
  }
}

}  // namespace
}  // namespace a2::conformance
