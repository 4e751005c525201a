// SPDX-License-Identifier: MIT
#include "postgres/write_groups.hpp"

#include <algorithm>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "a2/errors.hpp"
#include "a2/observe.hpp"
#include "postgres/calls/append_group.hpp"
#include "postgres/calls/claim_group.hpp"
#include "postgres/calls/complete_attempts_group.hpp"
#include "postgres/calls/complete_group.hpp"

namespace a2::postgres::detail {

namespace {
// Whether a failure shared by a group's members left their outcome unknown (their request
// reached the server): then each counts the group's round trip as its own.
bool outcome_unknown(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const Unavailable& e) {
    return e.outcome_unknown();
  } catch (...) {
    return false;
  }
}

// A failure of its own for a member of a failed group: each thread throws an object nobody
// else holds (made by the leader before the member wakes, from fresh strings).
std::exception_ptr copy_of(const std::exception_ptr& error, const std::string& op) {
  try {
    std::rethrow_exception(error);
  } catch (const Unavailable& e) {
    return std::make_exception_ptr(Unavailable(std::string(e.what()), e.outcome_unknown()));
  } catch (const InvalidArgument& e) {
    return std::make_exception_ptr(InvalidArgument(std::string(e.what())));
  } catch (const PartialDuplicateBatch& e) {
    return std::make_exception_ptr(PartialDuplicateBatch(std::string(e.what())));
  } catch (const SupersededAttempt& e) {
    return std::make_exception_ptr(SupersededAttempt(std::string(e.what())));
  } catch (const SessionCleared& e) {
    return std::make_exception_ptr(SessionCleared(std::string(e.what())));
  } catch (const Error& e) {
    return std::make_exception_ptr(Error(e.code(), std::string(e.what())));
  } catch (const std::exception& e) {
    return std::make_exception_ptr(Unavailable("a2 postgres " + op + ": " + e.what()));
  } catch (...) {
    return std::make_exception_ptr(Unavailable("a2 postgres " + op + ": unknown failure"));
  }
}
}  // namespace

template <class Group>
struct WriteGroups<Group>::Member {
  enum class State {
    queued,    // In the queue: a caller giving up takes it back, unsent.
    leading,   // Handed the queue: writes the next group.
    taken,     // In a group being written.
    answered,  // `answer` holds its answer.
    alone,     // The server rejected its group: it sends its request alone.
    failed     // `error` is its group's failure.
  };
  Member(const One* r, a2::detail::SteadyTime d, std::string_view o)
      : request(r), deadline(d), op(o) {}
  const One* request;
  a2::detail::SteadyTime deadline;
  std::string_view op;  // The caller's operation (its errors and its single call).
  State state = State::queued;
  bool sent = false;           // Its request reached the server in its group's call.
  std::vector<Member*> group;  // When leading: itself first, then the members taken with it.
  std::optional<Answer> answer;
  std::exception_ptr error;
  // Signalled when `state` left queued or taken. Shared, so that the leader can signal it after
  // it unlocked the mutex, when the member may already have seen its state and returned: a
  // member woken under the lock would at once wait for the mutex its leader still holds (a
  // second sleep and wake-up per member).
  std::shared_ptr<std::condition_variable> changed = std::make_shared<std::condition_variable>();
};

template <class Group>
WriteGroups<Group>::WriteGroups(std::string op, std::size_t in_flight,
                                std::chrono::milliseconds queue_timeout, WriteOne one,
                                WriteGroup group)
    : op_(std::move(op)),
      in_flight_limit_(in_flight == 0 ? 1 : in_flight),
      queue_timeout_(queue_timeout),
      one_(std::move(one)),
      group_(std::move(group)) {}

template <class Group>
std::size_t WriteGroups<Group>::queued() const {
  std::lock_guard lock(mutex_);
  return queue_.size();
}

template <class Group>
void WriteGroups<Group>::close() {
  std::lock_guard lock(mutex_);
  closed_ = true;
  for (Member* m : queue_) {
    m->error = std::make_exception_ptr(Unavailable("a2 postgres " + std::string(m->op) +
                                                   ": the store is closed; nothing was sent"));
    m->state = Member::State::failed;
    m->changed->notify_one();  // Under the lock: close() is rare.
  }
  queue_.clear();
}

