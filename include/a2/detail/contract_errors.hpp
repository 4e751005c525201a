// SPDX-License-Identifier: MIT
#pragma once

// The contract's errors (docs/semantics.md#errors), worded once. Every backend throws them
// through these functions, so the same error reads the same way on memory, Redis and Postgres:
// "a2 <backend> <operation>: <words>". A backend's error translation (src/<backend>/errors.cpp,
// the memory store itself) decides which one applies; the words live only here.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "a2/errors.hpp"

namespace a2::detail {

// Where an error arose: the backend ("memory", "redis", "postgres") and the operation
// ("append", "complete_attempt", ...).
struct ErrorSite {
  std::string_view backend;
  std::string_view op;
};

inline std::string error_prefix(ErrorSite site) {
  return "a2 " + std::string(site.backend) + " " + std::string(site.op) + ": ";
}

inline std::string quoted_session(std::string_view session) {
  return "session '" + std::string(session) + "'";
}

// invalid_argument: an index above the head or below the current lifetime.
[[noreturn]] inline void throw_no_event(ErrorSite site, std::string_view session,
                                        std::int64_t index) {
  throw InvalidArgument(error_prefix(site) + "no event at index " + std::to_string(index) + " in " +
                        quoted_session(session));
}

// superseded_attempt: a cause whose attempt no longer owns its event.
[[noreturn]] inline void throw_attempt_superseded(ErrorSite site, std::string_view session,
                                                  std::int64_t index, std::int64_t attempt) {
  throw SupersededAttempt(error_prefix(site) + "attempt " + std::to_string(attempt) +
                          " no longer owns event " + std::to_string(index) + " in " +
                          quoted_session(session));
}

// session_cleared: scheduled work whose origin event a clear removed.
[[noreturn]] inline void throw_scheduled_work_cleared(ErrorSite site, std::string_view session,
                                                      std::int64_t origin_index) {
  throw SessionCleared(error_prefix(site) + "scheduled work from event " +
                       std::to_string(origin_index) + " was cleared in " + quoted_session(session));
}

// partial_duplicate_batch: an id is owned by an event of another session.
[[noreturn]] inline void throw_id_owned_elsewhere(ErrorSite site, std::string_view id) {
  throw PartialDuplicateBatch(error_prefix(site) + "event id '" + std::string(id) +
                              "' already belongs to another session");
}

// partial_duplicate_batch: some but not all ids of an append batch are already stored.
[[noreturn]] inline void throw_some_ids_stored(ErrorSite site, std::string_view session,
                                               std::size_t stored, std::size_t total) {
  throw PartialDuplicateBatch(error_prefix(site) + std::to_string(stored) + " of the " +
                              std::to_string(total) + " event ids are already stored in " +
                              quoted_session(session));
}

// partial_duplicate_batch: every id is stored but the rows do not match the batch (a replay
// that is not one).
[[noreturn]] inline void throw_replay_mismatch(ErrorSite site, std::string_view session) {
  throw PartialDuplicateBatch(error_prefix(site) +
                              "the batch does not match the events already stored for its ids "
                              "in " +
                              quoted_session(session));
}

// partial_duplicate_batch: a child id of a completion is taken (by another event, or the retry
// of a completion does not match its recorded children).
[[noreturn]] inline void throw_child_id_taken(ErrorSite site, std::string_view session,
                                              std::int64_t parent_index, std::string_view id) {
  throw PartialDuplicateBatch(error_prefix(site) + "child event id '" + std::string(id) +
                              "' of event " + std::to_string(parent_index) +
                              " already belongs to another event in " + quoted_session(session));
}

// partial_duplicate_batch: the retry of a completion (its attempt already completed the event)
// names other children than the completion recorded, or one of them is no longer the event's.
[[noreturn]] inline void throw_completion_mismatch(ErrorSite site, std::string_view session,
                                                   std::int64_t index, std::int64_t attempt) {
  throw PartialDuplicateBatch(error_prefix(site) +
                              "the children do not match the recorded completion of event " +
                              std::to_string(index) + " by attempt " + std::to_string(attempt) +
                              " in " + quoted_session(session));
}

// partial_duplicate_batch: the clear marker's id is taken.
[[noreturn]] inline void throw_marker_id_taken(ErrorSite site, std::string_view id) {
  throw PartialDuplicateBatch(error_prefix(site) + "the clear marker id '" + std::string(id) +
                              "' already exists");
}

// store_unavailable (retry): an id being reused is still held by cleared work.
[[noreturn]] inline void throw_id_held_by_cleared_work(ErrorSite site, std::string_view session) {
  throw Unavailable(error_prefix(site) +
                    "an event id being reused is still held by cleared work in " +
                    quoted_session(session));
}

}  // namespace a2::detail
