// SPDX-License-Identifier: MIT
// The concurrent model check (docs/semantics.md#the-concurrent-model-check): rounds of random
// operations from three threads on one store under test, opened with the defaults users run with
// (pool, write connections, write groups), and each round's history checked for linearizability
// against the memory reference: some order of the round's calls, keeping every call that returned
// before another began ahead of it, must give every call, applied one by one to the reference,
// the result it got, and leave the reference showing what the store under test shows after the
// round (every session's rows, dead letters, has_pending, head, read_state, and the work index).
//
// The clock stands still during a round (every call sees one now) and moves between rounds,
// where the check also reclaims (whole loops, compared with the reference: batch sizes differ by
// backend, Q12) and requires sweep_work() to find nothing (I20 under concurrent writers). Every
// id is named by the threads; some are contested: two threads of a round may append the same id.
//
// Environment: A2_MODEL_SEED (default: a fresh seed, printed), A2_MODEL_ROUNDS (rounds per run),
// A2_MODEL_RUNS (runs with consecutive seeds). Defaults: 3 runs of 150 rounds in optimized builds,
// 2 of 40 in debug and sanitizer builds.

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <iostream>
#include <latch>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "a2/detail/constants.hpp"
#include "a2/memory.hpp"
#include "harness.hpp"
#include "support/support.hpp"
#include "views.hpp"

namespace a2::conformance {
namespace {

using namespace model;  // The checks' views (views.hpp).

// Results and pictures as plain JSON values, objects compared whatever their members' order:
// Postgres returns payloads and states as jsonb orders them (docs/semantics.md#json-values).
using Value = nlohmann::json;
Value value_of(const Json& j) { return Value::parse(j.dump()); }

constexpr int kThreads = 3;
// A round: 12 calls, at most 34,650 orders to search (a complete_in_sessions call, rare, counts
// once per session it names: split()).
constexpr int kCallsPerThread = 4;
const std::vector<std::string> kSessions = {"c1", "c2", "c3:x"};

// One call of a round: what it does (replayable on any store), when it ran, what it returned.
struct Call {
  int thread = -1;  // -1: the main thread, between rounds.
  std::string what{};
  std::function<Json(Store&)> run{};
  bool writes = true;  // false: a read, which changes nothing on the reference either.
  std::int64_t now = 0;
  std::uint64_t start = 0;  // Ticks of one atomic counter: a call that ended before another
  std::uint64_t end = 0;    // started has the smaller end than the other's start.
  Value result{};
};

// Runs `call` on `store`: its outcome (result or a2::Error code); any other exception as such.
Value run_call(const Call& call, Store& store) {
  try {
    return value_of(outcome([&] { return call.run(store); }));
  } catch (const std::exception& e) {
    return Value{{"exception", e.what()}};
  }
}

// Everything the check compares after a round.
Value picture(Store& store) {
  Json out = Json::object();
  for (const auto& s : kSessions) {
    auto head = store.head(s);
    out[s] = {{"observe", masked_observe(store, s)},
              {"head", Json::array({head.head_index, head.clear_index})},
              {"state", masked_state_json(store.read_state(s, "r1"))}};
  }
  out["work"] = page_json(store.find_work(
      {.after = std::nullopt, .due_by_ms = std::nullopt, .limit = detail::kFindWorkMaxLimit}));
  return value_of(out);
}

std::string describe(const std::vector<Call>& calls) {
  std::ostringstream out;
  for (const auto& c : calls) {
    out << "  t" << c.thread << " [" << c.start << ", " << c.end << "] at " << c.now << " "
        << c.what << "\n    -> " << c.result.dump() << "\n";
  }
  return out.str();
}

// The reference: the memory store after every call linearized so far (`log`), and the search for
// an order of a round's calls. The search applies candidates to the reference in place; to take
// back a write it restores the copy of the reference taken when the round began and replays the
// round's calls ordered so far, so a backtrack costs at most a round's calls, however long the
// log.
class Linearizer {
 public:
  Linearizer()
      : clock_(std::make_shared<ManualClock>(kT0)), ref_(memory::open({.clock = clock_})) {}

  Store& reference() { return *ref_; }
  const std::vector<Call>& log() const { return log_; }
  std::uint64_t tries() const { return tries_; }
  // After explain() found nothing: where the orders it tried stopped (the longest order per call
  // that stopped one), longest first.
  std::string dead_ends() const {
    std::vector<std::pair<std::size_t, std::string>> all;
    for (const auto& [where, dead_end] : dead_ends_) all.push_back(dead_end);
    std::sort(all.begin(), all.end(),
              [](const auto& a, const auto& b) { return a.first > b.first; });
    std::string out;
    for (std::size_t k = 0; k < all.size() && k < 8; ++k) out += "\n  - " + all[k].second;
    return out;
  }

