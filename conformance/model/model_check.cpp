// SPDX-License-Identifier: MIT
// The model-based check: seeded random operation sequences run against the backend under test and
// against the in-memory reference backend side by side. After every step the two must agree on
// the operation's result and on everything observable about every session, and the invariants of
// docs/semantics.md#invariants must hold.
//
// The work index (docs/semantics.md#work-discovery) is compared the same way after every step: a
// random find_work page (limit, due_by_ms, cursor) and the whole index paged through with a random
// page size; I20 is checked against the observed rows, and sweep_work() must find nothing (S197).
//
// About a quarter of the events and children the check writes have no id: the stores draw it from
// their IdSource, which the check scripts alike on both sides (ScriptedIdSource), mostly a fresh
// id, sometimes one that is already stored or one of the same call, as an IdSource that repeats
// itself would (S243, S245).
//
// Environment: A2_MODEL_SEED (default: a fresh seed, printed), A2_MODEL_STEPS (operations per
// run), A2_MODEL_RUNS (runs with consecutive seeds). Defaults: 4 runs of 1500 steps in optimized
// builds (about a minute on Postgres, less elsewhere), 2 of 500 in debug and sanitizer builds.

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "a2/detail/constants.hpp"
#include "a2/memory.hpp"
#include "harness.hpp"
#include "scripted_ids.hpp"
#include "support/as_json.hpp"
#include "support/support.hpp"
#include "views.hpp"

namespace a2::conformance {
namespace {

using namespace model;  // The checks' views (views.hpp).

// A store under test with the clock and ids it was opened with.
struct Side {
  Fixture fixture;
  Store& store() { return *fixture.store; }
};

struct ClaimInfo {
  std::string session;
  std::int64_t index;
  std::int64_t attempt;
  std::string holder;
};

class ModelRun {
 public:
  ModelRun(std::uint64_t seed, int steps) : rng_(seed), seed_(seed), steps_(steps) {
    // Both stores draw from their ScriptedIdSource (ref_ids_, sub_ids_), not a fixture's.
    auto reference = Fixture{std::make_shared<ManualClock>(kT0), nullptr, nullptr};
    reference.store = memory::open({.clock = reference.clock, .ids = ref_ids_});
    ref_.fixture = std::move(reference);
    sub_.fixture = backend().fresh(StoreSettings{.ids = sub_ids_});
  }

  void run() {
    for (step_ = 0; step_ < steps_; ++step_) {
      one_step();
      for (const auto& s : sessions_) check_session(s);
      check_work();
    }
    check_nothing_to_sweep();
    std::cout << "  outcomes:";
    for (const auto& [k, n] : tally_) std::cout << " " << k << "=" << n;
    std::cout << std::endl;
  }

 private:
  struct AppendCall {
    std::string session;
    std::vector<NewEvent> batch;
    AppendOptions options;
  };

  // --- randomness -------------------------------------------------------------------------
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  bool chance(int percent) { return pick(100) < percent; }
  const std::string& any_session() { return sessions_[static_cast<std::size_t>(pick(3))]; }
  std::optional<std::string> any_lane() {
    switch (pick(5)) {
      case 0:
        return std::string("L1");
      case 1:
        return std::string("L2");
      default:
        return std::nullopt;
    }
  }

  // --- running one operation on both sides -----------------------------------------------
  template <class F>
  Json both(const std::string& what, F&& f) {
    return both(what, {}, std::forward<F>(f));
  }
  // The same for a call whose stores draw `draws` (leave_to_store): both must draw them all, or
  // stop at the same one.
  template <class F>
  Json both(const std::string& what, const std::vector<std::string>& draws, F&& f) {
    ref_ids_->script(draws);
    Json expected = outcome([&] { return f(ref_.store()); });
    sub_ids_->script(draws);
    Json actual = outcome([&] { return f(sub_.store()); });
    const std::size_t ref_drew = ref_ids_->drawn(), sub_drew = sub_ids_->drawn();
    ref_ids_->script({});
    sub_ids_->script({});
    tally_["ids:drawn"] += static_cast<int>(ref_drew);
    if (ref_drew != sub_drew) {
      FAIL_CHECK("model check diverged at step " << step_ << " (seed " << seed_ << ") in " << what
                                                 << ": memory drew " << ref_drew
                                                 << " ids, the backend " << sub_drew);
      throw std::runtime_error("diverged");
    }
    if (expected != actual) {
      FAIL_CHECK("model check diverged at step " << step_ << " (seed " << seed_ << ") in " << what
                                                 << "\n  memory:  " << expected.dump()
                                                 << "\n  backend: " << actual.dump());
      throw std::runtime_error("diverged");
    }
    tally(what, expected);
    return expected;
  }

  // Counts outcomes per operation kind ("complete:superseded", "append:partial_duplicate_batch")
  // so a run shows which paths it exercised.
  void tally(const std::string& what, const Json& result) {
    auto kind = what.substr(0, what.find(' '));
    if (kind == "observe" || kind == "dead_letters") return;
    if (what.find("replay") != std::string::npos) kind += "-replay";
    std::string verdict = "ok";
    if (!result.contains("error") && result["ok"].is_object() && result["ok"].contains("results")) {
      for (const auto& r : result["ok"]["results"])
        ++tally_[kind + ":" + r["verdict"].get<std::string>()];
      if (result["ok"].contains("next"))
        ++tally_[kind + ":next-" + result["ok"]["next"]["verdict"].get<std::string>()];
      return;
    }
    if (result.contains("error")) {
      verdict = result["error"].get<std::string>();
    } else if (result["ok"].is_object() && result["ok"].contains("verdict")) {
      verdict = result["ok"]["verdict"].get<std::string>();
    } else if (kind == "release") {
      verdict = !result["ok"]["released"].empty()   ? "released"
                : !result["ok"]["not_held"].empty() ? "not_held"
                                                    : "none";
    }
    ++tally_[kind + ":" + verdict];
  }

