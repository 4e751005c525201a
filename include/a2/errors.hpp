// SPDX-License-Identifier: MIT
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace a2 {

// The error codes of the contract (docs/semantics.md#errors). Only store_unavailable is retryable.
enum class ErrorCode {
  invalid_argument,         // Bad input, or the contract's TypeError cases. Nothing changed.
  store_unavailable,        // Transport failure, timeout, server error, closed store. Retryable.
  partial_duplicate_batch,  // Ids already owned; a replay that does not match the original.
  superseded_attempt,       // Append or clear with a cause whose attempt is no longer current.
  session_cleared,          // Append whose origin_index is at or below the clear boundary.
};

// The wire word of a code: "store_unavailable".
constexpr std::string_view to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::invalid_argument: return "invalid_argument";
    case ErrorCode::store_unavailable: return "store_unavailable";
    case ErrorCode::partial_duplicate_batch: return "partial_duplicate_batch";
    case ErrorCode::superseded_attempt: return "superseded_attempt";
    case ErrorCode::session_cleared: return "session_cleared";
  }
  return "unknown";
}

// Every exception the library throws is an a2::Error. Immutable; safe to share between threads.
class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }
  // True only for store_unavailable: repeating the same request may succeed.
  bool retryable() const noexcept { return code_ == ErrorCode::store_unavailable; }

 private:
  ErrorCode code_;
};

// Bad input (also the contract's TypeError: "no event at index N in session 'S'").
class InvalidArgument : public Error {
 public:
  explicit InvalidArgument(const std::string& message)
      : Error(ErrorCode::invalid_argument, message) {}
};

// The store could not do the operation: unreachable, timed out, error reply, closed.
class Unavailable : public Error {
 public:
  explicit Unavailable(const std::string& message, bool outcome_unknown = false)
      : Error(ErrorCode::store_unavailable, message), outcome_unknown_(outcome_unknown) {}
  // True when the request had been sent before the connection failed: the write may or may not
  // have happened. Repeating it resolves that for appends and completions with caller-supplied
  // ids, failures (by attempt) and clears with if_last_index.
  bool outcome_unknown() const noexcept { return outcome_unknown_; }

 private:
  bool outcome_unknown_;
};

class PartialDuplicateBatch : public Error {
 public:
  explicit PartialDuplicateBatch(const std::string& message)
      : Error(ErrorCode::partial_duplicate_batch, message) {}
};

class SupersededAttempt : public Error {
 public:
  explicit SupersededAttempt(const std::string& message)
      : Error(ErrorCode::superseded_attempt, message) {}
};

class SessionCleared : public Error {
 public:
  explicit SessionCleared(const std::string& message)
      : Error(ErrorCode::session_cleared, message) {}
};

}  // namespace a2