template <class Group>
typename WriteGroups<Group>::Answer WriteGroups<Group>::write(const One& request,
                                                              a2::detail::SteadyTime deadline,
                                                              std::string_view op) {
  Member me(&request, deadline, op);
  std::unique_lock lock(mutex_);
  if (closed_)
    throw Unavailable("a2 postgres " + std::string(op) + ": the store is closed; nothing was sent");
  // A place is free only while nobody waits (a caller done with a queue hands it over).
  if (in_flight_ < in_flight_limit_) {
    ++in_flight_;
    return lead(lock, me);
  }
  queue_.push_back(&me);
  const auto wait_until = std::min(deadline, std::chrono::steady_clock::now() + queue_timeout_);
  while (me.state == Member::State::queued) {
    if (me.changed->wait_until(lock, wait_until) == std::cv_status::timeout &&
        me.state == Member::State::queued) {
      std::erase(queue_, &me);
      throw Unavailable("a2 postgres " + std::string(op) +
                        ": no place in flight became free in time (" +
                        std::to_string(in_flight_limit_) + " in flight); nothing was sent");
    }
  }
  if (me.state == Member::State::leading) return lead(lock, me);
  // Taken: the group's call ends by its deadline, the earliest of its members'.
  while (me.state == Member::State::taken) me.changed->wait(lock);
  lock.unlock();                             // The leader no longer touches `me`.
  if (me.sent) ++a2::detail::t_round_trips;  // The group's call was this request's too.
  if (me.state == Member::State::answered) return std::move(*me.answer);
  if (me.state == Member::State::failed) std::rethrow_exception(me.error);
  return one_(request, deadline, op);  // alone
}

template <class Group>
void WriteGroups<Group>::take_queue(Member& leader) {
  leader.group.assign(1, &leader);
  const auto joins = [&](const Member* m) {
    if constexpr (Group::kOnePerSession)
      for (const Member* in : leader.group)
        if (in->request->session_id == m->request->session_id) return false;
    return true;
  };
  for (auto it = queue_.begin(); it != queue_.end() && leader.group.size() < kMaxGroup;) {
    if (!joins(*it)) {
      ++it;  // Stays queued, in its place, for a later group.
      continue;
    }
    Member* m = *it;
    it = queue_.erase(it);
    m->state = Member::State::taken;
    leader.group.push_back(m);
  }
}

template <class Group>
typename WriteGroups<Group>::Answer WriteGroups<Group>::lead(std::unique_lock<std::mutex>& lock,
                                                             Member& me) {
  if (me.group.empty()) take_queue(me);  // Else handed over with its group.
  const std::vector<Member*> members = std::move(me.group);
  lock.unlock();

  std::vector<Answer> answers;
  std::exception_ptr error;
  bool alone = false;
  if (members.size() == 1) {
    try {
      answers.push_back(one_(*me.request, me.deadline, me.op));
    } catch (...) {
      error = std::current_exception();
    }
  } else {
    Group call;
    a2::detail::SteadyTime deadline = me.deadline;
    for (const Member* m : members) {
      call.requests.push_back(m->request);
      deadline = std::min(deadline, m->deadline);
    }
    try {
      answers = group_(call, deadline);  // One per request (its decode checks).
    } catch (const GroupRolledBack&) {
      alone = true;
    } catch (...) {
      error = std::current_exception();
    }
  }
  const bool sent = alone || error == nullptr || outcome_unknown(error);

  std::vector<std::shared_ptr<std::condition_variable>> wake;
  wake.reserve(members.size());
  lock.lock();
  for (std::size_t i = 1; i < members.size(); ++i) {
    Member& m = *members[i];
    m.sent = sent;
    if (alone) {
      m.state = Member::State::alone;
    } else if (error != nullptr) {
      m.error = copy_of(error, op_);
      m.state = Member::State::failed;
    } else {
      m.answer = std::move(answers[i]);
      m.state = Member::State::answered;
    }
    wake.push_back(m.changed);  // Signalled below: m may return (and go) once it sees its state.
  }
  if (!queue_.empty()) {
    // The longest waiter takes over this place in flight with the queue as its group, taken
    // now: a place freed before it wakes finds the queue empty and is given up.
    Member* next = queue_.front();
    queue_.pop_front();
    take_queue(*next);
    next->state = Member::State::leading;
    wake.insert(wake.begin(), next->changed);  // First: the next group goes out the sooner.
  } else {
    --in_flight_;
  }
  lock.unlock();
  for (const auto& changed : wake) changed->notify_one();

  if (alone) return one_(*me.request, me.deadline, me.op);
  if (error != nullptr) std::rethrow_exception(error);
  return std::move(answers[0]);
}

template class WriteGroups<calls::AppendGroup>;
template class WriteGroups<calls::ClaimGroup>;
template class WriteGroups<calls::CompleteGroup>;
template class WriteGroups<calls::CompleteAttemptsGroup>;

}  // namespace a2::postgres::detail
