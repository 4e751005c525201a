// SPDX-License-Identifier: MIT
#pragma once

// JSON text as the original package writes and reads it. append_json_text() (and json_text(),
// its string form) is the one serializer of every JSON text a2 stores or sends: the bytes
// JSON.stringify gives for the same value (members in insertion order, no spaces, numbers as
// ECMAScript Number::toString prints them, strings escaped as JSON.stringify escapes them).
// parse_stored_json() is the one parser of JSON text read back from a store: it also reads what
// JSON.stringify writes but nlohmann rejects (a lone UTF-16 surrogate escape such as "\ud800",
// decoded as U+FFFD). Stateless; thread-safe.

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "a2/types.hpp"

namespace a2::detail {

// An output of the append_*_text functions below that only counts the bytes they write: the
// size of a JSON text without building it (the validator's payload limit).
struct TextSize {
  std::size_t bytes = 0;
  TextSize& operator+=(char) {
    ++bytes;
    return *this;
  }
  TextSize& operator+=(std::string_view s) {
    bytes += s.size();
    return *this;
  }
  TextSize& append(const char*, std::size_t n) {
    bytes += n;
    return *this;
  }
  TextSize& append(std::size_t n, char) {
    bytes += n;
    return *this;
  }
  TextSize& append(std::string_view s, std::size_t from, std::size_t n = std::string_view::npos) {
    bytes += s.substr(from, n).size();
    return *this;
  }
};

// A double as ECMAScript's Number::toString writes it: the shortest digits that round-trip,
// plain notation for exponents -7 < e < 21 ("1", "0.5", "100000000000000000000", "0.000001"),
// otherwise "1e+21", "1.5e-7". -0 is "0"; NaN and infinities are "null" (JSON.stringify).
// Out: std::string, or TextSize to count the bytes.
template <class Out>
void append_number_text(Out& out, double value) {
  if (!std::isfinite(value)) {
    out += "null";
    return;
  }
  if (value == 0) {
    out += '0';
    return;
  }
  char buffer[40];
  auto [end, ec] =
      std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
  (void)ec;  // 40 bytes hold any double.
  std::string_view sci(buffer, static_cast<std::size_t>(end - buffer));  // "-d.ddde+XX"
  if (sci.front() == '-') {
    out += '-';
    sci.remove_prefix(1);
  }
  const auto e_at = sci.find('e');
  std::string digits;
  digits.reserve(e_at);
  for (std::size_t i = 0; i < e_at; ++i)
    if (sci[i] != '.') digits += sci[i];
  int exponent = 0;
  std::from_chars(sci.data() + e_at + (sci[e_at + 1] == '+' ? 2 : 1), sci.data() + sci.size(),
                  exponent);
  const int k = static_cast<int>(digits.size());
  const int n = exponent + 1;  // value = 0.digits x 10^n
  if (k <= n && n <= 21) {
    out += digits;
    out.append(static_cast<std::size_t>(n - k), '0');
  } else if (0 < n && n <= 21) {
    out.append(digits, 0, static_cast<std::size_t>(n));
    out += '.';
    out.append(digits, static_cast<std::size_t>(n));
  } else if (-6 < n && n <= 0) {
    out += "0.";
    out.append(static_cast<std::size_t>(-n), '0');
    out += digits;
  } else {
    out += digits[0];
    if (k > 1) {
      out += '.';
      out.append(digits, 1);
    }
    out += 'e';
    out += n - 1 < 0 ? '-' : '+';
    out += std::to_string(n - 1 < 0 ? 1 - n : n - 1);
  }
}

// A string as JSON.stringify quotes it: '"', '\' and the controls below U+0020 escaped (\b \f \n
// \r \t, others \u00xx in lowercase hex), every other code point copied. Precondition: valid
// UTF-8 (the validator guarantees it for every value a2 writes); otherwise nlohmann's type_error
// 316 is thrown, as Json::dump() would.
template <class Out>
void append_string_text(Out& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::size_t copied = 0;  // s[copied, i) is pending plain text.
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      // Check the sequence's shape (RFC 3629: no overlongs, no surrogates, <= U+10FFFF).
      std::size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
      bool ok = c >= 0xC2 && c <= 0xF4 && i + len <= s.size();
      for (std::size_t k = 1; ok && k < len; ++k)
        ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
      if (ok) {
        const auto c1 = static_cast<unsigned char>(s[i + 1]);
        if (c == 0xE0) ok = c1 >= 0xA0;
        if (c == 0xED) ok = c1 < 0xA0;
        if (c == 0xF0) ok = c1 >= 0x90;
        if (c == 0xF4) ok = c1 < 0x90;
      }
      if (!ok) (void)Json(std::string(s)).dump();  // Throws type_error 316.
      i += len - 1;
      continue;
    }
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.data() + copied, i - copied);
    copied = i + 1;
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 0xF];
    }
  }
  out.append(s.data() + copied, s.size() - copied);
}