  // A call of the main thread while no other runs: applied, compared, logged. False if the
  // reference answered otherwise, and the reference is then as it was.
  bool apply_alone(const Call& call) {
    const auto before = memory_store().copy_state();
    clock_->set(call.now);
    if (run_call(call, *ref_) != call.result) {
      memory_store().restore_state(before);
      return false;
    }
    log_.push_back(call);
    return true;
  }

  // Looks for an order of `round` as the file's comment says; found: the calls join the log
  // in that order and the reference shows `seen`.
  bool explain(const std::vector<Call>& round, const Value& seen) {
    round_ = &round;
    seen_ = &seen;
    done_.assign(round.size(), false);
    order_.clear();
    dead_ends_.clear();
    round_start_ = memory_store().copy_state();
    if (!search()) return false;
    for (auto i : order_) log_.push_back(round[i]);
    return true;
  }

 private:
  static constexpr std::uint64_t kMaxTries = 2'000'000;

  bool search() {
    const auto& round = *round_;
    if (order_.size() == round.size()) {
      const Value shown = picture(*ref_);
      if (shown == *seen_) return true;
      note_dead_end("the picture",
                    "every call gave its result, but the reference then differs from the store "
                    "(a JSON patch from the store's picture to the reference's): " +
                        Value::diff(*seen_, shown).dump().substr(0, 3000));
      return false;
    }
    // A call may come next if no other call left ended before it started.
    std::uint64_t first_end = UINT64_MAX;
    for (std::size_t i = 0; i < round.size(); ++i)
      if (!done_[i]) first_end = std::min(first_end, round[i].end);
    std::vector<std::size_t> candidates;
    for (std::size_t i = 0; i < round.size(); ++i)
      if (!done_[i] && round[i].start < first_end) candidates.push_back(i);
    std::sort(candidates.begin(), candidates.end(),
              [&](auto a, auto b) { return round[a].start < round[b].start; });
    for (auto i : candidates) {
      if (++tries_ > kMaxTries) throw std::runtime_error("the search gave up");
      clock_->set(round[i].now);
      const Value answer = run_call(round[i], *ref_);
      if (answer != round[i].result) {
        note_dead_end("t" + std::to_string(round[i].thread) + " " + round[i].what,
                      "the reference answers otherwise (a JSON patch from the result to the "
                      "reference's answer): " +
                          Value::diff(round[i].result, answer).dump().substr(0, 3000));
      } else {
        done_[i] = true;
        order_.push_back(i);
        if (search()) return true;
        order_.pop_back();
        done_[i] = false;
      }
      if (round[i].writes) take_back();
    }
    return false;
  }

  // Keeps, per call that failed (or the final picture), the first dead end of the longest order
  // that ended there.
  void note_dead_end(const std::string& where, const std::string& why) {
    auto& [depth, text] = dead_ends_[where];
    if (!text.empty() && depth >= order_.size()) return;
    depth = order_.size();
    std::string path;
    for (auto i : order_)
      path += " t" + std::to_string((*round_)[i].thread) + ":" + (*round_)[i].what + ";";
    text =
        "after" + (path.empty() ? std::string(" nothing") : path) + "\n    " + where + ": " + why;
  }

  detail::MemoryStore& memory_store() { return dynamic_cast<detail::MemoryStore&>(*ref_); }

  // The reference after the log and then the round's calls ordered so far.
  void take_back() {
    memory_store().restore_state(round_start_);
    for (auto i : order_) {
      clock_->set((*round_)[i].now);
      (void)run_call((*round_)[i], *ref_);
    }
  }

  std::shared_ptr<ManualClock> clock_;
  std::unique_ptr<Store> ref_;
  std::vector<Call> log_;
  const std::vector<Call>* round_ = nullptr;
  const Value* seen_ = nullptr;
  std::vector<bool> done_;
  std::vector<std::size_t> order_;
  detail::MemoryStateCopy round_start_;  // The reference when the round began.
  std::uint64_t tries_ = 0;
  std::map<std::string, std::pair<std::size_t, std::string>> dead_ends_;
};

struct ClaimInfo {
  std::string session;
  std::int64_t index;
  std::int64_t attempt;
};

// One thread of the check: makes its calls from what it has seen (its claims, its appends and
// completions to replay, heads and dead letters), as a worker would.
class Actor {
 public:
  Actor(int index, std::uint64_t seed)
      : index_(index), rng_(seed), holder_("w" + std::to_string(index)) {}

  // What this thread found wrong while it played (the main thread reports it), emptied.
  std::vector<std::string> take_problems() { return std::exchange(problems_, {}); }