  std::int64_t head(const std::string& s) { return heads_[s]; }
  void note_rows(const std::string& s, const Json& rows) {
    for (const auto& r : rows) heads_[s] = std::max(heads_[s], r["index"].get<std::int64_t>());
  }

  void one_step() {
    int roll = pick(100);
    if (roll < 20) return op_append();
    if (roll < 24) return op_replay_append();
    if (roll < 38) return op_claim();
    if (roll < 42) return op_renew();
    if (roll < 45) return op_release();
    if (roll < 47) return op_held_claims_and_head();
    if (roll < 51) return op_complete();
    if (roll < 55) return op_complete_many();
    if (roll < 58) return op_complete_in_sessions();
    if (roll < 61) return op_replay_complete();
    if (roll < 69) return op_fail();
    if (roll < 73) return op_redrive();
    if (roll < 77) return op_put_snapshots();
    if (roll < 81) return op_read_state();
    if (roll < 84) return op_clear();
    if (roll < 87) return op_reclaim();
    if (roll < 89) return op_read_tail();
    if (roll < 91) return op_read_bounded();
    if (roll < 92) return op_inspect();
    if (roll < 93) return op_presence();
    return op_advance_clock();
  }

  // Both sides' clocks move together; this is their common now.
  std::int64_t now() { return ref_.fixture.clock->now_ms(); }
  // A time near now for delayed work: mostly ahead (up to 3 s), sometimes now or in the past.
  std::int64_t near_now() { return now() - 500 + pick(3500); }

  void op_advance_clock() {
    std::int64_t ms = chance(50) ? pick(2000) : pick(40000);
    ref_.fixture.clock->advance(ms);
    sub_.fixture.clock->advance(ms);
  }

  // The id of a new event or child: mostly named by the check ("<prefix><n>"); a quarter are left
  // to the store (kDrawnMark), whose scripted draw is mostly a fresh id ("d<n>"), sometimes an id
  // already written (S243: a replay in its session, else partial_duplicate_batch) and sometimes
  // one of the last few ids made, often of the same call (S245: invalid_argument).
  std::string new_id(const std::string& prefix) {
    std::string id;
    const bool drawn = chance(25);
    const int roll = pick(100);
    if (!drawn) {
      id = prefix + std::to_string(++next_id_);
    } else if (roll < 80 || made_ids_.empty()) {
      id = "d" + std::to_string(++next_id_);
    } else if (roll < 90) {
      id = any_of(made_ids_);
      ++tally_["ids:drawn-repeat"];
    } else {
      const auto recent = static_cast<int>(std::min<std::size_t>(made_ids_.size(), 3));
      id = made_ids_[made_ids_.size() - 1 - static_cast<std::size_t>(pick(recent))];
      ++tally_["ids:drawn-repeat"];
    }
    made_ids_.push_back(id);
    return drawn ? kDrawnMark + id : id;
  }

  std::vector<NewEvent> random_batch(const std::string& s) {
    std::vector<NewEvent> batch;
    int n = 1 + pick(3);
    for (int i = 0; i < n; ++i) {
      NewEvent e;
      e.id = new_id("e");
      e.type = chance(50) ? "job" : "note";
      e.payload = {{"n", next_id_}, {"s", s}};
      e.lane = any_lane();
      e.settled = chance(20);
      // Scheduled work; on a settled event it is invalid_argument (rarely drawn).
      if (chance(e.settled ? 2 : 15)) e.available_at_ms = near_now();
      if (chance(12) && !claims_.empty()) {
        const auto& c = claims_[static_cast<std::size_t>(pick(static_cast<int>(claims_.size())))];
        if (c.session == s) e.cause = EventCause{c.index, c.attempt + (chance(20) ? 1 : 0)};
      }
      batch.push_back(std::move(e));
    }
    return batch;
  }

  void op_append() {
    const auto& s = any_session();
    auto batch = random_batch(s);
    AppendOptions options;
    if (chance(6) && head(s) > 0) options.origin_index = 1 + pick(static_cast<int>(head(s)));
    auto sent = batch;
    std::vector<std::string> draws;
    leave_to_store(sent, draws);
    Json r = both("append " + s, draws, [&](Store& st) {
      auto res = st.append(s, sent, options);
      return Json{{"events", rows_json(res.events)}, {"has_pending", res.has_pending}};
    });
    if (r.contains("ok")) {
      note_rows(s, r["ok"]["events"]);
      name_drawn(batch);
      appended_.push_back({s, batch, options});
    }
  }

  // A replay of an earlier append; two in five change one thing first (Q6): what the check
  // compares (a type, a lane, a cause, the order, a gap) makes it partial_duplicate_batch, what
  // it does not (payloads, settled flags, delays, the origin, a run of the batch's first or last
  // events) leaves it a replay.
  void op_replay_append() {
    if (appended_.empty()) return op_append();
    AppendCall a = any_of(appended_);
    if (chance(40)) a = changed_replay(std::move(a));
    Json r = both("append replay " + a.session, [&](Store& st) {
      auto res = st.append(a.session, a.batch, a.options);
      return Json{{"events", rows_json(res.events)}, {"has_pending", res.has_pending}};
    });
    if (r.contains("ok")) note_rows(a.session, r["ok"]["events"]);
  }

