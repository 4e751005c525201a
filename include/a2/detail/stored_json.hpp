// SPDX-License-Identifier: MIT
#pragma once

// Decoding JSON text read back from a server (payloads, checkpoint and presence states). a2
// itself never stores a value nested deeper than kMaxJsonDepth (validate.hpp), but another writer
// sharing the database (the TypeScript package) can. nlohmann's parser and destructor do not
// recurse, but copying, comparing or dumping the value does, so such text is not turned into a
// tree at all.

#include <cstddef>
#include <string_view>

#include "a2/types.hpp"

namespace a2::detail {

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

// Parses stored JSON text. Text nested deeper than kMaxJsonDepth is returned as a JSON string
// holding the text unchanged, so that no caller's recursive walk of the value can overflow the
// stack. Throws what Json::parse throws for text that is not JSON.
inline Json parse_stored_json(std::string_view text) {
  if (json_text_depth(text, kMaxJsonDepth + 1) > kMaxJsonDepth) return Json(std::string(text));
  return Json::parse(text);
}

}  // namespace a2::detail
