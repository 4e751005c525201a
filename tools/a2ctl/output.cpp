// SPDX-License-Identifier: MIT
#include "output.hpp"

#include <time.h>

#include <algorithm>
#include <cstdio>

namespace a2ctl {
namespace {

// Code points of UTF-8 text: continuation bytes do not count (column widths).
std::size_t width_of(std::string_view s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace

std::string iso_time(std::int64_t ms) {
  std::int64_t secs = ms / 1000;
  std::int64_t rem = ms % 1000;
  if (rem < 0) {
    rem += 1000;
    secs -= 1;
  }
  const time_t t = static_cast<time_t>(secs);
  tm parts{};
  if (!gmtime_r(&t, &parts)) return std::to_string(ms);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", parts.tm_year + 1900,
                parts.tm_mon + 1, parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec,
                static_cast<int>(rem));
  return buf;
}

std::string relative_time(std::int64_t at_ms, std::int64_t now_ms) {
  const std::int64_t delta = at_ms - now_ms;
  std::int64_t s = (delta < 0 ? -delta : delta) / 1000;
  if (s == 0) return "now";
  std::string amount;
  if (s < 60)
    amount = std::to_string(s) + "s";
  else if (s < 3600)
    amount = std::to_string(s / 60) + "m";
  else if (s < 86400)
    amount = std::to_string(s / 3600) + "h";
  else
    amount = std::to_string(s / 86400) + "d";
  return delta > 0 ? "in " + amount : amount + " ago";
}

std::string time_with_relative(std::optional<std::int64_t> at_ms, std::int64_t now_ms) {
  if (!at_ms) return "-";
  return iso_time(*at_ms) + " (" + relative_time(*at_ms, now_ms) + ")";
}

std::string time_or_dash(std::optional<std::int64_t> at_ms) {
  return at_ms ? iso_time(*at_ms) : "-";
}

std::optional<std::int64_t> parse_time(std::string_view text) {
  if (text.empty()) return std::nullopt;
  if (std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    if (text.size() > 16) return std::nullopt;
    return std::stoll(std::string(text));
  }
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0, consumed = 0;
  const std::string s(text);
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &consumed) !=
      6)
    return std::nullopt;
  std::string_view rest = text.substr(static_cast<std::size_t>(consumed));
  std::int64_t ms = 0;
  if (!rest.empty() && rest[0] == '.') {
    std::size_t i = 1;
    int digits = 0;
    while (i < rest.size() && rest[i] >= '0' && rest[i] <= '9') {
      if (digits < 3) ms = ms * 10 + (rest[i] - '0');
      ++digits;
      ++i;
    }
    if (digits == 0) return std::nullopt;
    for (int k = digits; k < 3; ++k) ms *= 10;
    rest = rest.substr(i);
  }
  if (rest != "Z") return std::nullopt;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) return std::nullopt;
  tm parts{};
  parts.tm_year = y - 1900;
  parts.tm_mon = mo - 1;
  parts.tm_mday = d;
  parts.tm_hour = h;
  parts.tm_min = mi;
  parts.tm_sec = sec;
  return static_cast<std::int64_t>(timegm(&parts)) * 1000 + ms;
}

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) {
  std::size_t end = 0;
  while (end < text.size() && ((text[end] >= '0' && text[end] <= '9') || text[end] == '.')) ++end;
  if (end == 0 || end > 12) return std::nullopt;
  double value = 0;
  try {
    std::size_t used = 0;
    value = std::stod(std::string(text.substr(0, end)), &used);
    if (used != end) return std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
  const std::string_view unit = text.substr(end);
  double factor = 0;
  if (unit.empty() || unit == "s")
    factor = 1000;
  else if (unit == "ms")
    factor = 1;
  else if (unit == "m")
    factor = 60000;
  else
    return std::nullopt;
  return std::chrono::milliseconds(static_cast<std::int64_t>(value * factor));
}

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\r')
      out += "\\r";
    else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else
      out += static_cast<char>(c);
  }
  return out;
}

std::string clip(std::string_view text, std::size_t max) {
  std::string p = printable(text);
  if (width_of(p) <= max) return p;
  std::string out;
  std::size_t n = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(p[i]);
    if ((c & 0xC0) != 0x80 && ++n > max - 1) break;
    out += p[i];
  }
  return out + "\xE2\x80\xA6";  // U+2026
}

std::string state_of(const a2::StoredEvent& e, std::int64_t now_ms) {
  if (e.processed_at) return "done";
  if (e.failed_at) return "dead";
  if (e.claim_holder && e.claim_expires_at && *e.claim_expires_at > now_ms) return "claimed";
  if (e.available_at && *e.available_at > now_ms) return "delayed";
  return "pending";
}

Table::Table(std::vector<std::string> headers, std::vector<std::string> right)
    : headers_(std::move(headers)), right_(headers_.size(), false) {
  for (std::size_t i = 0; i < headers_.size(); ++i)
    right_[i] = std::find(right.begin(), right.end(), headers_[i]) != right.end();
}

void Table::add(std::vector<std::string> row) {
  row.resize(headers_.size());
  rows_.push_back(std::move(row));
}

void Table::print(std::ostream& out) const {
  std::vector<std::size_t> widths(headers_.size());
  for (std::size_t i = 0; i < headers_.size(); ++i) widths[i] = width_of(headers_[i]);
  for (const auto& r : rows_)
    for (std::size_t i = 0; i < r.size(); ++i) widths[i] = std::max(widths[i], width_of(r[i]));
  auto line = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      const std::string pad(widths[i] - width_of(cells[i]), ' ');
      if (i > 0) text += "  ";
      text += right_[i] ? pad + cells[i] : cells[i] + (i + 1 < cells.size() ? pad : "");
    }
    out << text << '\n';
  };
  line(headers_);
  for (const auto& r : rows_) line(r);
}

void print_fields(std::ostream& out,
                  const std::vector<std::pair<std::string, std::string>>& fields) {
  std::size_t w = 0;
  for (const auto& f : fields) w = std::max(w, width_of(f.first));
  for (const auto& f : fields)
    out << f.first << std::string(w - width_of(f.first) + 2, ' ') << f.second << '\n';
}

void print_json(std::ostream& out, const a2::Json& doc) {
  out << doc.dump(2, ' ', false, a2::Json::error_handler_t::replace) << '\n';
}

}  // namespace a2ctl
