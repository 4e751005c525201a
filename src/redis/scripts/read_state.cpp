// SPDX-License-Identifier: MIT
#include "redis/scripts/read_state.hpp"

#include "a2/detail/json_text.hpp"
#include "redis/codec.hpp"
#include "redis/errors.hpp"

namespace a2::redis::detail::scripts {

ReadState::Result ReadState::decode(std::string_view op, const std::string& session_id,
                                    const Reply& r) {
  if (!r.is_array() || r.size() < 3) unexpected(op, "short script reply");
  auto invalid = [&] {
    return Unavailable(prefix(op) + "the state frontier of session '" + session_id +
                       "' is invalid");
  };
  Result result;
  const std::string raw_head = text(op, r[0]);
  if (!raw_head.empty()) {
    auto v = parse_integer(raw_head);
    if (!v || *v < 0) throw invalid();
    result.head_index = *v;
  }
  const std::string raw = text(op, r[1]);
  if (!raw.empty()) {
    Json checkpoint;
    try {
      checkpoint = a2::detail::parse_stored_json(raw, a2::detail::kEnvelopeLevels);
    } catch (const Json::exception&) {
      unexpected(op, "a stored checkpoint is not JSON");
    }
    const auto& index = checkpoint.contains("index") ? checkpoint["index"] : Json();
    if (!index.is_number()) throw invalid();
    auto parsed = parse_number(a2::detail::json_text(index));
    if (!parsed || *parsed < 0) throw invalid();
    result.checkpoint =
        Checkpoint{*parsed, checkpoint.contains("state") ? checkpoint["state"] : Json()};
  }
  auto count = parse_integer(text(op, r[2]));
  if (!count || *count < 0) throw invalid();
  result.count = *count;
  if (r.size() > 3 && !r[3].is_nil()) {
    auto c = parse_integer(text(op, r[3]));
    if (!c || *c < 0) throw invalid();
    result.clear = *c;
  }
  return result;
}

}  // namespace a2::redis::detail::scripts