  // Makes `count` calls on `store` at `now`, stamping them from `ticks`.
  std::vector<Call> play(Store& store, int round, std::int64_t now, int count,
                         std::atomic<std::uint64_t>& ticks) {
    round_ = round;
    now_ = now;
    std::vector<Call> calls;
    for (int i = 0; i < count; ++i) {
      learn_ = nullptr;
      Call call = next();
      call.thread = index_;
      call.now = now;
      call.start = ticks.fetch_add(1);
      call.result = run_call(call, store);
      call.end = ticks.fetch_add(1);
      if (!parts_.empty()) {
        split(call, calls);
        continue;
      }
      if (learn_ && call.result.contains("ok")) learn_(call.result["ok"]);
      calls.push_back(std::move(call));
    }
    return calls;
  }

 private:
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  bool chance(int percent) { return pick(100) < percent; }
  const std::string& any_session() { return kSessions[static_cast<std::size_t>(pick(3))]; }
  template <class T>
  const T& any_of(const std::vector<T>& v) {
    return v[static_cast<std::size_t>(pick(static_cast<int>(v.size())))];
  }
  std::int64_t head(const std::string& s) { return heads_[s]; }
  std::int64_t near_now() { return now_ - 500 + pick(3500); }
  std::optional<std::string> any_lane() {
    const int roll = pick(5);
    if (roll == 0) return std::string("L1");
    if (roll == 1) return std::string("L2");
    return std::nullopt;
  }

  // Mostly this thread's own ids; one in ten contested: the same few names in every thread of a
  // round, so threads race to store them (in one session or in two).
  std::string new_id(const char* kind) {
    if (chance(10)) return "x" + std::to_string(round_) + "." + std::to_string(pick(2));
    return "t" + std::to_string(index_) + kind + std::to_string(++next_id_);
  }

  void note_rows(const std::string& s, const Value& rows) {
    for (const auto& r : rows) heads_[s] = std::max(heads_[s], r["index"].get<std::int64_t>());
  }
  void note_claim(const std::string& s, const Value& claim) {
    for (const auto& e : claim["events"])
      claims_.push_back(
          {s, e["index"].get<std::int64_t>(), e["attempt_count"].get<std::int64_t>()});
    if (claims_.size() > 24) claims_.erase(claims_.begin(), claims_.begin() + 8);
  }
  std::optional<ClaimNext> maybe_claim_next() {
    if (!chance(30)) return std::nullopt;
    ClaimNext next{.holder = holder_};
    next.ttl_ms = kTtl;
    if (chance(50)) next.max_events = 1 + pick(3);
    return next;
  }

  Call next() {
    const int roll = pick(100);
    if (roll < 22) return append();
    if (roll < 26) return replay_append();
    if (roll < 42) return claim();
    if (roll < 51) return complete();
    if (roll < 54) return complete_in_sessions();
    if (roll < 57) return replay_complete();
    if (roll < 61) return complete_many();
    if (roll < 68) return fail();
    if (roll < 72) return redrive();
    if (roll < 75) return renew();
    if (roll < 78) return release();
    if (roll < 82) return clear();
    if (roll < 85) return put_snapshots();
    return read();
  }

  Call append() {
    const std::string s = any_session();
    std::vector<NewEvent> batch;
    const int n = 1 + pick(3);
    for (int i = 0; i < n; ++i) {
      NewEvent e;
      e.id = new_id("e");
      e.type = chance(50) ? "job" : "note";
      e.payload = {{"t", index_}, {"n", next_id_}};
      e.lane = any_lane();
      e.settled = chance(20);
      if (!e.settled && chance(15)) e.available_at_ms = near_now();
      if (chance(12) && !claims_.empty()) {
        const auto& c = any_of(claims_);
        if (c.session == s) e.cause = EventCause{c.index, c.attempt};
      }
      batch.push_back(std::move(e));
    }
    AppendOptions options;
    if (chance(5) && head(s) > 0) options.origin_index = 1 + pick(static_cast<int>(head(s)));
    appended_.push_back({s, batch, options});
    if (appended_.size() > 16) appended_.erase(appended_.begin());
    return append_call(appended_.back());
  }

  struct AppendCall {
    std::string session;
    std::vector<NewEvent> batch;
    AppendOptions options;
  };
  Call append_call(const AppendCall& a) {
    learn_ = [this, s = a.session](const Value& ok) { note_rows(s, ok["events"]); };
    return {.what = "append " + a.session + " " + ids_of(a.batch), .run = [a](Store& st) {
              auto res = st.append(a.session, a.batch, a.options);
              return Json{{"events", rows_json(res.events)}, {"has_pending", res.has_pending}};
            }};
  }
  template <class E>
  static std::string ids_of(const std::vector<E>& events) {
    std::string out = "[";
    for (const auto& e : events) out += (out.size() > 1 ? "," : "") + e.id.value_or("");
    return out + "]";
  }