// Appends the JSON text of `value` to `out`, as JSON.stringify(value) writes it. Iterative:
// nesting costs heap, not stack.
template <class Out>
void append_json_text(Out& out, const Json& value) {
  struct Frame {
    const Json* container;
    Json::const_iterator next;
  };
  std::vector<Frame> stack;
  const Json* current = &value;
  for (;;) {
    if (current) {
      switch (current->type()) {
        case Json::value_t::object:
        case Json::value_t::array:
          out += current->is_object() ? '{' : '[';
          stack.push_back({current, current->cbegin()});
          break;
        case Json::value_t::string:
          out += '"';
          append_string_text(out, current->get_ref<const std::string&>());
          out += '"';
          break;
        case Json::value_t::boolean:
          out += current->get<bool>() ? "true" : "false";
          break;
        case Json::value_t::number_integer:
          out += std::to_string(current->get<std::int64_t>());
          break;
        case Json::value_t::number_unsigned:
          out += std::to_string(current->get<std::uint64_t>());
          break;
        case Json::value_t::number_float:
          append_number_text(out, current->get<double>());
          break;
        default:  // null; binary and discarded never pass the validator.
          out += "null";
      }
      current = nullptr;
    }
    if (stack.empty()) return;
    Frame& top = stack.back();
    if (top.next == top.container->cend()) {
      out += top.container->is_object() ? '}' : ']';
      stack.pop_back();
      continue;
    }
    if (top.next != top.container->cbegin()) out += ',';
    if (top.container->is_object()) {
      out += '"';
      append_string_text(out, top.next.key());
      out += "\":";
    }
    current = &*top.next;
    ++top.next;
  }
}

// The JSON text of `value` (append_json_text).
inline std::string json_text(const Json& value) {
  std::string out;
  append_json_text(out, value);
  return out;
}

// `text` with every lone UTF-16 surrogate escape (\uD800-\uDFFF not forming a high-low pair)
// inside a string replaced by \ufffd. Everything else is copied unchanged.
inline std::string replace_lone_surrogates(std::string_view text) {
  auto hex4 = [&](std::size_t at) -> long {
    if (at + 4 > text.size()) return -1;
    long v = 0;
    for (std::size_t i = at; i < at + 4; ++i) {
      const char c = text[i];
      const int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
      if (d < 0) return -1;
      v = v * 16 + d;
    }
    return v;
  };
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (!in_string) {
      in_string = c == '"';
      out += c;
      continue;
    }
    if (c == '"') {
      in_string = false;
      out += c;
      continue;
    }
    if (c != '\\' || i + 1 >= text.size()) {
      out += c;
      continue;
    }
    if (text[i + 1] != 'u') {  // A two-character escape.
      out.append(text, i, 2);
      ++i;
      continue;
    }
    const long unit = hex4(i + 2);
    if (unit >= 0xD800 && unit <= 0xDBFF && i + 7 < text.size() && text[i + 6] == '\\' &&
        text[i + 7] == 'u') {
      const long low = hex4(i + 8);
      if (low >= 0xDC00 && low <= 0xDFFF) {  // A pair: one code point.
        out.append(text, i, 12);
        i += 11;
        continue;
      }
    }
    if (unit >= 0xD800 && unit <= 0xDFFF) {
      out += "\\ufffd";
      i += 5;
      continue;
    }
    out.append(text, i, 2);  // Any other \u escape: its hex digits follow as plain text.
    ++i;
  }
  return out;
}

// The nesting depth of JSON text (arrays and objects; brackets inside strings do not count),
// found in one pass without recursion and without parsing. Stops counting at `stop`.
inline std::size_t json_text_depth(std::string_view text, std::size_t stop) {
  std::size_t depth = 0, deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // The escaped character cannot end the string.
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest && (deepest = depth) >= stop) return deepest;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

// The most levels a record or reply wraps around a stored value: a Postgres reply object holding
// an array of row objects, a Redis checkpoint record, a wake-up message's event array.
inline constexpr std::size_t kEnvelopeLevels = 4;

// The common case of parse_stored_json, without nlohmann's lexer: text made of objects, arrays,
// strings of printable ASCII without escapes, integers of at most 18 digits (no fraction or
// exponent), true, false and null, at most kSimpleJsonDepth levels, no repeated key. It builds
// the value nlohmann would (a non-negative integer is number_unsigned, a negative one
// number_integer). Anything else, valid or not, returns false and leaves `out` unspecified: the
// caller parses the text with nlohmann, which gives the same value or its parse_error.
inline constexpr std::size_t kSimpleJsonDepth = 64;
static_assert(kSimpleJsonDepth <= kMaxJsonDepth);

class SimpleJsonParser {
 public:
  explicit SimpleJsonParser(std::string_view text) : at_(text.data()), end_(at_ + text.size()) {}

  bool parse(Json& out) {
    if (!value(out, 0)) return false;
    space();
    return at_ == end_;
  }

