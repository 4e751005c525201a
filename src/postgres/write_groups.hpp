// SPDX-License-Identifier: MIT
#pragma once

// Write groups (docs/postgres-layout.md#write-groups): the common writes of one kind (appends of
// one event, claims without exclusions, completions without claim_next) that callers start
// while `in_flight` writes of that kind are being written wait in a queue, and the next one to
// go takes the queued requests with it: one call of the kind's group function, one transaction
// and one round trip for all of them. A caller that finds a place free writes its own request
// at once (the kind's single call, as without groups), so a lone caller pays nothing for the
// groups. Each caller still sees one round trip.
//
// Outcomes stay per request: each gets what its single call would have answered it. When the
// server rejects the group's call (an SQL error of any request, a deadlock, a timeout: the
// transaction rolled back, nothing of it changed), each caller sends its request alone, in its
// own thread, by its own deadline, and hears its own answer. Any other failure is every
// member's: outcome unknown when the call may have run (the connection lost after sending, the
// deadline passed, an unreadable reply), nothing sent otherwise (no pooled connection in time,
// the store closed). A request waits in the queue at most `queue_timeout` and never past its
// deadline, then fails unsent, as a call waiting for a pooled connection does; a group's call
// runs by the earliest deadline of its members. close() fails the queued requests at once,
// unsent. Kinds whose single call locks event rows before the session lock (claims,
// completions: Group::kOnePerSession) take at most one request per session into a group, so a
// group never holds a session's lock while it waits for another row of that session; a request
// left out stays queued, in its place, for the next group.
//
// Thread-safe. No thread of its own: the caller that goes first writes the group, and when it
// is done hands the place in flight to the longest waiter, with every request queued then (that
// may join) as its group.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/pool.hpp"

namespace a2::postgres::detail {

// What one request got, and whether its caller hands the new events to its store's feeds (its
// write owes the feeds a wake-up: Notifier::appended).
template <class Reply>
struct GroupAnswer {
  Reply reply;
  bool wakes_feeds = false;
};

// The server rejected a group's call: nothing of it changed (thrown by a WriteGroup).
struct GroupRolledBack {};

// Group: the typed caller of a kind's group function (calls::AppendGroup, calls::ClaimGroup,
// calls::CompleteGroup), with `using One` (the single call: its session_id and Reply),
// `std::vector<const One*> requests` and `static constexpr bool kOnePerSession`.
template <class Group>
class WriteGroups {
 public:
  using One = typename Group::One;
  using Answer = GroupAnswer<typename One::Reply>;
  // Writes one request alone by the deadline, as the operation `op` (its name in errors).
  // Throws a2::Error.
  using WriteOne = std::function<Answer(const One&, a2::detail::SteadyTime, std::string_view op)>;
  // Writes two or more requests in one call by the deadline: an Answer per request, in order.
  // Throws GroupRolledBack, or an a2::Error that is every request's.
  using WriteGroup = std::function<std::vector<Answer>(const Group&, a2::detail::SteadyTime)>;

  // The most requests in one group.
  static constexpr std::size_t kMaxGroup = 32;

  // `op`: the kind's name in the errors of a group's call ("append"). `in_flight`: how many
  // writes of the kind are written at once (at least 1).
  WriteGroups(std::string op, std::size_t in_flight, std::chrono::milliseconds queue_timeout,
              WriteOne one, WriteGroup group);
  WriteGroups(const WriteGroups&) = delete;
  WriteGroups& operator=(const WriteGroups&) = delete;

  // Writes `request` of the caller's operation `op` (its name in the caller's errors: a kind may
  // serve several operations), alone or in a group, and returns its answer. Throws a2::Error
  // (Unavailable "... nothing was sent" when it waited in the queue until its deadline or the
  // queue timeout).
  Answer write(const One& request, a2::detail::SteadyTime deadline, std::string_view op);

  // How many requests wait in the queue now.
  std::size_t queued() const;

  // Fails the queued requests at once (Unavailable "the store is closed", nothing sent); later
  // write() calls fail so too. Groups in flight finish (by their deadlines). Idempotent.
  void close();

 private:
  struct Member;
  // Makes `leader` the first of a group and takes the queued requests that may join it (up to
  // kMaxGroup) into it. mutex_ held.
  void take_queue(Member& leader);
  // Writes me's group (taking it first unless it was handed over with one), then hands the
  // queue and the place in flight to the longest waiter. `lock` is held on entry, released on
  // return; me's place in flight is counted.
  Answer lead(std::unique_lock<std::mutex>& lock, Member& me);

  const std::string op_;
  const std::size_t in_flight_limit_;
  const std::chrono::milliseconds queue_timeout_;
  const WriteOne one_;
  const WriteGroup group_;
  mutable std::mutex mutex_;
  std::size_t in_flight_ = 0;  // Callers writing now (a group's leader counts once).
  bool closed_ = false;
  std::deque<Member*> queue_;  // Waiting, oldest first; on their callers' stacks.
};

}  // namespace a2::postgres::detail