  Call replay_append() {
    if (appended_.empty()) return append();
    Call call = append_call(any_of(appended_));
    call.what += " (replay)";
    return call;
  }

  Call claim() {
    const std::string s = any_session();
    ClaimRequest req{.session_id = s, .holder = holder_, .ttl_ms = kTtl};
    if (chance(50)) req.max_events = 1 + pick(3);
    learn_ = [this, s](const Value& ok) { note_claim(s, ok); };
    return {.what = "claim " + s,
            .run = [req](Store& st) { return claim_json(st.claim_available(req)); }};
  }

  std::vector<ChildEvent> children() {
    std::vector<ChildEvent> out;
    const int n = pick(3);
    for (int i = 0; i < n; ++i) {
      ChildEvent ch;
      ch.id = new_id("c");
      ch.type = "child";
      ch.payload = {{"t", index_}};
      ch.lane = any_lane();
      ch.settled = chance(40);
      out.push_back(std::move(ch));
    }
    return out;
  }

  Call complete_call(const CompleteRequest& req, const char* what) {
    learn_ = [this, req](const Value& ok) {
      note_rows(req.session_id, ok["events"]);
      if (ok.contains("next")) note_claim(req.session_id, ok["next"]);
    };
    return {.what = what + (" " + req.session_id + "#" + std::to_string(req.index) + "." +
                            std::to_string(req.attempt) + " " + ids_of(req.events)),
            .run = [req](Store& st) { return complete_json(st.complete_attempt(req)); }};
  }

  Call complete() {
    if (claims_.empty()) return claim();
    const ClaimInfo c = any_of(claims_);
    CompleteRequest req{.session_id = c.session,
                        .index = c.index,
                        .attempt = c.attempt,
                        .events = children(),
                        .claim_next = maybe_claim_next()};
    completions_.push_back(req);
    if (completions_.size() > 16) completions_.erase(completions_.begin());
    return complete_call(req, "complete");
  }

  Call replay_complete() {
    if (completions_.empty()) return complete();
    return complete_call(any_of(completions_), "complete (replay)");
  }

  // complete_attempts of up to three of this thread's claims in one session.
  Call complete_many() {
    auto req = draw_complete_many();
    if (!req) return complete();
    return complete_many_call(*req);
  }

  // A complete_attempts request of up to three of this thread's claims in one of their sessions;
  // none without claims or when the draw listed none.
  std::optional<CompleteManyRequest> draw_complete_many() {
    if (claims_.empty()) return std::nullopt;
    const std::string s = any_of(claims_).session;
    CompleteManyRequest req{.session_id = s, .claim_next = maybe_claim_next()};
    std::set<std::int64_t> listed;
    for (const auto& c : claims_) {
      if (c.session != s || req.completions.size() == 3 || !chance(70)) continue;
      if (!listed.insert(c.index).second) continue;
      req.completions.push_back(
          {c.index, c.attempt, chance(50) ? children() : std::vector<ChildEvent>{}});
    }
    if (req.completions.empty()) return std::nullopt;
    return req;
  }

  static std::string listed(const CompleteManyRequest& req) {
    std::string out;
    for (const auto& c : req.completions)
      out += "#" + std::to_string(c.index) + "." + std::to_string(c.attempt);
    return out;
  }

  Call complete_many_call(const CompleteManyRequest& req,
                          const std::string& what = "complete_many") {
    learn_ = [this, s = req.session_id](const Value& ok) {
      for (const auto& r : ok["results"]) note_rows(s, r["events"]);
      if (ok.contains("next")) note_claim(s, ok["next"]);
    };
    return {.what = what + " " + req.session_id + " " + listed(req),
            .run = [req](Store& st) { return complete_many_json(st.complete_attempts(req)); }};
  }

  // complete_in_sessions of two sessions' requests, each drawn as complete_many draws one. The
  // call is not atomic across its sessions (docs/semantics.md#complete_in_sessions): play()
  // takes each request as a call of its own, a complete_attempts of that request alone, within
  // the call's interval (split()).
  Call complete_in_sessions() {
    std::vector<CompleteManyRequest> requests;
    for (int tries = 0; tries < 4 && requests.size() < 2; ++tries) {
      auto q = draw_complete_many();
      if (!q) break;
      if (!requests.empty() && requests[0].session_id == q->session_id) continue;
      requests.push_back(std::move(*q));
    }
    if (requests.size() < 2) return complete_many();
    std::string what = "complete_in_sessions";
    for (const auto& q : requests) {
      parts_.push_back(complete_many_call(q, "complete_in_sessions part"));
      part_learn_.push_back(learn_);
      what += " " + q.session_id + " " + listed(q);
    }
    learn_ = nullptr;
    return {.what = what, .run = [requests](Store& st) {
              Json out = Json::array();
              for (auto& o : st.complete_in_sessions(requests))
                out.push_back(outcome([&] { return complete_many_json(o.value()); }));
              return out;
            }};
  }