 private:
  void space() {
    while (at_ != end_ && (*at_ == ' ' || *at_ == '\n' || *at_ == '\r' || *at_ == '\t')) ++at_;
  }
  bool literal(std::string_view word) {
    if (static_cast<std::size_t>(end_ - at_) < word.size() ||
        std::string_view(at_, word.size()) != word)
      return false;
    at_ += word.size();
    return true;
  }
  // After the opening quote; on success past the closing one.
  bool string(std::string_view& out) {
    const char* from = at_;
    while (at_ != end_ && *at_ != '"') {
      const auto c = static_cast<unsigned char>(*at_);
      if (c < 0x20 || c > 0x7e || c == '\\') return false;
      ++at_;
    }
    if (at_ == end_) return false;
    out = std::string_view(from, static_cast<std::size_t>(at_ - from));
    ++at_;
    return true;
  }
  bool number(Json& out) {
    const bool negative = *at_ == '-';
    if (negative) ++at_;
    const char* from = at_;
    std::uint64_t v = 0;
    while (at_ != end_ && *at_ >= '0' && *at_ <= '9')
      v = v * 10 + static_cast<unsigned>(*at_++ - '0');
    const auto digits = at_ - from;
    if (digits == 0 || digits > 18 || (*from == '0' && digits > 1)) return false;
    if (at_ != end_ && (*at_ == '.' || *at_ == 'e' || *at_ == 'E')) return false;
    if (negative)
      out = Json(-static_cast<std::int64_t>(v));
    else
      out = Json(v);
    return true;
  }
  bool value(Json& out, std::size_t depth) {
    space();
    if (at_ == end_) return false;
    switch (*at_) {
      case '{': {
        if (depth == kSimpleJsonDepth) return false;
        ++at_;
        out = Json::object();
        auto& members = out.get_ref<Json::object_t&>();
        space();
        if (at_ != end_ && *at_ == '}') {
          ++at_;
          return true;
        }
        members.reserve(4);  // Most objects are small: one allocation instead of three.
        while (true) {
          space();
          std::string_view key;
          if (at_ == end_ || *at_++ != '"' || !string(key)) return false;
          space();
          if (at_ == end_ || *at_++ != ':') return false;
          Json member;
          if (!value(member, depth + 1)) return false;
          if (!members.emplace(std::string(key), std::move(member)).second) return false;
          space();
          if (at_ == end_) return false;
          const char c = *at_++;
          if (c == '}') return true;
          if (c != ',') return false;
        }
      }
      case '[': {
        if (depth == kSimpleJsonDepth) return false;
        ++at_;
        out = Json::array();
        auto& items = out.get_ref<Json::array_t&>();
        space();
        if (at_ != end_ && *at_ == ']') {
          ++at_;
          return true;
        }
        while (true) {
          items.emplace_back();
          if (!value(items.back(), depth + 1)) return false;
          space();
          if (at_ == end_) return false;
          const char c = *at_++;
          if (c == ']') return true;
          if (c != ',') return false;
        }
      }
      case '"': {
        ++at_;
        std::string_view s;
        if (!string(s)) return false;
        out = Json(std::string(s));
        return true;
      }
      case 't':
        out = Json(true);
        return literal("true");
      case 'f':
        out = Json(false);
        return literal("false");
      case 'n':
        out = Json();
        return literal("null");
      default:
        if (*at_ == '-' || (*at_ >= '0' && *at_ <= '9')) return number(out);
        return false;
    }
  }

  const char* at_;
  const char* end_;
};

// Parses JSON text read from a store: a stored value itself, or a record or reply that wraps
// stored values in at most `envelope_levels` levels. Throws Json::parse_error when it is not JSON.
inline Json parse_stored_json(std::string_view text, std::size_t envelope_levels = 0) {
  // Deeper than a2 ever writes (another writer has no limit): kept as a string holding the text,
  // so that no recursive walk of the value (copy, compare, dump) can overflow the stack. A value
  // a2 accepted (kMaxJsonDepth levels) always parses, inside its envelope too.
  {
    Json simple;
    if (SimpleJsonParser(text).parse(simple)) return simple;
  }
  const std::size_t limit = kMaxJsonDepth + envelope_levels;
  if (json_text_depth(text, limit + 1) > limit) return Json(std::string(text));
  // Cheap test first: a surrogate escape is "\u" followed by d/D and 8-f.
  for (std::size_t at = text.find('\\'); at != std::string_view::npos;
       at = text.find('\\', at + 2)) {
    if (at + 3 < text.size() && text[at + 1] == 'u' && (text[at + 2] | 0x20) == 'd') {
      const char c = static_cast<char>(text[at + 3] | 0x20);
      if ((c >= '8' && c <= '9') || (c >= 'a' && c <= 'f'))
        return Json::parse(replace_lone_surrogates(text));
    }
  }
  return Json::parse(text);
}

}  // namespace a2::detail
