// SPDX-License-Identifier: MIT
#pragma once

// The Postgres backend's one error translation: every failure of a Postgres call (libpqxx and
// SQL errors, the contract errors the functions of sql/schema.sql raise, timeouts, unreadable
// replies) leaves through these functions as an a2::Error whose message starts with
// "a2 postgres <operation>:". Contract errors are worded by a2/detail/contract_errors.hpp, so
// they read the same on every backend.

#include <chrono>
#include <string_view>

namespace a2::postgres::detail {

// Rethrows the exception being handled as an a2::Error: a contract error raised by the SQL
// functions (SQLSTATE A2001..A2005, facts in the DETAIL as JSON) as its type, a unique
// violation of a2_events.event_id (an id a concurrent write stored after the function's probe,
// postgres/statement_error.hpp) as PartialDuplicateBatch, every other failure as Unavailable.
// `sent` says whether the request may have reached the server (a lost connection then leaves
// the outcome unknown). Call only inside a catch block.
[[noreturn]] void translate_current_exception(std::string_view op, bool sent);

// The call got no answer by its deadline; the connection was closed (outcome unknown).
[[noreturn]] void throw_timed_out(std::string_view op, std::chrono::milliseconds command_timeout);

// A write function committed but its reply could not be decoded (outcome unknown).
[[noreturn]] void throw_unreadable_reply(std::string_view op, std::string_view why);

}  // namespace a2::postgres::detail
