// SPDX-License-Identifier: MIT
#pragma once

// Statement parameters and reply fields of the typed callers (src/postgres/calls/<op>.hpp):
// Postgres array literals for the batch arguments, and the reply's integer arrays.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "a2/types.hpp"

namespace a2::postgres::detail::calls {

// Array literals, as text parameters of text[], bigint[] and boolean[] arguments: '{"a","b"}',
// '{1,NULL}', '{t,f}'. Every text element is quoted, so any text round-trips.
std::string text_array(const std::vector<std::string>& values);
std::string text_array(const std::vector<std::optional<std::string>>& values);
std::string int_array(const std::vector<std::int64_t>& values);
std::string int_array(const std::vector<std::optional<std::int64_t>>& values);
std::string bool_array(const std::vector<bool>& values);
// A jsonb array of the values, as JSON text (the payloads or states of a batch).
std::string json_array(const std::vector<const Json*>& values);

// A bigint[] as Postgres prints it ("{1,2}"; "{}" empty). Throws std::invalid_argument on
// anything else.
std::vector<std::int64_t> parse_int_array(std::string_view text);

}  // namespace a2::postgres::detail::calls