  // The requests of a complete_in_sessions call (parts_) as calls of their own, each with the
  // call's interval and its own outcome. A call refused whole must be invalid_argument (two
  // requests drew one contested child id), which changes nothing: no part is kept.
  void split(const Call& call, std::vector<Call>& calls) {
    auto parts = std::move(parts_);
    auto learners = std::move(part_learn_);
    parts_.clear();
    part_learn_.clear();
    // No Catch assertion here: it runs on the actor's thread (Catch is not thread-safe); the
    // main thread reports what went wrong (problems()).
    if (call.result.contains("error") || call.result.contains("exception")) {
      if (call.result.value("error", "") != "invalid_argument")
        problems_.push_back(call.what + " -> " + call.result.dump() +
                            ": a call refused whole must be invalid_argument");
      return;
    }
    if (call.result["ok"].size() != parts.size()) {
      problems_.push_back(call.what + " -> " + call.result.dump() +
                          ": not one outcome per request");
      return;
    }
    for (std::size_t i = 0; i < parts.size(); ++i) {
      Call part = std::move(parts[i]);
      part.thread = call.thread;
      part.now = call.now;
      part.start = call.start;
      part.end = call.end;
      part.result = call.result["ok"][i];
      if (part.result.contains("ok")) learners[i](part.result["ok"]);
      calls.push_back(std::move(part));
    }
  }

  Call fail() {
    if (claims_.empty()) return claim();
    const ClaimInfo c = any_of(claims_);
    FailRequest req{.session_id = c.session,
                    .index = c.index,
                    .attempt = c.attempt,
                    .error = "boom",
                    .max_failures = 1 + pick(3)};
    if (chance(40)) req.retry_at_ms = near_now();
    return {.what = "fail " + c.session + "#" + std::to_string(c.index) + "." +
                    std::to_string(c.attempt),
            .run = [req](Store& st) {
              auto res = st.fail_attempt(req);
              return Json{{"verdict", std::string(to_string(res.verdict))},
                          {"failure_count", res.failure_count}};
            }};
  }

  // A redrive of a dead letter this thread saw (dead_letters is a call of its own), else of any
  // index up to past the head.
  Call redrive() {
    const std::string s = any_session();
    if (dead_[s].empty() || chance(40)) {
      learn_ = [this, s](const Value& ok) {
        dead_[s].clear();
        for (const auto& r : ok) dead_[s].push_back(r["index"].get<std::int64_t>());
      };
      return {.what = "dead_letters " + s,
              .run = [s](Store& st) { return rows_json(st.dead_letters(s)); },
              .writes = false};
    }
    RedriveRequest req{
        .session_id = s,
        .index = chance(80) ? any_of(dead_[s]) : 1 + pick(static_cast<int>(head(s)) + 1),
        .action = chance(50) ? RedriveAction::retry : RedriveAction::skip};
    return {.what = "redrive " + s + "#" + std::to_string(req.index) + " " +
                    std::string(to_string(req.action)),
            .run = [req](Store& st) {
              auto res = st.redrive(req);
              return Json{{"redriven", res.redriven}, {"has_pending", res.has_pending}};
            }};
  }

  Call renew() {
    if (claims_.empty()) return claim();
    const ClaimInfo c = any_of(claims_);
    RenewRequest req{.session_id = c.session,
                     .holder = holder_,
                     .claims = {{c.index, c.attempt}},
                     .ttl_ms = chance(50) ? kTtl : 1 + pick(5000)};
    return {.what = "renew " + c.session + "#" + std::to_string(c.index), .run = [req](Store& st) {
              auto res = st.renew_claims(req);
              std::sort(res.renewed.begin(), res.renewed.end());
              std::sort(res.superseded.begin(), res.superseded.end());
              return Json{{"renewed", res.renewed}, {"superseded", res.superseded}};
            }};
  }

  Call release() {
    if (claims_.empty()) return claim();
    const ClaimInfo c = any_of(claims_);
    ReleaseRequest req{
        .session_id = c.session, .holder = holder_, .claims = {{c.index, c.attempt}}};
    if (chance(40)) req.available_at_ms = near_now();
    return {.what = "release " + c.session + "#" + std::to_string(c.index),
            .run = [req](Store& st) {
              auto res = st.release_claims(req);
              std::sort(res.released.begin(), res.released.end());
              std::sort(res.not_held.begin(), res.not_held.end());
              return Json{{"released", res.released}, {"not_held", res.not_held}};
            }};
  }

