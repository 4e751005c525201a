// SPDX-License-Identifier: MIT
#pragma once

// What the Store's observed() wrapper derives from an operation's result: its outcome word and
// the work transitions it made (docs/observe.md). One overload per result type that has more to
// say than "ok"; every other result is "ok" with no transition.

#include <algorithm>
#include <string_view>
#include <vector>

#include "a2/observe.hpp"
#include "a2/options.hpp"
#include "a2/results.hpp"

namespace a2::detail {

template <class R>
std::string_view outcome_of(const R&) {
  return "ok";
}
inline std::string_view outcome_of(const ClaimResult& r) { return to_string(r.verdict); }
inline std::string_view outcome_of(const CompleteResult& r) { return to_string(r.verdict); }
inline std::string_view outcome_of(const FailResult& r) { return to_string(r.verdict); }
inline std::string_view outcome_of(const RedriveResult& r) {
  return r.redriven ? "redriven" : "not_redriven";
}
inline std::string_view outcome_of(const ClearResult& r) {
  return r.cleared ? "cleared" : "not_cleared";
}

// emit(WorkTransition, index, attempt) for each transition of request -> result.
struct NoRequest {};
template <class Q, class R, class Emit>
void transitions_of(const Q&, const R&, Emit&&) {}

template <class Emit>
void claimed_of(const ClaimResult& r, Emit& emit) {
  if (r.verdict != ClaimVerdict::claimed) return;
  for (const auto& e : r.events) emit(WorkTransition::claimed, e.index, e.attempt_count);
}
template <class Emit>
void transitions_of(const ClaimRequest&, const ClaimResult& r, Emit&& emit) {
  claimed_of(r, emit);
}
template <class Emit>
void transitions_of(const CompleteRequest& q, const CompleteResult& r, Emit&& emit) {
  if (r.verdict == CompleteVerdict::completed) emit(WorkTransition::completed, q.index, q.attempt);
  if (r.next) claimed_of(*r.next, emit);
}
template <class Emit>
void transitions_of(const CompleteManyRequest& q, const CompleteManyResult& r, Emit&& emit) {
  for (std::size_t i = 0; i < r.results.size() && i < q.completions.size(); ++i)
    if (r.results[i].verdict == CompleteVerdict::completed)
      emit(WorkTransition::completed, q.completions[i].index, q.completions[i].attempt);
  if (r.next) claimed_of(*r.next, emit);
}
// complete_in_sessions: each answered request's transitions, in its own session.
template <class Emit>
void transitions_of(const std::vector<CompleteManyRequest>& qs,
                    const std::vector<CompleteManyOutcome>& rs, Emit&& emit) {
  for (std::size_t i = 0; i < qs.size() && i < rs.size(); ++i) {
    if (!rs[i].result) continue;
    const std::string_view session = qs[i].session_id;
    transitions_of(qs[i], *rs[i].result,
                   [&](WorkTransition t, std::int64_t index, std::int64_t attempt) {
                     emit(t, index, attempt, session);
                   });
  }
}
template <class Emit>
void transitions_of(const FailRequest& q, const FailResult& r, Emit&& emit) {
  if (r.verdict == FailVerdict::failed) emit(WorkTransition::failed, q.index, q.attempt);
  if (r.verdict == FailVerdict::dead_lettered)
    emit(WorkTransition::dead_lettered, q.index, q.attempt);
}
template <class Emit>
void transitions_of(const RedriveRequest& q, const RedriveResult& r, Emit&& emit) {
  if (r.redriven) emit(WorkTransition::redriven, q.index, std::int64_t{0});
}
template <class Emit>
void transitions_of(const ReleaseRequest& q, const ReleaseResult& r, Emit&& emit) {
  for (const auto& c : q.claims)
    if (std::find(r.released.begin(), r.released.end(), c.index) != r.released.end())
      emit(WorkTransition::released, c.index, c.attempt);
}
// A claim the renewal did not extend (superseded, lapsed, finished, foreign) is a lost lease.
template <class Emit>
void transitions_of(const RenewRequest& q, const RenewResult& r, Emit&& emit) {
  for (const auto& c : q.claims)
    if (std::find(r.renewed.begin(), r.renewed.end(), c.index) == r.renewed.end())
      emit(WorkTransition::lease_lost, c.index, c.attempt);
}

}  // namespace a2::detail
