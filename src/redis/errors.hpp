// SPDX-License-Identifier: MIT
#pragma once

// The one error translation of the Redis backend. Every failure of a store call passes through
// translate_current() (guarded() and after_write() call it), so every message starts with
// "a2 redis <operation>:". The contract's errors are worded by
// include/a2/detail/contract_errors.hpp and thrown with site(op); a store failure is fail(op, ...).

#include <string>
#include <string_view>

#include "a2/detail/contract_errors.hpp"
#include "a2/errors.hpp"

namespace a2::redis::detail {

// Where a contract error arose: this backend and the operation.
inline a2::detail::ErrorSite site(std::string_view op) { return {"redis", op}; }

// "a2 redis <op>: "
inline std::string prefix(std::string_view op) { return a2::detail::error_prefix(site(op)); }

// A store failure (store_unavailable, retryable): "a2 redis <op>: <what>".
[[noreturn]] void fail(std::string_view op, std::string_view what);

// Inside a catch block: rethrows the exception being handled as an a2::Error. An a2::Error
// passes unchanged (contract errors and transport failures are already worded); anything else
// becomes store_unavailable "a2 redis <op>: ...". With after_write (a script that may have
// changed the store ran), a failure that is not already outcome-unknown becomes outcome-unknown:
// a caller never hears a plain failure after a change it cannot see.
[[noreturn]] void translate_current(std::string_view op, bool after_write = false);

// Runs f; every failure goes through translate_current(op).
template <class F>
auto guarded(std::string_view op, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (...) {
    translate_current(op);
  }
}

// Decodes (runs f on) the reply of a script that may have changed the store: every failure is
// outcome-unknown (translate_current(op, true)).
template <class F>
auto after_write(std::string_view op, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (...) {
    translate_current(op, true);
  }
}

}  // namespace a2::redis::detail