  Call clear() {
    const std::string s = any_session();
    ClearRequest req{.session_id = s};
    if (chance(40)) req.if_last_index = head(s);
    if (chance(15) && !claims_.empty()) {
      const auto& c = any_of(claims_);
      if (c.session == s) req.cause = EventCause{c.index, c.attempt};
    }
    learn_ = [this, s](const Value& ok) {
      heads_[s] = std::max(heads_[s], ok["index"].get<std::int64_t>());
    };
    return {.what = "clear " + s +
                    (req.if_last_index ? " if " + std::to_string(*req.if_last_index) : ""),
            .run = [req](Store& st) {
              auto res = st.clear(req);
              return Json{
                  {"cleared", res.cleared}, {"index", res.index}, {"clear_index", res.clear_index}};
            }};
  }

  Call put_snapshots() {
    const std::string s = any_session();
    SnapshotWrite w;
    w.index = pick(static_cast<int>(head(s)) + 1);
    w.state = {{"t", index_}, {"round", round_}};
    if (chance(50) && head(s) > 0) w.pin_event_indexes.insert(1 + pick(static_cast<int>(head(s))));
    return {.what = "put_snapshots " + s + "@" + std::to_string(w.index), .run = [s, w](Store& st) {
              st.put_snapshots(s, "r1", {w});
              return Json(true);
            }};
  }

  Call read() {
    const std::string s = any_session();
    switch (pick(5)) {
      case 0:
        // On Redis the rows' metadata may be of a later instant than the read's bounds
        // (docs/redis-layout.md#reads): there the check reads the public events, which do not
        // change, and compares read() only when no call runs (the picture).
        if (backend().name() == "redis")
          return {.what = "read_history " + s,
                  .run = [s](Store& st) { return masked_events_json(st.read_history(s)); },
                  .writes = false};
        learn_ = [this, s](const Value& ok) { note_rows(s, ok); };
        return {.what = "read " + s,
                .run = [s](Store& st) { return rows_json(st.read(s)); },
                .writes = false};
      case 1:
        return {.what = "head " + s,
                .run =
                    [s](Store& st) {
                      auto h = st.head(s);
                      return Json::array({h.head_index, h.clear_index});
                    },
                .writes = false};
      case 2:
        return {.what = "read_state " + s,
                .run = [s](Store& st) { return masked_state_json(st.read_state(s, "r1")); },
                .writes = false};
      case 3:
        return {.what = "held_claims " + s,
                .run =
                    [s, holder = holder_](Store& st) {
                      Json out = Json::array();
                      for (const auto& h : st.held_claims(s, holder))
                        out.push_back(Json::array({h.index, h.attempt, h.expires_at}));
                      return out;
                    },
                .writes = false};
      default:
        return {.what = "find_work",
                .run =
                    [](Store& st) {
                      return page_json(st.find_work({.after = std::nullopt,
                                                     .due_by_ms = std::nullopt,
                                                     .limit = detail::kFindWorkMaxLimit}));
                    },
                .writes = false};
    }
  }

  int index_;
  std::mt19937_64 rng_;
  std::string holder_;
  int round_ = 0;
  std::int64_t now_ = kT0;
  int next_id_ = 0;
  std::function<void(const Value&)> learn_;
  // The requests of the complete_in_sessions call next() returned, and what each teaches.
  std::vector<Call> parts_;
  std::vector<std::function<void(const Value&)>> part_learn_;
  std::vector<std::string> problems_;
  std::map<std::string, std::int64_t> heads_;
  std::map<std::string, std::vector<std::int64_t>> dead_;
  std::vector<ClaimInfo> claims_;
  std::vector<AppendCall> appended_;
  std::vector<CompleteRequest> completions_;
};

class ConcurrentRun {
 public:
  ConcurrentRun(std::uint64_t seed, int rounds)
      : rng_(seed), seed_(seed), rounds_(rounds), sub_(backend().fresh()) {
    for (int t = 0; t < kThreads; ++t)
      actors_.emplace_back(t, seed * 7919 + static_cast<std::uint64_t>(t));
  }

  void run() {
    for (round_ = 0; round_ < rounds_; ++round_) {
      between_rounds();
      std::vector<Call> calls = play_round();
      const Value seen = picture(*sub_.store);
      bool explained = false;
      try {
        explained = reference_.explain(calls, seen);
      } catch (const std::runtime_error& e) {
        FAIL_CHECK(e.what() << " after " << reference_.tries() << " tries");
      }
      if (!explained) {
        FAIL("round " << round_ << " (seed " << seed_
                      << ") is not linearizable: no order of its calls gives their results and "
                         "what the store shows after it\n"
                      << describe(calls)
                      << "  where the orders tried stopped:" << reference_.dead_ends()
                      << "\n  the store's work index after the round: " << seen["work"].dump()
                      << "\n  the store after the round: " << seen.dump().substr(0, 4000));
      }
      ++rounds_done_;
    }
    std::cout << "  " << rounds_done_ << " rounds, " << reference_.log().size()
              << " calls linearized, " << reference_.tries() << " tries" << std::endl;
  }

