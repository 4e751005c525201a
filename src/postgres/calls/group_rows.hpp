// SPDX-License-Identifier: MIT
#pragma once

// The replies of the group functions (postgres/write_groups.hpp): what each request got, and,
// for those whose rows come per request (a2_claim_group, a2_complete_group,
// a2_complete_attempts_group), the walk over `k`, the request's position (1-based), in column
// 0, the rows of one request together.

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "postgres/result.hpp"
#include "postgres/rows.hpp"

namespace a2::postgres::detail::calls {

// What one request of a group got: its single call's reply and its wake-ups
// (kWakeFeeds | kWakeWork, postgres/wake_sender.hpp). A group's reply is one per request, in
// request order.
template <class Reply>
struct GroupPart {
  Reply reply;
  int wake = 0;
};

// Calls part(i, begin, end) for each request i (0-based) with its rows [begin, end) of `rows`.
// Throws std::logic_error unless every one of `requests` has its rows, together, once.
template <class Part>
void for_each_request_rows(std::string_view op, const Result& rows, std::size_t requests,
                           Part&& part) {
  expect_columns(rows, 0, {"k"});
  std::vector<bool> seen(requests, false);
  for (Result::size_type begin = 0; begin < rows.size();) {
    const auto k = rows.at(begin)[0].as<std::int64_t>();
    if (k < 1 || k > static_cast<std::int64_t>(requests) || seen[static_cast<std::size_t>(k - 1)])
      throw std::logic_error(std::string(op) + ": reply rows for request " + std::to_string(k) +
                             " of " + std::to_string(requests));
    auto end = begin + 1;
    while (end < rows.size() && rows.at(end)[0].as<std::int64_t>() == k) ++end;
    seen[static_cast<std::size_t>(k - 1)] = true;
    part(static_cast<std::size_t>(k - 1), begin, end);
    begin = end;
  }
  for (std::size_t i = 0; i < requests; ++i)
    if (!seen[i])
      throw std::logic_error(std::string(op) + ": no reply row for request " +
                             std::to_string(i + 1));
}

}  // namespace a2::postgres::detail::calls
