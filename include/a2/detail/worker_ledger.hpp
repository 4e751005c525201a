// SPDX-License-Identifier: MIT
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <stop_token>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "a2/options.hpp"

// The worker's bookkeeping of the claims it holds (a2/worker.hpp): by session and index, with the
// attempt, where the job is (ready, running, finishing) and the run's stop state. Not
// thread-safe: the runtime guards it with its mutex.
namespace a2::detail {

// The shared state of one run: the handler's stop token and why it was requested.
struct WorkerRun {
  std::stop_source stop{};
  std::atomic<bool> lease_lost{false};  // The lease ended (renewal said so, or it lapsed).
  std::atomic<bool> cancelled{false};   // stop() ran out of grace.
};

enum class ClaimState { ready, running, finishing };

struct LedgerClaim {
  std::int64_t attempt = 0;
  ClaimState state = ClaimState::ready;
  std::shared_ptr<WorkerRun> run{};
  std::chrono::steady_clock::time_point lease_end{};  // A conservative local estimate.
};

class WorkerLedger {
 public:
  using Clock = std::chrono::steady_clock;

  // Records a new claim. False (nothing recorded) when the index is held already: an older
  // attempt of the same event is still here, so the new one must not run beside it.
  bool add(const std::string& session, std::int64_t index, std::int64_t attempt,
           std::shared_ptr<WorkerRun> run, Clock::time_point lease_end) {
    auto& claims = sessions_[session];
    auto [it, inserted] = claims.try_emplace(index);
    if (!inserted) return false;
    it->second = LedgerClaim{attempt, ClaimState::ready, std::move(run), lease_end};
    ++size_;
    return true;
  }

  // The claim of (session, index) at `attempt`, or nullptr.
  LedgerClaim* find(const std::string& session, std::int64_t index, std::int64_t attempt) {
    auto s = sessions_.find(session);
    if (s == sessions_.end()) return nullptr;
    auto c = s->second.find(index);
    if (c == s->second.end() || c->second.attempt != attempt) return nullptr;
    return &c->second;
  }

  // The claim of (session, index) at whatever attempt, or nullptr.
  LedgerClaim* find_any(const std::string& session, std::int64_t index) {
    auto s = sessions_.find(session);
    if (s == sessions_.end()) return nullptr;
    auto c = s->second.find(index);
    return c == s->second.end() ? nullptr : &c->second;
  }

  // Forgets the claim of (session, index) at `attempt` (no-op for another attempt).
  void remove(const std::string& session, std::int64_t index, std::int64_t attempt) {
    auto s = sessions_.find(session);
    if (s == sessions_.end()) return;
    auto c = s->second.find(index);
    if (c == s->second.end() || c->second.attempt != attempt) return;
    s->second.erase(c);
    --size_;
    if (s->second.empty()) sessions_.erase(s);
  }

  // The indexes held in `session` whose lease may have lapsed by the local estimate: a claim
  // excludes them, so the event is not claimed again while this process still runs it. (Live
  // leases are not claimable anyway; excluding nothing keeps the claim on its fast path.)
  std::vector<std::int64_t> lapsed(const std::string& session, Clock::time_point now) const {
    std::vector<std::int64_t> out;
    auto s = sessions_.find(session);
    if (s == sessions_.end()) return out;
    for (const auto& [index, claim] : s->second)
      if (claim.lease_end <= now) out.push_back(index);
    return out;
  }

  // Every held claim, by session: what the renewal extends.
  std::vector<std::pair<std::string, std::vector<ClaimRef>>> snapshot() const {
    std::vector<std::pair<std::string, std::vector<ClaimRef>>> out;
    out.reserve(sessions_.size());
    for (const auto& [session, claims] : sessions_) {
      std::vector<ClaimRef> refs;
      refs.reserve(claims.size());
      for (const auto& [index, claim] : claims) refs.push_back({index, claim.attempt});
      out.emplace_back(session, std::move(refs));
    }
    return out;
  }

  // Runs `f(session, index, claim)` on every claim.
  template <class F>
  void for_each(F&& f) {
    for (auto& [session, claims] : sessions_)
      for (auto& [index, claim] : claims) f(session, index, claim);
  }

  std::size_t size() const noexcept { return size_; }

 private:
  std::unordered_map<std::string, std::map<std::int64_t, LedgerClaim>> sessions_;
  std::size_t size_ = 0;
};

}  // namespace a2::detail
