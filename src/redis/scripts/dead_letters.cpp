// SPDX-License-Identifier: MIT
#include "redis/scripts/dead_letters.hpp"

#include <array>

#include "redis/codec.hpp"

namespace a2::redis::detail::scripts {

std::vector<StoredEvent> DeadLetters::decode(std::string_view op, const std::string& session_id,
                                             const Reply& r) {
  if (!r.is_array()) unexpected(op, "expected an array");
  std::vector<StoredEvent> out;
  // Pairs (stream entry, the metadata columns in kMetaSuffixes order).
  for (std::size_t i = 0; i + 1 < r.size(); i += 2) {
    StoredEvent e = to_stored_event(op, session_id, r[i]);
    const Reply& columns = r[i + 1];
    if (!columns.is_array()) unexpected(op, "bad columns");
    // Lua drops trailing nils from a table, so the column list may be short.
    static const Reply kNil;
    std::array<const Reply*, kMetaSuffixes.size()> c{};
    for (std::size_t at = 0; at < c.size(); ++at)
      c[at] = at < columns.size() ? &columns[at] : &kNil;
    apply_columns(op, e, c);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace a2::redis::detail::scripts
