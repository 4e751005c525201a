// SPDX-License-Identifier: MIT
#pragma once

// Redis key names of the backend (docs/redis-layout.md#keys), kept identical to experimental-a2
// 0.18.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "a2/detail/constants.hpp"
#include "a2/detail/json_text.hpp"
#include "a2/detail/redis_key_words.hpp"

namespace a2::redis::detail {

namespace words = a2::detail::redis_key_words;

// JSON.stringify(id) (json_text.hpp, the one writer of JSON text) with every ':' then replaced
// by the six characters \u003a, so an id key starts with a quote and holds no ':' (it can never
// spell a session key such as "<p>:ids:count" of a session named "ids"). JSON.stringify never
// escapes ':' itself, so every ':' of its text is one of the id's. Appended to `out`.
inline void append_escaped_id(std::string& out, std::string_view id) {
  const std::size_t at = out.size();
  out += '"';
  a2::detail::append_string_text(out, id);
  out += '"';
  if (out.find(':', at) == std::string::npos) return;
  std::string text = out.substr(at);
  out.resize(at);
  for (char c : text) {
    if (c == ':')
      out += "\\u003a";
    else
      out += c;
  }
}
inline std::string escape_id(std::string_view id) {
  std::string out;
  append_escaped_id(out, id);
  return out;
}

// A session key's name as its pieces, "<prefix>:<session>:<suffix>" not yet joined, for a script
// call that writes them into its arguments in place (scripts::Args::push_joined). Views of the
// prefix, the session and the suffix: used at once.
using KeyPieces = std::array<std::string_view, 5>;

// The keys of one store (one key prefix). Plain value. The session keys' accessors give the
// name (Key = std::string, the default) or its pieces (Key = KeyPieces).
struct Keys {
  std::string prefix;  // No trailing ':'.
  template <class Key = std::string>
  Key session(std::string_view s, std::string_view suffix) const {
    const KeyPieces pieces{prefix, ":", s, ":", suffix};
    if constexpr (std::is_same_v<Key, KeyPieces>) {
      return pieces;
    } else {
      std::string k;
      k.reserve(prefix.size() + s.size() + suffix.size() + 2);
      for (std::string_view p : pieces) k.append(p);
      return k;
    }
  }
  template <class Key = std::string>
  Key log(std::string_view s) const {
    return session<Key>(s, words::kLog);
  }
  template <class Key = std::string>
  Key count(std::string_view s) const {
    return session<Key>(s, words::kCount);
  }
  template <class Key = std::string>
  Key meta(std::string_view s) const {
    return session<Key>(s, words::kMeta);
  }
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
  template <class Key = std::string>
  Key meta_split(std::string_view s) const {
    return session<Key>(s, words::kMetaSplit);
  }
  template <class Key = std::string>
  Key pending(std::string_view s) const {
    return session<Key>(s, words::kPending);
  }
  template <class Key = std::string>
  Key ready(std::string_view s) const {
    return session<Key>(s, words::kReady);
  }
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
  template <class Key = std::string>
  Key pin_counts(std::string_view s) const {
    return session<Key>(s, words::kSnapshotPinCounts);
  }
  std::string clear(std::string_view s) const { return session(s, words::kClear); }
  std::string presence(std::string_view s) const { return session(s, words::kPresence); }
  template <class Key = std::string>
  Key notify(std::string_view s) const {
    return session<Key>(s, words::kNotify);
  }
  // The id key of an event id, appended to `out`.
  void put_id(std::string& out, std::string_view event_id) const {
    out.append(prefix).append(":ids:");
    append_escaped_id(out, event_id);
  }
  std::string id(std::string_view event_id) const {
    std::string k;
    k.reserve(prefix.size() + event_id.size() + 8);
    put_id(k, event_id);
    return k;
  }
  // The work index of the prefix (docs/redis-layout.md#work-index), an a2 addition: one sorted
  // set, member = session id, score = the time (ms) from which the session may have work. It has
  // one ':' only, so it never spells a session key.
  std::string work() const { return prefix + ":work"; }
};

}  // namespace a2::redis::detail
