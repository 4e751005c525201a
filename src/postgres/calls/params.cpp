// SPDX-License-Identifier: MIT
#include "postgres/calls/params.hpp"

#include <charconv>
#include <stdexcept>

#include "a2/detail/json_text.hpp"

namespace a2::postgres::detail::calls {
namespace {

void append_quoted(std::string& out, std::string_view value) {
  out += '"';
  for (char c : value) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  out += '"';
}

template <class T, class Append>
std::string literal(const std::vector<T>& values, Append&& append) {
  std::string out = "{";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    append(out, values[i]);
  }
  out += '}';
  return out;
}

}  // namespace

std::string text_array(const std::vector<std::string>& values) {
  return literal(values, [](std::string& out, const std::string& v) { append_quoted(out, v); });
}

std::string text_array(const std::vector<std::optional<std::string>>& values) {
  return literal(values, [](std::string& out, const std::optional<std::string>& v) {
    if (v)
      append_quoted(out, *v);
    else
      out += "NULL";
  });
}

std::string int_array(const std::vector<std::int64_t>& values) {
  return literal(values, [](std::string& out, std::int64_t v) { out += std::to_string(v); });
}

std::string int_array(const std::vector<std::optional<std::int64_t>>& values) {
  return literal(values, [](std::string& out, const std::optional<std::int64_t>& v) {
    out += v ? std::to_string(*v) : std::string("NULL");
  });
}

std::string bool_array(const std::vector<bool>& values) {
  std::string out = "{";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    out += values[i] ? 't' : 'f';
  }
  out += '}';
  return out;
}

std::string json_array(const std::vector<const Json*>& values) {
  std::string out = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    out += a2::detail::json_text(*values[i]);
  }
  out += ']';
  return out;
}

std::vector<std::int64_t> parse_int_array(std::string_view text) {
  if (text.size() < 2 || text.front() != '{' || text.back() != '}')
    throw std::invalid_argument("not a bigint[]: " + std::string(text));
  std::vector<std::int64_t> out;
  std::string_view rest = text.substr(1, text.size() - 2);
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const auto item = rest.substr(0, comma);
    std::int64_t value = 0;
    auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (ec != std::errc() || end != item.data() + item.size())
      throw std::invalid_argument("not a bigint[]: " + std::string(text));
    out.push_back(value);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace a2::postgres::detail::calls
