// SPDX-License-Identifier: MIT
#pragma once

#include <string_view>

namespace a2::detail {

// A Lua script or SQL file embedded at build time by cmake/a2_embed.cmake: its file stem, the
// SHA1 of its (composed) text, and the text itself.
struct EmbeddedText {
  std::string_view name;
  std::string_view sha1;
  std::string_view text;
};

}  // namespace a2::detail
