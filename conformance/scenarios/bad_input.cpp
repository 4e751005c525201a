// SPDX-License-Identifier: MIT
// Bad input: the shared validator (include/a2/detail/validate.hpp) refuses it with
// invalid_argument before any I/O, the same way on every backend, and nothing changes.

#include "support/bad_input.hpp"

#include <catch2/catch.hpp>

#include "support/lifecycle.hpp"
#include "support/support.hpp"

namespace a2::conformance {
namespace {

// Some state of every kind to protect: events with lanes and payloads, claims, a dead letter,
// checkpoints with a pin, another session, presence.
Fixture seeded() {
  auto f = fresh();
  (void)f->append("s", {ev_id("a", "t", Json{{"n", 1}}), in_lane(ev_id("b"), "L"),
                        in_lane(ev_id("c"), "L"), ev_id("d")});
  auto c = claim(*f);
  REQUIRE(indexes_of(c.events) == std::vector<std::int64_t>{1, 2, 4});
  REQUIRE(fail(*f, "s", 4, 1, 1).verdict == FailVerdict::dead_lettered);
  f->put_snapshots("s", "r", {{1, Json{{"n", 1}}, {3}}, {2, Json{{"n", 2}}, {}}});
  (void)f->append("s2", {ev_id("x")});
  (void)f->patch_presence("s", {.participant = "p1", .state = Json(1), .ttl_ms = 60000});
  f.clock->advance(10);
  return f;
}

ClaimRequest claim_req(std::string session = "s", std::string holder = "w1",
                       std::optional<std::int64_t> ttl = kTtl,
                       std::optional<std::int64_t> expires = std::nullopt,
                       std::vector<std::int64_t> exclude = {}) {
  return {.session_id = std::move(session),
          .holder = std::move(holder),
          .ttl_ms = ttl,
          .expires_at_ms = expires,
          .exclude_indexes = std::move(exclude)};
}

RenewRequest renew_req(std::string session = "s", std::string holder = "w1",
                       std::vector<ClaimRef> claims = {{1, 1}},
                       std::optional<std::int64_t> ttl = kTtl,
                       std::optional<std::int64_t> expires = std::nullopt) {
  return {.session_id = std::move(session),
          .holder = std::move(holder),
          .claims = std::move(claims),
          .ttl_ms = ttl,
          .expires_at_ms = expires};
}

StateOptions state_opts(std::optional<std::int64_t> through, std::optional<std::int64_t> snap) {
  return {.through_index = through, .snapshot_through_index = snap};
}

StateRequest state_req(std::string session, std::optional<std::int64_t> through = std::nullopt,
                       std::optional<std::int64_t> snap = std::nullopt) {
  return {
      .session_id = std::move(session), .through_index = through, .snapshot_through_index = snap};
}

ChildEvent child_of(NewEvent e) {
  ChildEvent c;
  c.id = std::move(e.id);
  c.type = std::move(e.type);
  c.payload = std::move(e.payload);
  c.lane = std::move(e.lane);
  c.settled = e.settled;
  return c;
}

TEST_CASE("append refuses bad input and changes nothing", "[append][bad_input]") {
  auto f = seeded();
  Store& s = *f;
  SECTION("session ids: empty, oversized, foreign characters, reserved and empty segments") {
    each_invalid(s, bad_session_ids(),
                 [&](const std::string& v) { (void)s.append(v, {ev_id("n")}); });
    each_invalid(s, bad_session_ids(), [&](const std::string& v) { (void)s.append(v, {}); });
  }
  SECTION("event ids: empty, oversized, NUL, not UTF-8") {
    each_invalid(s, bad_texts(kMaxEventIdBytes),
                 [&](const std::string& v) { (void)s.append("s", {ev_id(v)}); });
    each_invalid(s, bad_texts(kMaxEventIdBytes), [&](const std::string& v) {
      (void)s.append("s", {ev_id("n1"), ev(), ev_id(v)});
    });
  }
  SECTION("event types") {
    each_invalid(s, bad_texts(kMaxEventTypeBytes),
                 [&](const std::string& v) { (void)s.append("s", {ev_id("n", v)}); });
    each_invalid(s, bad_texts(kMaxEventTypeBytes),
                 [&](const std::string& v) { (void)s.append("s", {ev(v)}); });
  }
  SECTION("lanes (the empty lane is allowed: it means no lane)") {
    each_invalid(s, bad_texts(kMaxLaneBytes, true),
                 [&](const std::string& v) { (void)s.append("s", {in_lane(ev_id("n"), v)}); });
  }
  SECTION("payloads: NaN, infinity, not UTF-8, over kMaxPayloadBytes") {
    each_invalid(s, bad_json(), [&](const Json& v) { (void)s.append("s", {ev_id("n", "t", v)}); });
    each_invalid(s, bad_json(), [&](const Json& v) {
      (void)s.append("s", {ev_id("n1"), settled(ev_id("n2", "t", v))});
    });
  }
  SECTION("duplicate ids in one batch") {
    auto batches = std::vector<std::vector<NewEvent>>{
        {ev_id("n"), ev_id("n")},
        {ev_id("n"), ev(), in_lane(ev_id("n"), "L")},
        {ev_id("a"), ev_id("a")},  // Owned already: still a duplicate, not a replay.
    };
    for (auto& batch : batches)
      require_invalid_and_unchanged(s, [&] { (void)s.append("s", batch); });
  }
  SECTION("batches over kMaxBatchEvents") {
    require_invalid_and_unchanged(s, [&] { (void)s.append("s", evs(kMaxBatchEvents + 1)); });
    require_invalid_and_unchanged(
        s, [&] { (void)s.append("s", evs_with_ids("n", static_cast<int>(kMaxBatchEvents) + 1)); });
  }
  SECTION("values exactly at the limits are accepted") {
    // The validator refuses only what is over a limit.
    const std::string sid = "a:" + std::string(kMaxSessionIdBytes - 2, 'b');
    auto r = s.append(
        sid,
        {in_lane(ev_id(std::string(kMaxEventIdBytes, 'i'), std::string(kMaxEventTypeBytes, 't')),
                 std::string(kMaxLaneBytes, 'l')),
         ev_id("\xF0\x9F\x98\x80 \"q\" a:b", "t", Json{{"k", "\xC3\xA9"}})});
    REQUIRE(indexes_of(r.events) == std::vector<std::int64_t>{1, 2});
    auto rows = s.read(sid);
    REQUIRE(rows.size() == 2);
    REQUIRE(rows[0].id == std::string(kMaxEventIdBytes, 'i'));
    REQUIRE(rows[0].lane == std::optional<std::string>(std::string(kMaxLaneBytes, 'l')));
    REQUIRE(rows[1].payload == Json{{"k", "\xC3\xA9"}});
  }
  SECTION("indexes beyond 2^53-1 and out-of-range origins") {
    require_invalid_and_unchanged(
        s, [&] { (void)s.append("s", {caused(ev_id("n"), kBeyondSafe, 1)}); });
    require_invalid_and_unchanged(
        s, [&] { (void)s.append("s", {caused(ev_id("n"), 1, kBeyondSafe)}); });
    require_invalid_and_unchanged(
        s, [&] { (void)s.append("s", {caused(ev_id("n"), -kBeyondSafe, 1)}); });
    for (std::int64_t origin : {std::int64_t{0}, std::int64_t{-1}, kBeyondSafe}) {
      INFO("origin_index " << origin);
      require_invalid_and_unchanged(
          s, [&] { (void)s.append("s", {ev_id("n")}, {.origin_index = origin}); });
    }
  }
}

TEST_CASE(
    "read, read_history, read_range, read_tail, read_events, read_feed_page and subscribe "
    "refuse bad input and change nothing",
    "[read][subscribe][bad_input]") {
  auto f = seeded();
  Store& s = *f;
  SECTION("session ids") {
    each_invalid(s, bad_session_ids(), [&](const std::string& v) { (void)s.read(v); });
    each_invalid(s, bad_session_ids(), [&](const std::string& v) { (void)s.read_history(v); });
    each_invalid(s, bad_session_ids(), [&](const std::string& v) { (void)s.read_range(v, 0); });
    each_invalid(s, bad_session_ids(), [&](const std::string& v) { (void)s.read_tail(v, 1); });
    each_invalid(s, bad_session_ids(), [&](const std::string& v) { (void)s.read_events(v, 0); });
    each_invalid(s, bad_session_ids(), [&](const std::string& v) { (void)s.read_feed_page(v, 0); });
    each_invalid(s, bad_session_ids(), [&](const std::string& v) { (void)s.subscribe(v, 0); });
  }
  SECTION("negative after_index and through_index") {
    require_invalid_and_unchanged(
        s, [&] { (void)s.read("s", {.after_index = -1, .through_index = std::nullopt}); });
    require_invalid_and_unchanged(
        s, [&] { (void)s.read("s", {.after_index = 0, .through_index = -1}); });
    require_invalid_and_unchanged(
        s, [&] { (void)s.read("s", {.after_index = 3, .through_index = -1}); });
    require_invalid_and_unchanged(
        s, [&] { (void)s.read_history("s", {.after_index = -1, .through_index = 2}); });
    require_invalid_and_unchanged(
        s, [&] { (void)s.read_history("s", {.after_index = 0, .through_index = -5}); });
    require_invalid_and_unchanged(s, [&] { (void)s.read_range("s", -1); });
    require_invalid_and_unchanged(s, [&] { (void)s.read_range("s", 0, -1); });
    require_invalid_and_unchanged(s, [&] { (void)s.read_tail("s", 0); });
    require_invalid_and_unchanged(s, [&] { (void)s.read_tail("s", -1); });
    require_invalid_and_unchanged(s, [&] { (void)s.read_tail("s", 1, -1); });
    require_invalid_and_unchanged(s, [&] { (void)s.read_events("s", -1); });
    require_invalid_and_unchanged(s, [&] { (void)s.read_feed_page("s", -1); });
    require_invalid_and_unchanged(s, [&] { (void)s.subscribe("s", -1); });
  }
  SECTION("indexes beyond 2^53-1") {
    require_invalid_and_unchanged(
        s, [&] { (void)s.read("s", {.after_index = kBeyondSafe, .through_index = std::nullopt}); });
    require_invalid_and_unchanged(
        s, [&] { (void)s.read("s", {.after_index = 0, .through_index = kBeyondSafe}); });
    require_invalid_and_unchanged(s, [&] {
      (void)s.read_history("s", {.after_index = kBeyondSafe, .through_index = std::nullopt});
    });
    require_invalid_and_unchanged(s, [&] { (void)s.read_range("s", 0, kBeyondSafe); });
    require_invalid_and_unchanged(s, [&] { (void)s.read_tail("s", kBeyondSafe); });
    require_invalid_and_unchanged(s, [&] { (void)s.read_tail("s", 1, kBeyondSafe); });
    require_invalid_and_unchanged(s, [&] { (void)s.read_events("s", kBeyondSafe); });
    require_invalid_and_unchanged(s, [&] { (void)s.read_feed_page("s", kBeyondSafe); });
    require_invalid_and_unchanged(s, [&] { (void)s.subscribe("s", kBeyondSafe); });
  }
}

TEST_CASE("claim_available and renew_claims refuse bad input and change nothing",
          "[claim][renew][bad_input]") {
  auto f = seeded();
  Store& s = *f;
  SECTION("session ids") {
    each_invalid(s, bad_session_ids(),
                 [&](const std::string& v) { (void)s.claim_available(claim_req(v)); });
    each_invalid(s, bad_session_ids(),
                 [&](const std::string& v) { (void)s.renew_claims(renew_req(v)); });
  }
  SECTION("holders: empty, oversized, NUL, not UTF-8") {
    each_invalid(s, bad_texts(kMaxHolderBytes),
                 [&](const std::string& v) { (void)s.claim_available(claim_req("s", v)); });
    each_invalid(s, bad_texts(kMaxHolderBytes),
                 [&](const std::string& v) { (void)s.renew_claims(renew_req("s", v)); });
  }
  SECTION("ttl_ms <= 0, neither ttl nor expiry, negative or unsafe expiry") {
    using Lease = std::pair<std::optional<std::int64_t>, std::optional<std::int64_t>>;
    for (const auto& lease : std::vector<Lease>{{0, std::nullopt},
                                                {-1, std::nullopt},
                                                {-kTtl, std::nullopt},
                                                {std::nullopt, std::nullopt},
                                                {std::nullopt, -1},
                                                {0, kT0 + kTtl},
                                                {kBeyondSafe, std::nullopt},
                                                {std::nullopt, kBeyondSafe}}) {
      const auto ttl = lease.first;
      const auto expires = lease.second;
      INFO("ttl " << (ttl ? std::to_string(*ttl) : "none") << ", expires_at "
                  << (expires ? std::to_string(*expires) : "none"));
      require_invalid_and_unchanged(
          s, [&] { (void)s.claim_available(claim_req("s", "w1", ttl, expires)); });
      require_invalid_and_unchanged(s, [&] {
        (void)s.renew_claims(renew_req("s", "w1", {{1, 1}}, ttl, expires));
      });
    }
  }
  SECTION("lists over kMaxListedIndexes") {
    std::vector<std::int64_t> many(kMaxListedIndexes + 1);
    for (std::size_t i = 0; i < many.size(); ++i) many[i] = static_cast<std::int64_t>(i) + 100;
    require_invalid_and_unchanged(
        s, [&] { (void)s.claim_available(claim_req("s", "w1", kTtl, std::nullopt, many)); });
    std::vector<ClaimRef> claims(kMaxListedIndexes + 1, ClaimRef{1, 1});
    require_invalid_and_unchanged(s, [&] { (void)s.renew_claims(renew_req("s", "w1", claims)); });
  }
  SECTION("indexes beyond 2^53-1") {
    require_invalid_and_unchanged(s, [&] {
      (void)s.claim_available(claim_req("s", "w1", kTtl, std::nullopt, {1, kBeyondSafe}));
    });
    require_invalid_and_unchanged(s, [&] {
      (void)s.renew_claims(renew_req("s", "w1", {{kBeyondSafe, 1}}));
    });
    require_invalid_and_unchanged(s, [&] {
      (void)s.renew_claims(renew_req("s", "w1", {{1, 1}, {2, kBeyondSafe}}));
    });
  }
}

TEST_CASE("complete_attempt refuses bad input and changes nothing", "[complete][bad_input]") {
  auto f = seeded();
  Store& s = *f;
  auto complete_with = [&](std::vector<ChildEvent> children, std::string session = "s",
                           std::int64_t index = 1, std::int64_t attempt = 1) {
    (void)s.complete_attempt({.session_id = std::move(session),
                              .index = index,
                              .attempt = attempt,
                              .events = std::move(children)});
  };
  SECTION("session ids") {
    each_invalid(s, bad_session_ids(), [&](const std::string& v) { complete_with({}, v); });
  }
  SECTION("child ids, types and lanes") {
    each_invalid(s, bad_texts(kMaxEventIdBytes),
                 [&](const std::string& v) { complete_with({child(v)}); });
    each_invalid(s, bad_texts(kMaxEventTypeBytes),
                 [&](const std::string& v) { complete_with({child("k", v)}); });
    each_invalid(s, bad_texts(kMaxLaneBytes, true), [&](const std::string& v) {
      complete_with({child("k1"), in_lane_child("k2", v)});
    });
  }
  SECTION("child payloads") {
    each_invalid(s, bad_json(), [&](const Json& v) { complete_with({child("k", "t", v)}); });
  }
  SECTION("duplicate child ids") {
    require_invalid_and_unchanged(s, [&] { complete_with({child("k"), child("k")}); });
    require_invalid_and_unchanged(s, [&] { complete_with({child("a"), child("a")}); });
  }
  SECTION("batches over kMaxBatchEvents") {
    std::vector<ChildEvent> many;
    for (std::size_t i = 0; i <= kMaxBatchEvents; ++i)
      many.push_back(child("k" + std::to_string(i)));
    require_invalid_and_unchanged(s, [&] { complete_with(many); });
    std::vector<ChildEvent> anonymous(kMaxBatchEvents + 1, child_of(ev()));
    for (auto& c : anonymous) c.id.reset();
    require_invalid_and_unchanged(s, [&] { complete_with(anonymous); });
  }
  SECTION("indexes beyond 2^53-1") {
    require_invalid_and_unchanged(s, [&] { complete_with({}, "s", kBeyondSafe, 1); });
    require_invalid_and_unchanged(s, [&] { complete_with({}, "s", 1, kBeyondSafe); });
    require_invalid_and_unchanged(s, [&] { complete_with({}, "s", -kBeyondSafe, 1); });
  }
}

TEST_CASE("fail_attempt refuses bad input and changes nothing", "[fail][bad_input]") {
  auto f = seeded();
  Store& s = *f;
  auto fail_with = [&](std::string session, std::int64_t index, std::int64_t attempt,
                       std::string error, std::int64_t max_failures = 3) {
    (void)s.fail_attempt({.session_id = std::move(session),
                          .index = index,
                          .attempt = attempt,
                          .error = std::move(error),
                          .max_failures = max_failures});
  };
  SECTION("session ids") {
    each_invalid(s, bad_session_ids(), [&](const std::string& v) { fail_with(v, 1, 1, "e"); });
  }
  SECTION("error texts: oversized, NUL, not UTF-8 (empty is allowed)") {
    each_invalid(s, bad_texts(kMaxErrorTextBytes, true),
                 [&](const std::string& v) { fail_with("s", 1, 1, v); });
  }
  SECTION("indexes beyond 2^53-1") {
    require_invalid_and_unchanged(s, [&] { fail_with("s", kBeyondSafe, 1, "e"); });
    require_invalid_and_unchanged(s, [&] { fail_with("s", 1, kBeyondSafe, "e"); });
    require_invalid_and_unchanged(s, [&] { fail_with("s", 1, 1, "e", kBeyondSafe); });
    require_invalid_and_unchanged(s, [&] { fail_with("s", 1, 1, "e", -kBeyondSafe); });
  }
}

TEST_CASE("dead_letters and redrive refuse bad input and change nothing",
          "[dead_letters][redrive][bad_input]") {
  auto f = seeded();
  Store& s = *f;
  SECTION("session ids") {
    each_invalid(s, bad_session_ids(), [&](const std::string& v) { (void)s.dead_letters(v); });
    each_invalid(s, bad_session_ids(),
                 [&](const std::string& v) { (void)redrive(s, v, 4, RedriveAction::retry); });
    each_invalid(s, bad_session_ids(),
                 [&](const std::string& v) { (void)redrive(s, v, 4, RedriveAction::skip); });
  }
  SECTION("indexes beyond 2^53-1") {
    require_invalid_and_unchanged(
        s, [&] { (void)redrive(s, "s", kBeyondSafe, RedriveAction::retry); });
    require_invalid_and_unchanged(
        s, [&] { (void)redrive(s, "s", -kBeyondSafe, RedriveAction::skip); });
  }
}

TEST_CASE("read_state, read_states and put_snapshots refuse bad input and change nothing",
          "[read_state][put_snapshots][bad_input]") {
  auto f = seeded();
  Store& s = *f;
  SECTION("session ids") {
    each_invalid(s, bad_session_ids(), [&](const std::string& v) { (void)s.read_state(v, "r"); });
    each_invalid(s, bad_session_ids(), [&](const std::string& v) {
      (void)s.read_states("r", {state_req("s"), state_req(v)});
    });
    each_invalid(s, bad_session_ids(), [&](const std::string& v) {
      s.put_snapshots(v, "r", {{3, Json(3), {}}});
    });
  }
  SECTION("reducer names: empty, oversized, ':', foreign characters, NUL, not UTF-8") {
    each_invalid(s, bad_reducers(), [&](const std::string& v) { (void)s.read_state("s", v); });
    each_invalid(s, bad_reducers(),
                 [&](const std::string& v) { (void)s.read_states(v, {state_req("s")}); });
    each_invalid(s, bad_reducers(), [&](const std::string& v) { (void)s.read_states(v, {}); });
    each_invalid(s, bad_reducers(), [&](const std::string& v) {
      s.put_snapshots("s", v, {{3, Json(3), {}}});
    });
    each_invalid(s, bad_reducers(), [&](const std::string& v) { s.put_snapshots("s", v, {}); });
  }
  SECTION("negative indexes") {
    require_invalid_and_unchanged(
        s, [&] { (void)s.read_state("s", "r", state_opts(-1, std::nullopt)); });
    require_invalid_and_unchanged(
        s, [&] { (void)s.read_state("s", "r", state_opts(std::nullopt, -1)); });
    require_invalid_and_unchanged(s, [&] { (void)s.read_states("r", {state_req("s", -1)}); });
    require_invalid_and_unchanged(s, [&] { (void)s.read_states("r", {state_req("s", 2, -1)}); });
    require_invalid_and_unchanged(s, [&] { s.put_snapshots("s", "r", {{-1, Json(0), {}}}); });
    require_invalid_and_unchanged(s, [&] { s.put_snapshots("s", "r", {{3, Json(3), {0}}}); });
    require_invalid_and_unchanged(s, [&] { s.put_snapshots("s", "r", {{3, Json(3), {-2, 3}}}); });
  }
  SECTION("indexes beyond 2^53-1") {
    require_invalid_and_unchanged(
        s, [&] { (void)s.read_state("s", "r", state_opts(kBeyondSafe, std::nullopt)); });
    require_invalid_and_unchanged(
        s, [&] { (void)s.read_state("s", "r", state_opts(std::nullopt, kBeyondSafe)); });
    require_invalid_and_unchanged(s,
                                  [&] { (void)s.read_states("r", {state_req("s", kBeyondSafe)}); });
    require_invalid_and_unchanged(s, [&] {
      s.put_snapshots("s", "r", {{kBeyondSafe, Json(0), {}}});
    });
    require_invalid_and_unchanged(s, [&] {
      s.put_snapshots("s", "r", {{3, Json(3), {3, kBeyondSafe}}});
    });
  }
  SECTION("checkpoint states: NaN, infinity, not UTF-8, over kMaxPayloadBytes") {
    each_invalid(s, bad_json(), [&](const Json& v) { s.put_snapshots("s", "r", {{3, v, {}}}); });
    each_invalid(s, bad_json(), [&](const Json& v) {
      s.put_snapshots("s", "r", {{3, Json(3), {}}, {2, v, {3}}});
    });
  }
  SECTION("lists over kMaxListedIndexes") {
    std::vector<StateRequest> requests(kMaxListedIndexes + 1, state_req("s"));
    require_invalid_and_unchanged(s, [&] { (void)s.read_states("r", requests); });
    std::vector<SnapshotWrite> writes;
    for (std::size_t i = 0; i <= kMaxListedIndexes; ++i)
      writes.push_back({static_cast<std::int64_t>(i) + 3, Json(0), {}});
    require_invalid_and_unchanged(s, [&] { s.put_snapshots("s", "r", writes); });
    std::set<std::int64_t> pins;
    for (std::size_t i = 0; i <= kMaxListedIndexes; ++i)
      pins.insert(static_cast<std::int64_t>(i) + 1);
    require_invalid_and_unchanged(s, [&] { s.put_snapshots("s", "r", {{3, Json(3), pins}}); });
  }
}

TEST_CASE("clear and reclaim refuse bad input and change nothing", "[clear][reclaim][bad_input]") {
  auto f = seeded();
  Store& s = *f;
  SECTION("session ids") {
    each_invalid(s, bad_session_ids(), [&](const std::string& v) { (void)clear(s, v); });
    each_invalid(s, bad_session_ids(), [&](const std::string& v) { (void)clear(s, v, 4); });
    each_invalid(s, bad_session_ids(), [&](const std::string& v) { (void)s.reclaim(v); });
  }
  SECTION("negative if_last_index") {
    require_invalid_and_unchanged(s, [&] { (void)clear(s, "s", -1); });
  }
  SECTION("indexes beyond 2^53-1") {
    require_invalid_and_unchanged(s, [&] { (void)clear(s, "s", kBeyondSafe); });
    require_invalid_and_unchanged(s, [&] {
      (void)clear(s, "s", std::nullopt, EventCause{kBeyondSafe, 1});
    });
    require_invalid_and_unchanged(s, [&] {
      (void)clear(s, "s", std::nullopt, EventCause{1, kBeyondSafe});
    });
    require_invalid_and_unchanged(s, [&] { (void)clear(s, "s", 4, EventCause{-kBeyondSafe, 1}); });
  }
}

TEST_CASE("patch_presence and read_presence refuse bad input and change nothing",
          "[presence][bad_input]") {
  auto f = seeded();
  Store& s = *f;
  auto patch = [&](std::string session, std::string participant, Json state, std::int64_t ttl) {
    (void)s.patch_presence(
        session, {.participant = std::move(participant), .state = std::move(state), .ttl_ms = ttl});
  };
  SECTION("session ids") {
    each_invalid(s, bad_session_ids(),
                 [&](const std::string& v) { patch(v, "p2", Json(2), 1000); });
    each_invalid(s, bad_session_ids(), [&](const std::string& v) { patch(v, "p1", nullptr, 0); });
    each_invalid(s, bad_session_ids(), [&](const std::string& v) { (void)s.read_presence(v); });
  }
  SECTION("participants: empty, oversized, NUL, not UTF-8") {
    each_invalid(s, bad_texts(kMaxParticipantBytes),
                 [&](const std::string& v) { patch("s", v, Json(2), 1000); });
    each_invalid(s, bad_texts(kMaxParticipantBytes),
                 [&](const std::string& v) { patch("s", v, nullptr, 0); });
  }
  SECTION("states: NaN, infinity, not UTF-8, over kMaxPayloadBytes") {
    each_invalid(s, bad_json(), [&](const Json& v) { patch("s", "p1", v, 1000); });
  }
  SECTION("ttl_ms <= 0 or beyond 2^53-1 for a present participant") {
    for (std::int64_t ttl : {std::int64_t{0}, std::int64_t{-1}, kBeyondSafe}) {
      INFO("ttl " << ttl);
      require_invalid_and_unchanged(s, [&] { patch("s", "p1", Json(5), ttl); });
      require_invalid_and_unchanged(s, [&] { patch("s", "p2", Json(5), ttl); });
    }
  }
}

TEST_CASE(
    "bounded claims, release_claims, held_claims, head and delayed work refuse bad input and "
    "change nothing",
    "[claim][release][held_claims][head][delayed][bad_input][S172]") {
  auto f = seeded();
  Store& s = *f;
  (void)s.append("s", {ev_id("e5")});  // Claimable: a claim that slipped through would change it.
  const std::vector<std::int64_t> bad_times = {-1, -kT0, -kBeyondSafe, kBeyondSafe};
  SECTION("max_events 0, negative or beyond 2^53-1") {
    for (std::int64_t max : {std::int64_t{0}, std::int64_t{-1}, -kBeyondSafe, kBeyondSafe}) {
      INFO("max_events " << max);
      auto req = claim_req();
      req.max_events = max;
      require_invalid_and_unchanged(s, [&] { (void)s.claim_available(req); });
    }
  }
  SECTION("retry_at_ms negative or beyond 2^53-1") {
    for (std::int64_t t : bad_times) {
      INFO("retry_at_ms " << t);
      require_invalid_and_unchanged(s, [&] {
        (void)s.fail_attempt({.session_id = "s",
                              .index = 1,
                              .attempt = 1,
                              .error = "e",
                              .max_failures = 3,
                              .retry_at_ms = t});
      });
    }
  }
  SECTION("available_at_ms negative or beyond 2^53-1, on an event or a child") {
    for (std::int64_t t : bad_times) {
      INFO("available_at_ms " << t);
      NewEvent e = ev_id("n");
      e.available_at_ms = t;
      require_invalid_and_unchanged(s, [&] { (void)s.append("s", {ev_id("n0"), e}); });
      ChildEvent c = child("k");
      c.available_at_ms = t;
      require_invalid_and_unchanged(s, [&] {
        (void)s.complete_attempt({.session_id = "s", .index = 1, .attempt = 1, .events = {c}});
      });
    }
  }
  SECTION("available_at_ms on a settled event or a settled child") {
    for (std::int64_t t : {kT0 + 1000, kT0, std::int64_t{0}}) {
      INFO("available_at_ms " << t);
      NewEvent e = settled(ev_id("n"));
      e.available_at_ms = t;
      require_invalid_and_unchanged(s, [&] { (void)s.append("s", {e}); });
      ChildEvent c = child("k");
      c.settled = true;
      c.available_at_ms = t;
      require_invalid_and_unchanged(s, [&] {
        (void)s.complete_attempt(
            {.session_id = "s", .index = 1, .attempt = 1, .events = {child("k0"), c}});
      });
    }
  }
  SECTION("release_claims: session ids, holders, claim lists over kMaxListedIndexes, indexes") {
    auto release = [&](std::string session, std::string holder, std::vector<ClaimRef> claims) {
      (void)s.release_claims(
          {.session_id = std::move(session), .holder = std::move(holder), .claims = claims});
    };
    each_invalid(s, bad_session_ids(), [&](const std::string& v) { release(v, "w1", {{1, 1}}); });
    each_invalid(s, bad_session_ids(), [&](const std::string& v) { release(v, "w1", {}); });
    each_invalid(s, bad_texts(kMaxHolderBytes), [&](const std::string& v) {
      release("s", v, {{1, 1}});
    });
    each_invalid(s, bad_texts(kMaxHolderBytes), [&](const std::string& v) { release("s", v, {}); });
    std::vector<ClaimRef> many(kMaxListedIndexes + 1, ClaimRef{1, 1});
    require_invalid_and_unchanged(s, [&] { release("s", "w1", many); });
    require_invalid_and_unchanged(s, [&] { release("s", "w1", {{1, 1}, {kBeyondSafe, 1}}); });
    require_invalid_and_unchanged(s, [&] { release("s", "w1", {{1, 1}, {2, kBeyondSafe}}); });
    require_invalid_and_unchanged(s, [&] { release("s", "w1", {{-kBeyondSafe, 1}, {1, 1}}); });
  }
  SECTION("held_claims: session ids and holders; head: session ids") {
    each_invalid(s, bad_session_ids(), [&](const std::string& v) { (void)s.held_claims(v, "w1"); });
    each_invalid(s, bad_texts(kMaxHolderBytes),
                 [&](const std::string& v) { (void)s.held_claims("s", v); });
    each_invalid(s, bad_session_ids(), [&](const std::string& v) { (void)s.head(v); });
  }
  SECTION("a release of no claims returns two empty lists and changes nothing") {
    const auto before = world(s);
    auto r = s.release_claims({.session_id = "s", .holder = "w1", .claims = {}});
    REQUIRE(r.released.empty());
    REQUIRE(r.not_held.empty());
    REQUIRE(world(s) == before);
  }
  SECTION("a retry or scheduled time in the past is not bad input: it means now") {
    auto r = s.fail_attempt({.session_id = "s",
                             .index = 1,
                             .attempt = 1,
                             .error = "e",
                             .max_failures = 3,
                             .retry_at_ms = 0});
    REQUIRE(r.verdict == FailVerdict::failed);
    REQUIRE_FALSE(row(s, "s", 1).available_at.has_value());
    NewEvent e = ev_id("n");
    e.available_at_ms = 0;
    auto a = s.append("s", {e});
    REQUIRE(a.events.size() == 1);
    REQUIRE_FALSE(a.events.front().available_at.has_value());
  }
}

TEST_CASE(
    "complete_attempts and claim_next refuse repeated indexes and ids, oversized batches and bad "
    "claims",
    "[complete_attempts][claim_next][bad_input][S182]") {
  auto f = seeded();
  Store& s = *f;
  (void)s.append("s", {ev_id("e5")});  // Claimable: a claim that slipped through would change it.
  // 1 and 2 are claimed by w1 at attempt 1: a completion that slipped through would settle them.
  auto lease = [](std::string holder = "w1") {
    return ClaimNext{.holder = std::move(holder), .ttl_ms = kTtl};
  };
  auto many = [&](std::vector<Completion> completions, std::optional<ClaimNext> next = std::nullopt,
                  std::string session = "s") {
    (void)s.complete_attempts({.session_id = std::move(session),
                               .completions = std::move(completions),
                               .claim_next = std::move(next)});
  };
  auto done = [](std::int64_t index, std::vector<ChildEvent> children = {}) {
    return Completion{.index = index, .attempt = 1, .events = std::move(children)};
  };
  SECTION("an index listed twice") {
    require_invalid_and_unchanged(s, [&] { many({done(1), done(1)}); });
    require_invalid_and_unchanged(s, [&] { many({done(1), done(2), Completion{1, 2, {}}}); });
    require_invalid_and_unchanged(s, [&] { many({done(1), done(1)}, lease()); });
  }
  SECTION("a child id given twice, in one completion or across two") {
    require_invalid_and_unchanged(s, [&] { many({done(1, {child("k"), child("k")})}); });
    require_invalid_and_unchanged(s, [&] { many({done(1, {child("k")}), done(2, {child("k")})}); });
    require_invalid_and_unchanged(s, [&] {
      many({done(1, {child("k")}), done(2, {child("j"), child("k")})}, lease());
    });
  }
  SECTION("more than kMaxListedIndexes completions") {
    std::vector<Completion> list;
    for (std::int64_t i = 1; i <= static_cast<std::int64_t>(kMaxListedIndexes) + 1; ++i)
      list.push_back(done(i));
    require_invalid_and_unchanged(s, [&] { many(list); });
  }
  SECTION("more than kMaxBatchEvents children in all") {
    std::vector<ChildEvent> first;
    std::vector<ChildEvent> second;
    const auto half = static_cast<std::size_t>(kMaxBatchEvents) / 2;
    for (std::size_t i = 0; i < half; ++i) first.push_back(child("a" + std::to_string(i)));
    for (std::size_t i = 0; i < static_cast<std::size_t>(kMaxBatchEvents) - half + 1; ++i)
      second.push_back(child("b" + std::to_string(i)));
    require_invalid_and_unchanged(s, [&] { many({done(1, first), done(2, second)}); });
  }
  SECTION("bad indexes, attempts, session ids and children") {
    require_invalid_and_unchanged(s, [&] { many({done(1), done(kBeyondSafe)}); });
    require_invalid_and_unchanged(s, [&] { many({done(1), Completion{2, kBeyondSafe, {}}}); });
    require_invalid_and_unchanged(s, [&] { many({done(-kBeyondSafe), done(1)}); });
    each_invalid(s, bad_session_ids(), [&](const std::string& v) { many({done(1)}, {}, v); });
    each_invalid(s, bad_session_ids(), [&](const std::string& v) { many({}, lease(), v); });
    each_invalid(s, bad_json(), [&](const Json& v) {
      many({done(1, {child("k")}), done(2, {child("j", "child", v)})});
    });
  }
  SECTION("a claim_next with a bad holder, no lease, a bad lease or max_events below 1") {
    auto both = [&](const ClaimNext& next) {
      require_invalid_and_unchanged(s, [&] { many({done(1)}, next); });
      require_invalid_and_unchanged(s, [&] { many({}, next); });
      require_invalid_and_unchanged(s, [&] {
        (void)s.complete_attempt({.session_id = "s", .index = 1, .attempt = 1, .claim_next = next});
      });
    };
    for (const auto& holder : bad_texts(kMaxHolderBytes)) {
      INFO("holder '" << printable(holder) << "'");
      both(lease(holder));
    }
    both(ClaimNext{.holder = "w1"});  // No lease.
    for (std::int64_t ttl : {std::int64_t{0}, std::int64_t{-1}, kBeyondSafe}) {
      INFO("ttl_ms " << ttl);
      both(ClaimNext{.holder = "w1", .ttl_ms = ttl});
    }
    for (std::int64_t at : {std::int64_t{-1}, kBeyondSafe}) {
      INFO("expires_at_ms " << at);
      both(ClaimNext{.holder = "w1", .expires_at_ms = at});
    }
    for (std::int64_t max : {std::int64_t{0}, std::int64_t{-1}, -kBeyondSafe, kBeyondSafe}) {
      INFO("max_events " << max);
      both(ClaimNext{.holder = "w1", .ttl_ms = kTtl, .max_events = max});
    }
  }
  SECTION("an empty complete_attempts without claim_next returns no results and changes nothing") {
    const auto before = world(s);
    auto r = s.complete_attempts({.session_id = "s"});
    REQUIRE(r.results.empty());
    REQUIRE_FALSE(r.next.has_value());
    auto elsewhere = s.complete_attempts({.session_id = "never"});
    REQUIRE(elsewhere.results.empty());
    REQUIRE(world(s) == before);
  }
}

}  // namespace
}  // namespace a2::conformance