 private:
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

  std::vector<Call> play_round() {
    const std::int64_t now = sub_.clock->now_ms();
    std::atomic<std::uint64_t> ticks{0};
    std::vector<std::vector<Call>> per_thread(kThreads);
    std::latch start(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        start.arrive_and_wait();
        per_thread[static_cast<std::size_t>(t)] = actors_[static_cast<std::size_t>(t)].play(
            *sub_.store, round_, now, kCallsPerThread, ticks);
      });
    for (auto& t : threads) t.join();
    for (auto& actor : actors_)
      for (const auto& problem : actor.take_problems())
        FAIL("round " << round_ << " (seed " << seed_ << "): " << problem);
    std::vector<Call> calls;
    for (auto& p : per_thread)
      for (auto& c : p) calls.push_back(std::move(c));
    return calls;
  }

  // The main thread alone: the clock moves, a session is reclaimed, sweep_work finds nothing.
  void between_rounds() {
    if (pick(100) < 30) sub_.clock->advance(pick(2) == 0 ? pick(2000) : pick(40'000));
    if (pick(100) < 10) {
      const std::string s = kSessions[static_cast<std::size_t>(pick(3))];
      Call call{.what = "reclaim loop " + s, .run = [s](Store& st) {
                  std::int64_t deleted = 0;
                  for (int calls = 0; calls < 100; ++calls) {
                    auto r = st.reclaim(s);
                    deleted += r.deleted;
                    if (r.done) return Json{{"deleted", deleted}};
                  }
                  return Json{{"deleted", deleted}, {"done", false}};
                }};
      call.now = sub_.clock->now_ms();
      call.result = run_call(call, *sub_.store);
      INFO("round " << round_ << " (seed " << seed_ << "): " << call.what << " -> "
                    << call.result.dump());
      REQUIRE(reference_.apply_alone(call));
    }
    auto swept = sub_.store->sweep_work();
    INFO("sweep_work before round " << round_ << " (seed " << seed_ << ")");
    REQUIRE(swept.indexed.empty());
  }

  std::mt19937_64 rng_;
  std::uint64_t seed_;
  int rounds_;
  int round_ = 0;
  int rounds_done_ = 0;
  Fixture sub_;
  std::vector<Actor> actors_;
  Linearizer reference_;
};

// A call of a made-up history: `thread` appended `id` to c1 between the ticks `start` and `end`.
Call made_up_append(int thread, std::uint64_t start, std::uint64_t end, const std::string& id) {
  NewEvent e;
  e.id = id;
  e.type = "job";
  e.payload = Json::object();
  return Call{
      .thread = thread,
      .what = "append c1 " + id,
      .run =
          [e](Store& st) {
            auto res = st.append("c1", {e});
            return Json{{"events", rows_json(res.events)}, {"has_pending", res.has_pending}};
          },
      .now = kT0,
      .start = start,
      .end = end};
}

}  // namespace

// The search itself, on histories made up for it: it must find the order that explains one and
// reject those that no order explains.
TEST_CASE("concurrent check: the linearizability search finds the order or rejects the history",
          "[model][S247]") {
  // Results as a store gives them when the calls run in `order`; returns the store.
  auto answer = [](std::vector<Call>& calls, const std::vector<std::size_t>& order) {
    auto store = memory::open({.clock = std::make_shared<ManualClock>(kT0)});
    for (auto i : order) calls[i].result = run_call(calls[i], *store);
    return store;
  };
  // b ran inside a's call and took index 1: the order b, a explains the history.
  {
    std::vector<Call> calls = {made_up_append(0, 0, 3, "a"), made_up_append(1, 1, 2, "b")};
    auto store = answer(calls, {1, 0});
    Linearizer search;
    REQUIRE(search.explain(calls, picture(*store)));
    REQUIRE(search.log().size() == 2);
    REQUIRE(search.log()[0].what == "append c1 b");
  }
  // The same results, but a returned before b began: no order keeping real time explains them.
  {
    std::vector<Call> calls = {made_up_append(0, 0, 1, "a"), made_up_append(1, 2, 3, "b")};
    auto store = answer(calls, {1, 0});
    Linearizer search;
    REQUIRE_FALSE(search.explain(calls, picture(*store)));
  }
  // Both took index 1 (each ran on a store of its own): no order explains it.
  {
    std::vector<Call> calls = {made_up_append(0, 0, 3, "a"), made_up_append(1, 1, 2, "b")};
    auto store = answer(calls, {0});
    (void)answer(calls, {1});
    Linearizer search;
    REQUIRE_FALSE(search.explain(calls, picture(*store)));
  }
  // The results fit the order a, b, but the store shows only a: the picture rejects it.
  {
    std::vector<Call> calls = {made_up_append(0, 0, 3, "a"), made_up_append(1, 1, 2, "b")};
    auto store = answer(calls, {0});
    (void)answer(calls, {0, 1});
    Linearizer search;
    REQUIRE_FALSE(search.explain(calls, picture(*store)));
  }
}

// The search's way back (a copy of the reference taken when a round begins, restored at each
// backtrack): the copy puts back every part of what the store holds, and a round after others is
// explained when its order is found only after taking back a write.
TEST_CASE("concurrent check: the reference is put back to where the round began", "[model][S247]") {
  auto clock = std::make_shared<ManualClock>(kT0);
  auto store = memory::open({.clock = clock});
  auto& memory = dynamic_cast<detail::MemoryStore&>(*store);
  auto job = [](const std::string& id, std::optional<std::string> lane = std::nullopt) {
    NewEvent e;
    e.id = id;
    e.type = "job";
    e.payload = {{"id", id}};
    e.lane = std::move(lane);
    return e;
  };
  (void)store->append("c1", {job("a", "L1"), job("b", "L1"), job("c")});
  (void)store->append("c2", {job("d")});
  (void)store->claim_available({.session_id = "c1", .holder = "w", .ttl_ms = kTtl});
  store->put_snapshots("c1", "r1", {{.index = 1, .state = {{"n", 1}}, .pin_event_indexes = {2}}});
  (void)store->patch_presence("c1", {.participant = "p", .state = {{"at", 1}}, .ttl_ms = 60'000});
  auto presence = [&] { return Value{store->read_presence("c1"), store->read_presence("c2")}; };
  const Value before = picture(*store);
  const Value presence_before = presence();
  const auto copy = memory.copy_state();

  clock->advance(1000);
  (void)store->append("c1", {job("e")});
  (void)store->complete_attempt({.session_id = "c1", .index = 1, .attempt = 1});
  (void)store->clear({.session_id = "c2"});
  (void)store->append("c3:x", {job("f")});
  store->put_snapshots("c1", "r1", {{.index = 4, .state = {{"n", 4}}, .pin_event_indexes = {}}});
  (void)store->patch_presence("c1", {.participant = "p", .state = nullptr});
  (void)store->patch_presence("c2", {.participant = "q", .state = {{"at", 2}}, .ttl_ms = 60'000});
  REQUIRE(picture(*store) != before);

  memory.restore_state(copy);
  clock->set(kT0);
  CHECK(picture(*store) == before);
  CHECK(presence() == presence_before);
  // The owners are back too: "e" is free again, and "d" is c2's once more.
  CHECK(store->append("c1", {job("e")}).events.at(0).index == 4);
  CHECK(
      outcome([&] { return Json(store->append("c1", {job("d")}).has_pending); }).contains("error"));
}

TEST_CASE("concurrent check: a later round is explained after taking back a write",
          "[model][S247]") {
  auto store = memory::open({.clock = std::make_shared<ManualClock>(kT0)});
  Linearizer search;
  // Round one: a alone.
  std::vector<Call> first = {made_up_append(0, 0, 1, "a")};
  first[0].result = run_call(first[0], *store);
  REQUIRE(search.explain(first, picture(*store)));
  // Round two: c ran inside b's call and took index 2. The search tries b first (it started
  // first), which the reference answers with index 2: it takes that write back and finds c, b.
  std::vector<Call> second = {made_up_append(0, 0, 3, "b"), made_up_append(1, 1, 2, "c")};
  second[1].result = run_call(second[1], *store);
  second[0].result = run_call(second[0], *store);
  REQUIRE(search.explain(second, picture(*store)));
  REQUIRE(search.log().size() == 3);
  CHECK(search.log()[1].what == "append c1 c");
  CHECK(search.log()[2].what == "append c1 b");
  CHECK(search.tries() == 4);
}

TEST_CASE("concurrent check: rounds of calls from three threads are linearizable",
          "[model][S247]") {
#ifdef NDEBUG
  constexpr std::uint64_t kDefaultRounds = 150, kDefaultRuns = 3;
#else
  constexpr std::uint64_t kDefaultRounds = 40, kDefaultRuns = 2;
#endif
  const auto rounds = static_cast<int>(env_u64("A2_MODEL_ROUNDS", kDefaultRounds));
  for_each_run("concurrent check on " + backend().name(),
               std::to_string(rounds) + " rounds of " + std::to_string(kThreads) + " threads x " +
                   std::to_string(kCallsPerThread) + " calls",
               kDefaultRuns, [&](std::uint64_t seed) {
                 ConcurrentRun run(seed, rounds);
                 run.run();
               });
}

}  // namespace a2::conformance
