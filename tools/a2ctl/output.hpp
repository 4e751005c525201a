// SPDX-License-Identifier: MIT
#pragma once

// Human output: aligned tables, times (ISO-8601 UTC and relative), text made printable.

#include <chrono>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "a2/types.hpp"

namespace a2ctl {

// "2023-11-14T22:13:20.000Z" (ms since the Unix epoch, UTC).
std::string iso_time(std::int64_t ms);
// "in 3s", "12s ago", "now" (units s, m, h, d; rounded down).
std::string relative_time(std::int64_t at_ms, std::int64_t now_ms);
// "2023-11-14T22:13:20.000Z (in 3s)"; "-" when absent.
std::string time_with_relative(std::optional<std::int64_t> at_ms, std::int64_t now_ms);
// "2023-11-14T22:13:20.000Z"; "-" when absent.
std::string time_or_dash(std::optional<std::int64_t> at_ms);
// Milliseconds ("1700000000000") or ISO-8601 UTC ("2023-11-14T22:13:20Z", ".123" allowed).
std::optional<std::int64_t> parse_time(std::string_view text);
// "1s", "500ms", "2m", "1.5s"; a bare number is seconds.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);

// Control characters escaped (\n, \t, \x1b), so that any id fits one table cell.
std::string printable(std::string_view text);
// At most `max` code points of printable(text), "…" appended when cut.
std::string clip(std::string_view text, std::size_t max);

// The work state of a row: done, dead, claimed, delayed or pending.
std::string state_of(const a2::StoredEvent& e, std::int64_t now_ms);

// Columns separated by two spaces, each as wide as its widest cell (in code points); the
// columns named in `right` are right-aligned (numbers).
class Table {
 public:
  explicit Table(std::vector<std::string> headers, std::vector<std::string> right = {});
  void add(std::vector<std::string> row);
  bool empty() const { return rows_.empty(); }
  void print(std::ostream& out) const;

 private:
  std::vector<std::string> headers_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

// "key  value" lines with the keys padded to one width.
void print_fields(std::ostream& out,
                  const std::vector<std::pair<std::string, std::string>>& fields);

// One JSON document (indented) and a newline: --json output.
void print_json(std::ostream& out, const a2::Json& doc);

}  // namespace a2ctl