  AppendCall changed_replay(AppendCall a) {
    auto& b = a.batch;
    auto& e = b[static_cast<std::size_t>(pick(static_cast<int>(b.size())))];
    std::string change;
    switch (pick(9)) {
      case 0:
        for (auto& x : b) x.payload = {{"replayed", next_id_}};
        change = "payload";
        break;
      case 1:
        e.type = e.type == "job" ? "note" : "job";
        change = "type";
        break;
      case 2:
        e.lane = e.lane == std::optional<std::string>("L1") ? std::optional<std::string>("L2")
                 : e.lane                                   ? std::nullopt
                                                            : std::optional<std::string>("L1");
        change = "lane";
        break;
      case 3:
        if (e.cause) {
          if (chance(50))
            e.cause.reset();
          else
            ++e.cause->attempt;
        } else {
          e.cause = EventCause{1, 1};
        }
        change = "cause";
        break;
      case 4:
        if (b.size() < 2) return a;
        std::swap(b.front(), b.back());
        change = "order";
        break;
      case 5:
        if (b.size() < 2) return a;
        b.erase(chance(50) ? b.begin() : b.end() - 1);
        change = "end-dropped";
        break;
      case 6:
        if (b.size() < 3) return a;
        b.erase(b.begin() + 1);
        change = "gap";
        break;
      case 7:
        e.settled = !e.settled;
        e.available_at_ms = e.settled || chance(50) ? std::nullopt : std::optional(near_now());
        change = "settled-delay";
        break;
      default:
        a.options.origin_index =
            chance(50) ? std::optional<std::int64_t>() : std::optional<std::int64_t>(1 + pick(4));
        change = "origin";
        break;
    }
    ++tally_["append-replay-changed:" + change];
    return a;
  }

  void op_claim() {
    const auto& s = any_session();
    std::string holder = "w" + std::to_string(1 + pick(3));
    std::vector<std::int64_t> exclude;
    if (chance(15) && head(s) > 0) exclude.push_back(1 + pick(static_cast<int>(head(s))));
    std::optional<std::int64_t> max_events;
    if (chance(50)) max_events = 1 + pick(3);
    Json r = both("claim " + s, [&](Store& st) {
      return claim_json(st.claim_available({.session_id = s,
                                            .holder = holder,
                                            .ttl_ms = 30'000,
                                            .expires_at_ms = std::nullopt,
                                            .exclude_indexes = exclude,
                                            .max_events = max_events}));
    });
    if (r.contains("ok")) note_claim(s, holder, max_events, r["ok"]);
  }

  // Checks a claim's result (from claim_available or claim_next) and remembers what it claimed.
  void note_claim(const std::string& s, const std::string& holder,
                  std::optional<std::int64_t> max_events, const Json& ok) {
    if (max_events) REQUIRE(static_cast<std::int64_t>(ok["events"].size()) <= *max_events);
    if (ok["verdict"] == "busy") REQUIRE(ok["retry_at"].get<std::int64_t>() > now());
    for (const auto& e : ok["events"]) {
      REQUIRE(e["claim_holder"] == holder);
      claims_.push_back(
          {s, e["index"].get<std::int64_t>(), e["attempt_count"].get<std::int64_t>(), holder});
    }
    if (claims_.size() > 40) claims_.erase(claims_.begin(), claims_.begin() + 10);
  }

