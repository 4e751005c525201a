// SPDX-License-Identifier: MIT
#pragma once

// The typed caller of a2_complete_attempts (sql/complete_attempts.sql, sql/schema.sql):
// complete_attempts, and complete_attempt with claim_next. The completions as parallel arrays,
// their children flattened in list order, the claim_next lease.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "a2/detail/validate.hpp"
#include "a2/embedded/sql_files.hpp"
#include "a2/options.hpp"
#include "a2/results.hpp"
#include "a2/types.hpp"
#include "postgres/calls/claim_available.hpp"
#include "postgres/calls/complete_attempt.hpp"
#include "postgres/calls/params.hpp"
#include "postgres/executor.hpp"
#include "postgres/result.hpp"

namespace a2::postgres::detail::calls {

struct CompleteAttempts {
  static constexpr const a2::detail::EmbeddedText& kStatement = a2::detail::sql::kCompleteAttempts;
  static constexpr Result::size_type kWakeColumn = 0;  // r_wake (postgres/wake_sender.hpp).
  using Reply = CompleteManyResult;

  std::string session_id;
  std::int64_t now_ms = 0;
  std::vector<std::int64_t> indexes;
  std::vector<std::int64_t> attempts;
  std::vector<std::int64_t> child_counts;
  std::vector<std::string> ids;
  std::vector<std::string> types;
  std::string payloads;  // A jsonb array of one array of payloads per completion.
  std::vector<std::optional<std::string>> lanes;
  std::vector<bool> settled;
  std::vector<std::optional<std::int64_t>> available_at;
  std::optional<std::string> holder;  // claim_next; unset: none.
  std::optional<std::int64_t> expires_at_ms;
  std::optional<std::int64_t> max_events;

  // Every child's id is set (the base class assigned missing ones).
  static CompleteAttempts of(const std::string& session_id,
                             const std::vector<Completion>& completions,
                             const std::optional<ClaimNext>& claim_next, std::int64_t now_ms) {
    CompleteAttempts call;
    call.session_id = session_id;
    call.now_ms = now_ms;
    std::string payloads = "[";
    for (const auto& c : completions) {
      call.indexes.push_back(c.index);
      call.attempts.push_back(c.attempt);
      call.child_counts.push_back(static_cast<std::int64_t>(c.events.size()));
      std::vector<const Json*> own;
      for (const auto& e : c.events) {
        call.ids.push_back(*e.id);
        call.types.push_back(e.type);
        own.push_back(&e.payload);
        call.lanes.push_back(e.lane);
        call.settled.push_back(e.settled);
        call.available_at.push_back(e.available_at_ms);
      }
      if (payloads.size() > 1) payloads += ',';
      payloads += json_array(own);
    }
    call.payloads = payloads + "]";
    if (claim_next) {
      call.holder = claim_next->holder;
      call.expires_at_ms =
          a2::detail::lease_expires_at(now_ms, claim_next->ttl_ms, claim_next->expires_at_ms);
      call.max_events = claim_next->max_events;
    }
    return call;
  }
  static CompleteAttempts of(const CompleteManyRequest& request, std::int64_t now_ms) {
    return of(request.session_id, request.completions, request.claim_next, now_ms);
  }
  // complete_attempt with claim_next: a batch of one.
  static CompleteAttempts of(const CompleteRequest& request, std::int64_t now_ms) {
    return of(request.session_id, {Completion{request.index, request.attempt, request.events}},
              request.claim_next, now_ms);
  }

  Result exec(Executor& x) const {
    return x.exec(kStatement, session_id, now_ms, int_array(indexes), int_array(attempts),
                  int_array(child_counts), text_array(ids), text_array(types), payloads,
                  text_array(lanes), bool_array(settled), int_array(available_at), holder,
                  expires_at_ms, max_events);
  }

  // r_wake, r_part, then per part the columns of its decoder: a completion's (k >= 1) r_verdict and
  // its children; the claim's (0) r_verdict, r_retry_at, r_clear_index and its rows. Parts come in
  // order, each as consecutive rows.
  static Reply decode(const Result& rows) { return decode_part(rows, 0, 0, rows.size()); }

  // The same from column `first` of the rows [begin, end) of `rows`: complete_attempts' reply,
  // and one request's part of complete_attempts_group's (calls/complete_attempts_group.hpp).
  static Reply decode_part(const Result& rows, Result::size_type first, Result::size_type begin,
                           Result::size_type end) {
    expect_columns(rows, first,
                   {"r_wake", "r_part", "r_verdict", "r_retry_at", "r_clear_index"});
    Reply out;
    for (; begin < end;) {
      const auto part = rows.at(begin)[first + 1].as<std::int64_t>();
      auto stop = begin + 1;
      while (stop < end && rows.at(stop)[first + 1].as<std::int64_t>() == part) ++stop;
      if (part == 0) {
        if (out.next) throw std::logic_error("a second claim part");
        out.next = ClaimAvailable::decode_part(rows, first + 2, begin, stop);
      } else {
        if (out.next || part != static_cast<std::int64_t>(out.results.size()) + 1)
          throw std::logic_error("completion part " + std::to_string(part) + " out of order");
        out.results.push_back(
            CompleteAttempt::decode_part(rows, first + 2, first + 5, begin, stop));
      }
      begin = stop;
    }
    return out;
  }
};

}  // namespace a2::postgres::detail::calls
