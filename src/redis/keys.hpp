// SPDX-License-Identifier: MIT
#pragma once

// Redis key names of the backend (docs/redis-layout.md#keys), kept identical to experimental-a2
// 0.18.

#include <cstdint>
#include <string>
#include <string_view>

#include "a2/detail/constants.hpp"
#include "a2/detail/json_text.hpp"
#include "a2/detail/redis_key_words.hpp"

namespace a2::redis::detail {

namespace words = a2::detail::redis_key_words;

// JSON.stringify(id) (json_text.hpp, the one writer of JSON text) with every ':' then replaced
// by the six characters \u003a, so an id key starts with a quote and holds no ':' (it can never
// spell a session key such as "<p>:ids:count" of a session named "ids"). JSON.stringify never
// escapes ':' itself, so every ':' of its text is one of the id's.
inline std::string escape_id(std::string_view id) {
  std::string text = "\"";
  a2::detail::append_string_text(text, id);
  text += '"';
  std::string out;
  out.reserve(text.size() + 8);
  for (char c : text) {
    if (c == ':')
      out += "\\u003a";
    else
      out += c;
  }
  return out;
}

// The keys of one store (one key prefix). Plain value.
struct Keys {
  std::string prefix;  // No trailing ':'.

  std::string session(std::string_view s, std::string_view suffix) const {
    std::string k;
    k.reserve(prefix.size() + s.size() + suffix.size() + 2);
    k.append(prefix).append(":").append(s).append(":").append(suffix);
    return k;
  }
  std::string log(std::string_view s) const { return session(s, words::kLog); }
  std::string count(std::string_view s) const { return session(s, words::kCount); }
  std::string meta(std::string_view s) const { return session(s, words::kMeta); }
  // The metadata chunk of an index above the split (docs/redis-layout.md#metadata-split-and-chunks)
  // and the last index that chunk holds.
  static std::int64_t chunk_of(std::int64_t index) {
    return (index - 1) / a2::detail::kMetaChunkSize;
  }
  static std::int64_t chunk_last(std::int64_t index) {
    return (chunk_of(index) + 1) * a2::detail::kMetaChunkSize;
  }
  std::string meta_chunk(std::string_view s, std::int64_t index) const {
    return meta(s) + ":" + std::to_string(chunk_of(index));
  }
  std::string meta_split(std::string_view s) const { return session(s, words::kMetaSplit); }
  std::string pending(std::string_view s) const { return session(s, words::kPending); }
  std::string ready(std::string_view s) const { return session(s, words::kReady); }
  std::string snap(std::string_view s, std::string_view r) const {
    return session(s, std::string(words::kSnap) + ":" + std::string(r));
  }
  std::string snap_history(std::string_view s, std::string_view r) const {
    return session(s, std::string(words::kSnapHistory) + ":" + std::string(r));
  }
  std::string pins_prefix(std::string_view s) const {
    return session(s, std::string(words::kSnapshotPins) + ":");
  }
  std::string pins(std::string_view s, std::int64_t index) const {
    return pins_prefix(s) + std::to_string(index);
  }
  std::string pin_counts(std::string_view s) const { return session(s, words::kSnapshotPinCounts); }
  std::string clear(std::string_view s) const { return session(s, words::kClear); }
  std::string presence(std::string_view s) const { return session(s, words::kPresence); }
  std::string notify(std::string_view s) const { return session(s, words::kNotify); }
  std::string id(std::string_view event_id) const { return prefix + ":ids:" + escape_id(event_id); }
  // The work index of the prefix (docs/redis-layout.md#work-index), an a2 addition: one sorted
  // set, member = session id, score = the time (ms) from which the session may have work. It has
  // one ':' only, so it never spells a session key.
  std::string work() const { return prefix + ":work"; }
};

}  // namespace a2::redis::detail