  // A claim_next on some completions: a random holder, lease and bound (default 1).
  std::optional<ClaimNext> maybe_claim_next(int percent) {
    if (!chance(percent)) return std::nullopt;
    ClaimNext next{.holder = "w" + std::to_string(1 + pick(3))};
    if (chance(20))
      next.expires_at_ms = now() + 1 + pick(60'000);
    else
      next.ttl_ms = 30'000;
    if (chance(50)) next.max_events = 1 + pick(3);
    return next;
  }
  void note_next(const std::string& s, const std::optional<ClaimNext>& next, const Json& ok) {
    REQUIRE(ok.contains("next") == next.has_value());
    if (next) note_claim(s, next->holder, next->max_events, ok["next"]);
  }

  const ClaimInfo* any_claim() {
    if (claims_.empty()) return nullptr;
    return &claims_[static_cast<std::size_t>(pick(static_cast<int>(claims_.size())))];
  }

  void op_renew() {
    const ClaimInfo* c = any_claim();
    if (!c) return op_claim();
    ClaimInfo info = *c;
    std::string holder = chance(15) ? "w9" : info.holder;
    both("renew " + info.session, [&](Store& st) {
      auto res = st.renew_claims({.session_id = info.session,
                                  .holder = holder,
                                  .claims = {{info.index, info.attempt}},
                                  .ttl_ms = 30'000,
                                  .expires_at_ms = std::nullopt});
      auto renewed = res.renewed;
      auto superseded = res.superseded;
      std::sort(renewed.begin(), renewed.end());
      std::sort(superseded.begin(), superseded.end());
      return Json{{"renewed", renewed}, {"superseded", superseded}};
    });
  }

  // Releases claims: some the holder holds (read by held_claims), some drawn from earlier
  // claims (stale, foreign or lapsed ones included), sometimes by another holder; sometimes a
  // snooze (available_at_ms, in the past or the future).
  void op_release() {
    const ClaimInfo* drawn = any_claim();
    if (!drawn) return op_claim();
    const ClaimInfo c = *drawn;
    const std::string s = c.session;
    std::string holder = chance(70) ? c.holder : "w" + std::to_string(1 + pick(3));
    std::vector<ClaimRef> claims;
    for (const auto& h : ref_.store().held_claims(s, holder))
      if (chance(60)) claims.push_back({h.index, h.attempt});
    if (claims.empty() || chance(50)) claims.push_back({c.index, c.attempt});
    if (chance(10)) holder = "w9";
    std::optional<std::int64_t> available_at_ms;
    if (chance(40)) available_at_ms = near_now();
    both("release " + s, [&](Store& st) {
      auto res = st.release_claims({.session_id = s,
                                    .holder = holder,
                                    .claims = claims,
                                    .available_at_ms = available_at_ms});
      auto released = res.released;
      auto not_held = res.not_held;
      std::sort(released.begin(), released.end());
      std::sort(not_held.begin(), not_held.end());
      return Json{{"released", released}, {"not_held", not_held}};
    });
  }

  // held_claims and head, compared with the reference and with what the rows say.
  void op_held_claims_and_head() {
    const auto& s = any_session();
    std::string holder = "w" + std::to_string(1 + pick(3));
    Json held = both("held_claims " + s, [&](Store& st) {
      Json out = Json::array();
      for (const auto& h : st.held_claims(s, holder))
        out.push_back(Json::array({h.index, h.attempt, h.expires_at}));
      return out;
    })["ok"];
    Json h = both("head " + s, [&](Store& st) {
      auto r = st.head(s);
      return Json{{"head_index", r.head_index}, {"clear_index", r.clear_index}};
    })["ok"];
    INFO("held_claims and head of " << s << " at step " << step_ << " (seed " << seed_ << ")");
    REQUIRE(h["head_index"].get<std::int64_t>() == head(s));
    const std::int64_t boundary = h["clear_index"].get<std::int64_t>();
    Json expected = Json::array();
    for (const auto& e : ref_.store().read(s))
      if (e.index > boundary && !e.processed_at && !e.failed_at && e.claim_holder == holder &&
          *e.claim_expires_at > now())
        expected.push_back(Json::array({e.index, e.attempt_count, *e.claim_expires_at}));
    REQUIRE(held == expected);
  }

  // 0-2 fresh children of a completion of `index`.
  std::vector<ChildEvent> random_children(std::int64_t index) {
    std::vector<ChildEvent> children;
    int n = pick(3);
    for (int i = 0; i < n; ++i) {
      ChildEvent ch;
      ch.id = new_id("c");
      ch.type = "child";
      ch.payload = {{"of", index}};
      ch.lane = any_lane();
      ch.settled = chance(40);
      if (!ch.settled && chance(20)) ch.available_at_ms = near_now();
      children.push_back(std::move(ch));
    }
    return children;
  }

  // Children of one completion of a batch: half of them have none, so that batches do not grow
  // the sessions (and the run time) much faster than single completions.
  std::vector<ChildEvent> batch_children(std::int64_t index) {
    return chance(50) ? random_children(index) : std::vector<ChildEvent>{};
  }

  // complete_attempt of a drawn claim (sometimes with claim_next), or a replay of an earlier one.
  void run_complete(CompleteRequest req, bool replay) {
    std::string what = req.claim_next ? "complete_next" : "complete";
    if (replay) what += " replay";
    auto sent = req;
    std::vector<std::string> draws;
    leave_to_store(sent.events, draws);
    Json r = both(what + " " + req.session_id, draws,
                  [&](Store& st) { return complete_json(st.complete_attempt(sent)); });
    if (!r.contains("ok")) return;
    note_rows(req.session_id, r["ok"]["events"]);
    note_next(req.session_id, req.claim_next, r["ok"]);
    name_drawn(req.events);
    if (!replay) completions_.push_back(std::move(req));
  }

  void op_complete() {
    const ClaimInfo* c = any_claim();
    if (!c) return op_claim();
    ClaimInfo info = *c;
    run_complete({.session_id = info.session,
                  .index = info.index,
                  .attempt = info.attempt,
                  .events = random_children(info.index),
                  .claim_next = maybe_claim_next(30)},
                 false);
  }

  // A replay of an earlier completion or batch; a third of single replays change every child's
  // other fields (type, payload, lane, settled, delay): a retry is recognised by its child ids
  // and their causes alone (Q3, S250).
  void op_replay_complete() {
    if (chance(30) && !batches_.empty()) return run_complete_many(any_of(batches_), true);
    if (completions_.empty()) return op_complete();
    CompleteRequest req = any_of(completions_);
    if (!req.events.empty() && chance(33)) {
      for (auto& c : req.events) {
        c.type = chance(50) ? "child" : "other";
        c.payload = {{"retry", next_id_}};
        c.lane = any_lane();
        c.settled = chance(40);
        c.available_at_ms.reset();
        if (!c.settled && chance(20)) c.available_at_ms = near_now();
      }
      ++tally_["ids:retry-other-fields"];
    }
    run_complete(std::move(req), true);
  }

  template <class T>
  const T& any_of(const std::vector<T>& v) {
    return v[static_cast<std::size_t>(pick(static_cast<int>(v.size())))];
  }

  // complete_attempts of 1-4 completions in one session: claims a holder holds (read from the
  // reference), drawn claims (stale, foreign and finished ones included) and replays of earlier
  // completions; with or without children, sometimes with claim_next, rarely an index twice.
  void op_complete_many() {
    auto req = draw_complete_many();
    if (!req) return op_claim();
    if (req->completions.empty() && !chance(30)) return op_complete();
    run_complete_many(std::move(*req), false);
  }

  // A complete_attempts request as op_complete_many draws one; none without claims.
  std::optional<CompleteManyRequest> draw_complete_many() {
    const ClaimInfo* drawn = any_claim();
    if (!drawn) return std::nullopt;
    const std::string s = drawn->session;
    std::vector<Completion> list;
    std::set<std::int64_t> listed;
    auto add = [&](Completion c) {
      if (listed.insert(c.index).second) list.push_back(std::move(c));
    };
    const int n = 1 + pick(4);
    const std::string holder = "w" + std::to_string(1 + pick(3));
    const auto held = ref_.store().held_claims(s, holder);
    for (int i = 0; i < n; ++i) {
      const int kind = pick(10);
      if (kind < 4 && !held.empty()) {
        const auto& h = any_of(held);
        add({h.index, h.attempt, batch_children(h.index)});
      } else if (kind < 8 || completions_.empty()) {
        const ClaimInfo& c = *drawn;
        if (c.session == s) add({c.index, c.attempt, batch_children(c.index)});
        drawn = any_claim();  // claims_ is not empty: never null.
      } else {
        const CompleteRequest& r = any_of(completions_);
        if (r.session_id == s) add({r.index, r.attempt, r.events});
      }
    }
    if (!list.empty() && chance(4))  // An index listed twice: invalid_argument, nothing changes.
      list.push_back({list.front().index, list.front().attempt, {}});
    return CompleteManyRequest{
        .session_id = s, .completions = list, .claim_next = maybe_claim_next(40)};
  }

  void run_complete_many(CompleteManyRequest req, bool replay) {
    auto sent = req;
    std::vector<std::string> draws;
    for (auto& c : sent.completions) leave_to_store(c.events, draws);
    for (auto& c : req.completions) name_drawn(c.events);
    Json r = both(std::string(replay ? "complete_many replay " : "complete_many ") + req.session_id,
                  draws, [&](Store& st) { return complete_many_json(st.complete_attempts(sent)); });
    if (r.contains("ok")) completed_many(req, r["ok"], replay);
  }

  // complete_in_sessions of up to three sessions' requests, each drawn as op_complete_many draws
  // one or, one in five, a replay of an earlier batch: each request's outcome (its result or its
  // error) must be the reference's.
  void op_complete_in_sessions() {
    std::vector<CompleteManyRequest> requests;
    std::vector<bool> replays;
    std::set<std::string> named;
    for (int i = 0, n = 2 + pick(2); i < 2 * n && static_cast<int>(requests.size()) < n; ++i) {
      const bool replay = chance(20) && !batches_.empty();
      auto q = replay ? std::optional(any_of(batches_)) : draw_complete_many();
      if (!q || !named.insert(q->session_id).second) continue;
      requests.push_back(std::move(*q));
      replays.push_back(replay);
    }
    if (requests.empty()) return op_claim();
    auto sent = requests;
    std::vector<std::string> draws;
    for (auto& q : sent)
      for (auto& c : q.completions) leave_to_store(c.events, draws);
    for (auto& q : requests)
      for (auto& c : q.completions) name_drawn(c.events);
    std::string what = "complete_in_sessions";
    for (const auto& q : requests) what += " " + q.session_id;
    Json r = both(what, draws, [&](Store& st) {
      Json out = Json::array();
      for (auto& o : st.complete_in_sessions(sent))
        out.push_back(outcome([&] { return complete_many_json(o.value()); }));
      return out;
    });
    if (!r.contains("ok")) return;
    for (std::size_t i = 0; i < requests.size(); ++i) {
      const Json& one = r["ok"].at(i);
      ++tally_["in_sessions:" +
               (one.contains("ok") ? std::string("ok") : one["error"].get<std::string>())];
      if (one.contains("ok")) completed_many(requests[i], one["ok"], replays[i]);
    }
  }

  // Notes what a complete_attempts request that was answered `ok` wrote and claimed.
  void completed_many(const CompleteManyRequest& req, const Json& ok, bool replay) {
    REQUIRE(ok["results"].size() == req.completions.size());
    for (std::size_t i = 0; i < req.completions.size(); ++i) {
      REQUIRE_FALSE(ok["results"][i].contains("next"));
      note_rows(req.session_id, ok["results"][i]["events"]);
    }
    note_next(req.session_id, req.claim_next, ok);
    if (replay) return;
    batches_.push_back(req);
    for (const auto& c : req.completions)
      completions_.push_back({.session_id = req.session_id,
                              .index = c.index,
                              .attempt = c.attempt,
                              .events = c.events});
  }

  void op_fail() {
    const ClaimInfo* c = any_claim();
    if (!c) return op_claim();
    ClaimInfo info = *c;
    std::int64_t max_failures = 1 + pick(3);
    std::optional<std::int64_t> retry_at_ms;
    if (chance(40)) retry_at_ms = near_now();
    both("fail " + info.session, [&](Store& st) {
      auto res = st.fail_attempt({.session_id = info.session,
                                  .index = info.index,
                                  .attempt = info.attempt,
                                  .error = "boom " + std::to_string(step_),
                                  .max_failures = max_failures,
                                  .retry_at_ms = retry_at_ms});
      return Json{{"verdict", std::string(to_string(res.verdict))},
                  {"failure_count", res.failure_count}};
    });
  }

  void op_redrive() {
    const auto& s = any_session();
    Json dead = both("dead_letters " + s, [&](Store& st) { return rows_json(st.dead_letters(s)); });
    std::int64_t index = 1 + pick(static_cast<int>(std::max<std::int64_t>(head(s), 1)));
    if (!dead["ok"].empty() && chance(80))
      index =
          dead["ok"][static_cast<std::size_t>(pick(static_cast<int>(dead["ok"].size())))]["index"]
              .get<std::int64_t>();
    RedriveAction action = chance(50) ? RedriveAction::retry : RedriveAction::skip;
    both("redrive " + s, [&](Store& st) {
      auto res = st.redrive({.session_id = s, .index = index, .action = action});
      return Json{{"redriven", res.redriven}, {"has_pending", res.has_pending}};
    });
  }

  void op_put_snapshots() {
    const auto& s = any_session();
    if (head(s) == 0) return op_append();
    std::vector<SnapshotWrite> writes;
    int n = 1 + pick(2);
    for (int i = 0; i < n; ++i) {
      SnapshotWrite w;
      w.index = pick(static_cast<int>(head(s)) + 1);
      w.state = {{"at", w.index}, {"step", step_}};
      if (chance(60))
        for (int k = 0; k < 2; ++k) w.pin_event_indexes.insert(1 + pick(static_cast<int>(head(s))));
      writes.push_back(std::move(w));
    }
    std::string reducer = chance(70) ? "r1" : "r2";
    both("put_snapshots " + s, [&](Store& st) {
      st.put_snapshots(s, reducer, writes);
      return Json(true);
    });
  }

  void op_read_state() {
    const auto& s = any_session();
    StateOptions options;
    if (chance(30) && head(s) > 0) options.through_index = 1 + pick(static_cast<int>(head(s)));
    if (chance(40) && head(s) > 0)
      options.snapshot_through_index = pick(static_cast<int>(head(s)) + 1);
    std::string reducer = chance(70) ? "r1" : "r2";
    both("read_state " + s,
         [&](Store& st) { return masked_state_json(st.read_state(s, reducer, options)); });
    if (chance(30)) {
      std::vector<StateRequest> requests;
      for (const auto& ss : sessions_) requests.push_back({ss, std::nullopt, std::nullopt});
      both("read_states", [&](Store& st) {
        Json out = Json::array();
        for (const auto& r : st.read_states(reducer, requests)) out.push_back(masked_state_json(r));
        return out;
      });
    }
  }

  void op_clear() {
    const auto& s = any_session();
    ClearRequest req{.session_id = s, .if_last_index = std::nullopt, .cause = std::nullopt};
    if (chance(40))
      req.if_last_index = chance(70) ? head(s) : std::max<std::int64_t>(head(s) - 1, 0);
    if (chance(15)) {
      const ClaimInfo* c = any_claim();
      if (c && c->session == s) req.cause = EventCause{c->index, c->attempt};
    }
    const std::int64_t boundary_before = boundaries_[s];
    Json r = both("clear " + s, [&](Store& st) {
      auto res = st.clear(req);
      return Json{{"cleared", res.cleared}, {"index", res.index}, {"clear_index", res.clear_index}};
    });
    if (r.contains("ok") && r["ok"]["clear_index"].get<std::int64_t>() > boundary_before)
      just_cleared_ = s;  // I20: a clear removes the entry.
    if (r.contains("ok")) heads_[s] = std::max(heads_[s], r["ok"]["index"].get<std::int64_t>());
    // Replay the same clear sometimes (a lost acknowledgement).
    if (chance(25))
      both("clear replay " + s, [&](Store& st) {
        auto res = st.clear(req);
        return Json{
            {"cleared", res.cleared}, {"index", res.index}, {"clear_index", res.clear_index}};
      });
  }

  // Reclaim batches differ by backend (docs/semantics.md#Q12): compare whole loops.
  void op_reclaim() {
    const auto& s = any_session();
    Json done = both("reclaim loop " + s, [&](Store& st) {
      std::int64_t deleted = 0;
      for (int calls = 0; calls < 100; ++calls) {
        auto r = st.reclaim(s);
        deleted += r.deleted;
        if (r.done) return Json{{"deleted", deleted}};
      }
      return Json{{"deleted", deleted}, {"done", false}};
    });
    // Done: every event below the boundary is deleted, its id free for every session.
    if (done.contains("ok") && !done["ok"].contains("done")) reclaimed_below_[s] = boundaries_[s];
  }

  // The reads other than read() and read_tail, with bounds anywhere from 0 to past the head
  // (read() of whole sessions is compared after every step).
  void op_read_bounded() {
    const auto& s = any_session();
    const int span = static_cast<int>(head(s)) + 3;
    const std::int64_t after = pick(span);
    std::optional<std::int64_t> through;
    if (chance(50)) through = pick(span);
    switch (pick(4)) {
      case 0:
        both("read_range " + s,
             [&](Store& st) { return rows_json(st.read_range(s, after, through)); });
        return;
      case 1:
        both("read_history " + s, [&](Store& st) {
          return masked_events_json(
              st.read_history(s, {.after_index = after, .through_index = through}));
        });
        return;
      case 2:
        both("read_events " + s,
             [&](Store& st) { return masked_events_json(st.read_events(s, after)); });
        return;
      default:
        // Payloads as each backend stores their text (Postgres prints jsonb its own way):
        // compared as the JSON values they hold.
        both("read_feed_page " + s, [&](Store& st) {
          Json out = Json::array();
          for (const auto& e : st.read_feed_page(s, after))
            out.push_back({{"index", e.index},
                           {"id", e.type == kClearEventType ? std::string("<marker>") : e.id},
                           {"type", e.type},
                           {"payload", Json::parse(e.payload_json)},
                           {"created_at", e.created_at},
                           {"session_id", e.session_id}});
          return out;
        });
    }
  }

  // An operator's view: one session inspected, and every session listed, paging with a small
  // random limit (compared as a map: Redis lists in SCAN order and may list a session twice).
  void op_inspect() {
    const auto& s = any_session();
    both("inspect " + s, [&](Store& st) { return inspection_json(st.inspect_session(s)); });
    const std::int64_t limit = 1 + pick(3);
    both("list_sessions", [&](Store& st) {
      Json out = Json::object();
      for (const auto& [id, summary] : all_sessions(st, limit)) out[id] = summary_json(summary);
      return out;
    });
  }

  // Presence beside the log: a patch (a state, or null to remove) of one of three participants
  // with a lease of up to 5 s, whose expiry follows the stores' common clock, or a read.
  void op_presence() {
    const auto& s = any_session();
    auto map_json = [](const PresenceMap& m) {
      Json out = Json::object();
      for (const auto& [participant, state] : m) out[participant] = state;
      return out;
    };
    if (chance(30)) {
      both("read_presence " + s, [&](Store& st) { return map_json(st.read_presence(s)); });
      return;
    }
    const PresencePatch patch{.participant = "p" + std::to_string(1 + pick(3)),
                              .state = chance(20) ? Json() : Json{{"step", step_}},
                              .ttl_ms = 1 + pick(5000)};
    both("patch_presence " + s, [&](Store& st) { return map_json(st.patch_presence(s, patch)); });
  }

  void op_read_tail() {
    const auto& s = any_session();
    std::int64_t from = 1 + pick(static_cast<int>(head(s)) + 2);
    both("read_tail " + s, [&](Store& st) {
      auto r = st.read_tail(s, from);
      return r ? masked_events_json(*r) : Json("null");
    });
  }

  // --- comparing whole sessions and checking the invariants --------------------------------
  void check_session(const std::string& s) {
    Json seen = both("observe " + s, [&](Store& st) { return masked_observe(st, s); })["ok"];
    check_invariants(s, seen);
    seen_[s] = seen;
  }

  // --- the work index (docs/semantics.md#work-discovery, #find_work, I20) ------------------
  std::int64_t any_limit() {
    switch (pick(4)) {
      case 0:
        return 1;
      case 1:
        return 2;
      case 2:
        return 1 + pick(5);
      default:
        return chance(50) ? detail::kFindWorkPageSize : detail::kFindWorkMaxLimit;
    }
  }

  // One random page: with or without due_by_ms, from the start, after an entry of the index or
  // after an arbitrary position.
  void op_find_work() {
    FindWorkRequest req{.after = std::nullopt, .due_by_ms = std::nullopt, .limit = any_limit()};
    if (chance(50)) req.due_by_ms = std::max<std::int64_t>(0, now() - 1000 + pick(45'000));
    if (chance(40)) {
      if (chance(60) && !index_.empty()) {
        const Json& e = index_[static_cast<std::size_t>(pick(static_cast<int>(index_.size())))];
        req.after = WorkCursor{e[1].get<std::int64_t>(), e[0].get<std::string>()};
      } else {
        static const std::vector<std::string> names = {"a", "m1", "m2", "m3:x", "zz"};
        req.after = WorkCursor{std::max<std::int64_t>(0, now() - 1000 + pick(45'000)),
                               names[static_cast<std::size_t>(pick(5))]};
      }
    }
    both("find_work page", [&](Store& st) { return page_json(st.find_work(req)); });
  }

  // The whole index, paged through with pages of `limit`; REQUIREs each full page's `next` to be
  // its last entry and the pages to continue each other.
  static Json whole_index(Store& st, std::int64_t limit) {
    Json out = Json::array();
    std::optional<WorkCursor> after;
    for (int pages = 0; pages < 100; ++pages) {
      auto page = st.find_work({.after = after, .due_by_ms = std::nullopt, .limit = limit});
      for (const auto& w : page.sessions) out.push_back(Json::array({w.session_id, w.at_ms}));
      REQUIRE(static_cast<std::int64_t>(page.sessions.size()) <= limit);
      if (static_cast<std::int64_t>(page.sessions.size()) < limit) {
        REQUIRE_FALSE(page.next.has_value());
        return out;
      }
      REQUIRE(page.next.has_value());
      REQUIRE(page.next->session_id == page.sessions.back().session_id);
      REQUIRE(page.next->at_ms == page.sessions.back().at_ms);
      after = page.next;
    }
    FAIL("find_work paging did not end");
    return out;
  }

  void check_work() {
    op_find_work();
    const std::int64_t limit = 1 + pick(4);
    index_ = both("find_work all", [&](Store& st) { return whole_index(st, limit); })["ok"];
    check_work_invariant();
    if (chance(3)) check_nothing_to_sweep();
    just_cleared_.reset();
  }

  // I20: a session with a ready event has an entry no later than the earliest time one of them
  // can be claimed (a held one at its lease end, a delayed one at its available_at, any other
  // now); a session cleared by this step has none.
  void check_work_invariant() {
    INFO("I20 at step " << step_ << " (seed " << seed_ << "), index " << index_.dump());
    std::map<std::string, std::int64_t> entries;
    for (const auto& e : index_) entries[e[0].get<std::string>()] = e[1].get<std::int64_t>();
    for (const auto& s : sessions_) {
      INFO("session " << s);
      std::optional<std::int64_t> due;
      std::set<std::string> lanes;
      for (const auto& r : seen_[s]["rows"]) {
        if (r["index"].get<std::int64_t>() <= boundaries_[s] || !r["processed_at"].is_null())
          continue;  // Not pending.
        if (!r["lane"].is_null() && !lanes.insert(r["lane"].get<std::string>()).second)
          continue;                               // Behind its lane's head.
        if (!r["failed_at"].is_null()) continue;  // A dead letter.
        std::int64_t t = now();
        if (!r["claim_expires_at"].is_null())
          t = std::max(t, r["claim_expires_at"].get<std::int64_t>());
        if (!r["available_at"].is_null()) t = std::max(t, r["available_at"].get<std::int64_t>());
        due = std::min(due.value_or(t), t);
      }
      if (due) {
        INFO("claimable from " << *due);
        REQUIRE(entries.count(s) == 1);
        REQUIRE(entries[s] <= *due);
      }
      if (just_cleared_ == s) REQUIRE(entries.count(s) == 0);
    }
  }

  // sweep_work() finds nothing on either side: every writer is a2 (I20, S195).
  void check_nothing_to_sweep() {
    Json swept = both("sweep_work", [&](Store& st) {
      Json out = Json::array();
      for (const auto& w : st.sweep_work().indexed)
        out.push_back(Json::array({w.session_id, w.at_ms}));
      return out;
    });
    INFO("sweep_work at step " << step_ << " (seed " << seed_ << ")");
    REQUIRE(swept["ok"] == Json::array());
  }

  void check_invariants(const std::string& s, const Json& seen) {
    INFO("invariants of session " << s << " at step " << step_ << " (seed " << seed_ << ")");
    const Json& rows = seen["rows"];
    std::int64_t clear_index = 0;
    auto st = sub_.store().read_state(s, "r1");
    if (st.clear_index) clear_index = *st.clear_index;
    // 1, 5: dense visible log from max(clearIndex, 1) to the head; nothing below the boundary.
    std::int64_t expect = std::max<std::int64_t>(clear_index, 1);
    for (const auto& r : rows) {
      REQUIRE(r["index"].get<std::int64_t>() == expect);
      ++expect;
    }
    REQUIRE(expect - 1 == (rows.empty() ? std::max<std::int64_t>(clear_index, 0) : head(s)));
    // 4: the boundary only grows and never passes the head.
    REQUIRE(clear_index >= boundaries_[s]);
    boundaries_[s] = clear_index;
    if (clear_index > 0) {
      // 3: the marker.
      REQUIRE(!rows.empty());
      const auto& m = rows.front();
      REQUIRE(m["type"] == kClearEventType);
      REQUIRE(m["payload"].is_null());
      REQUIRE(m["cause"].is_null());
      REQUIRE(m["lane"].is_null());
      REQUIRE(m["processed_at"] == m["created_at"]);
    }
    bool pending = false;
    std::set<std::string> ids;
    std::map<std::string, std::int64_t> lane_heads;
    std::set<std::int64_t> dead;
    for (const auto& r : rows) {
      auto index = r["index"].get<std::int64_t>();
      // 6: ids unique among visible events (across sessions via the global set).
      if (r["type"] != kClearEventType) {
        REQUIRE(ids.insert(r["id"].get<std::string>()).second);
        auto [it, fresh] =
            owners_.emplace(r["id"].get<std::string>(), s + "#" + std::to_string(index));
        if (!fresh && it->second != s + "#" + std::to_string(index)) {
          // An id may move only within its session (reuse after a clear) or after reclaim
          // deleted its owner (an id the store drew again, S243).
          if (it->second.rfind(s + "#", 0) != 0) {
            const auto hash = it->second.rfind('#');
            const std::string owner = it->second.substr(0, hash);
            INFO("id " << r["id"] << " was owned by " << it->second);
            REQUIRE(std::stoll(it->second.substr(hash + 1)) < reclaimed_below_[owner]);
          }
          it->second = s + "#" + std::to_string(index);
        }
      }
      bool processed = !r["processed_at"].is_null();
      // 10: settled is final.
      auto key = s + "#" + std::to_string(index);
      if (settled_.count(key)) REQUIRE(processed);
      if (processed) settled_.insert(key);
      if (!r["processed_by_attempt"].is_null() || !r["returned_event_ids"].is_null())
        REQUIRE(processed);
      // 11: claims.
      REQUIRE(r["claim_holder"].is_null() == r["claim_expires_at"].is_null());
      if (!r["first_claimed_at"].is_null())
        REQUIRE(r["first_claimed_at"].get<std::int64_t>() <=
                r["last_claimed_at"].get<std::int64_t>());
      REQUIRE(r["attempt_count"].get<std::int64_t>() >= attempts_[key]);
      attempts_[key] = r["attempt_count"].get<std::int64_t>();
      // 14: a dead letter has no claim (and no delay: docs/semantics.md#delayed-work).
      if (!r["failed_at"].is_null() && !processed) {
        REQUIRE(r["claim_holder"].is_null());
        REQUIRE(r["available_at"].is_null());
        REQUIRE(r["failure_count"].get<std::int64_t>() >= 1);
        dead.insert(index);
      }
      if (index > clear_index && !processed) {
        pending = true;
        if (!r["lane"].is_null()) lane_heads.emplace(r["lane"].get<std::string>(), index);
      }
      // 13: children carry their parent's cause and are listed by it.
      if (!r["returned_event_ids"].is_null() && r["returned_event_ids"].size() > 0)
        for (const auto& child : rows)
          if (std::find(r["returned_event_ids"].begin(), r["returned_event_ids"].end(),
                        child["id"]) != r["returned_event_ids"].end()) {
            REQUIRE(child["cause"]["index"] == r["index"]);
            REQUIRE(child["cause"]["attempt"] == r["processed_by_attempt"]);
            REQUIRE(child["index"].get<std::int64_t>() > index);
          }
    }
    // 15: has_pending.
    REQUIRE(seen["has_pending"].get<bool>() == pending);
    // 8: dead letters are exactly the failed, unprocessed events above the boundary.
    std::set<std::int64_t> listed;
    for (const auto& d : seen["dead_letters"]) listed.insert(d.get<std::int64_t>());
    std::set<std::int64_t> expected_dead;
    for (auto d : dead)
      if (d > clear_index) expected_dead.insert(d);
    REQUIRE(listed == expected_dead);
    // 16: no checkpoint below the boundary is ever returned.
    if (st.snapshot) REQUIRE(st.snapshot->index >= clear_index);
    if (st.head_index) REQUIRE(*st.head_index >= clear_index);
  }

  std::mt19937_64 rng_;
  std::uint64_t seed_;
  int steps_;
  int step_ = 0;
  Side ref_;
  Side sub_;
  std::vector<std::string> sessions_ = {"m1", "m2", "m3:x"};
  std::map<std::string, std::int64_t> heads_;
  std::map<std::string, std::int64_t> boundaries_;
  std::map<std::string, Json> seen_;         // The last observation of each session.
  Json index_ = Json::array();               // The whole work index after the last step.
  std::optional<std::string> just_cleared_;  // The session this step's clear cleared.
  std::map<std::string, std::string> owners_;
  // Per session: the boundary below which a finished reclaim deleted every event.
  std::map<std::string, std::int64_t> reclaimed_below_;
  std::set<std::string> settled_;
  std::map<std::string, std::int64_t> attempts_;
  std::vector<ClaimInfo> claims_;
  std::vector<AppendCall> appended_;
  std::vector<CompleteRequest> completions_;
  std::vector<CompleteManyRequest> batches_;
  int next_id_ = 0;
  std::vector<std::string> made_ids_;  // Every id new_id made, in order.
  std::shared_ptr<ScriptedIdSource> ref_ids_ = std::make_shared<ScriptedIdSource>();
  std::shared_ptr<ScriptedIdSource> sub_ids_ = std::make_shared<ScriptedIdSource>();
  std::map<std::string, int> tally_;
};

}  // namespace

TEST_CASE("model check: random operations agree with the memory reference and keep the invariants",
          "[model][S197]") {
#ifdef NDEBUG
  constexpr std::uint64_t kDefaultSteps = 1500, kDefaultRuns = 4;
#else
  constexpr std::uint64_t kDefaultSteps = 500, kDefaultRuns = 2;
#endif
  const auto steps = static_cast<int>(env_u64("A2_MODEL_STEPS", kDefaultSteps));
  for_each_run("model check on " + backend().name(), std::to_string(steps) + " steps", kDefaultRuns,
               [&](std::uint64_t seed) {
                 ModelRun run(seed, steps);
                 try {
                   run.run();
                 } catch (const std::runtime_error& e) {
                   if (std::string(e.what()) != "diverged") throw;
                 }
               });
}

}  // namespace a2::conformance
