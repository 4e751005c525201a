// SPDX-License-Identifier: MIT
#include "json_codec.hpp"

#include "cli.hpp"

namespace a2ctl {
namespace {

template <class T>
a2::Json opt(const std::optional<T>& v) {
  return v ? a2::Json(*v) : a2::Json(nullptr);
}

std::optional<std::int64_t> opt_int(const a2::Json& j, const char* field) {
  auto it = j.find(field);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer())
    throw UsageError(std::string("field '") + field + "' is not an integer");
  return it->get<std::int64_t>();
}

std::optional<std::string> opt_string(const a2::Json& j, const char* field) {
  auto it = j.find(field);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) throw UsageError(std::string("field '") + field + "' is not a string");
  return it->get<std::string>();
}

}  // namespace

a2::Json to_json(const a2::StoredEvent& e) {
  a2::Json j = a2::Json::object();
  j["session_id"] = e.session_id;
  j["index"] = e.index;
  j["id"] = e.id;
  j["type"] = e.type;
  j["payload"] = e.payload;
  j["created_at"] = e.created_at;
  j["cause"] = e.cause ? a2::Json{{"index", e.cause->index}, {"attempt", e.cause->attempt}}
                       : a2::Json(nullptr);
  j["lane"] = opt(e.lane);
  j["processed_at"] = opt(e.processed_at);
  j["processed_by_attempt"] = opt(e.processed_by_attempt);
  j["returned_event_ids"] = opt(e.returned_event_ids);
  j["first_claimed_at"] = opt(e.first_claimed_at);
  j["last_claimed_at"] = opt(e.last_claimed_at);
  j["attempt_count"] = e.attempt_count;
  j["claim_holder"] = opt(e.claim_holder);
  j["claim_expires_at"] = opt(e.claim_expires_at);
  j["failure_count"] = e.failure_count;
  j["last_failed_at"] = opt(e.last_failed_at);
  j["last_failed_attempt"] = opt(e.last_failed_attempt);
  j["last_error"] = opt(e.last_error);
  j["failed_at"] = opt(e.failed_at);
  j["available_at"] = opt(e.available_at);
  return j;
}

a2::Json to_json(const a2::SessionSummary& s) {
  return a2::Json{{"session_id", s.session_id},
                  {"head", s.head},
                  {"clear_index", s.clear_index},
                  {"pending", s.pending},
                  {"ready", s.ready},
                  {"claimed", s.claimed},
                  {"dead", s.dead}};
}

a2::Json to_json(const a2::SessionInspection& s) {
  a2::Json j = a2::Json::object();
  j["session"] = to_json(s.summary);
  j["lanes"] = a2::Json::array();
  for (const auto& l : s.lanes)
    j["lanes"].push_back({{"lane", l.lane}, {"head_index", l.head_index}, {"pending", l.pending}});
  j["claims"] = a2::Json::array();
  for (const auto& c : s.claims)
    j["claims"].push_back({{"index", c.index},
                           {"attempt", c.attempt},
                           {"holder", c.holder},
                           {"expires_at", c.expires_at}});
  j["snapshots"] = a2::Json::array();
  for (const auto& c : s.snapshots)
    j["snapshots"].push_back({{"reducer", c.reducer}, {"index", c.index}, {"history", c.history}});
  return j;
}

a2::StoredEvent stored_event_from_json(const a2::Json& j) {
  if (!j.is_object()) throw UsageError("not a JSON object");
  a2::StoredEvent e;
  auto id = opt_string(j, "id");
  auto type = opt_string(j, "type");
  if (!id) throw UsageError("field 'id' is missing");
  if (!type) throw UsageError("field 'type' is missing");
  e.id = *id;
  e.type = *type;
  e.session_id = opt_string(j, "session_id").value_or("");
  e.index = opt_int(j, "index").value_or(0);
  if (auto it = j.find("payload"); it != j.end()) e.payload = *it;
  e.created_at = opt_int(j, "created_at").value_or(0);
  if (auto it = j.find("cause"); it != j.end() && !it->is_null()) {
    auto index = opt_int(*it, "index");
    auto attempt = opt_int(*it, "attempt");
    if (!index || !attempt) throw UsageError("field 'cause' needs index and attempt");
    e.cause = a2::EventCause{*index, *attempt};
  }
  e.lane = opt_string(j, "lane");
  e.processed_at = opt_int(j, "processed_at");
  e.failed_at = opt_int(j, "failed_at");
  e.available_at = opt_int(j, "available_at");
  e.attempt_count = opt_int(j, "attempt_count").value_or(0);
  e.failure_count = opt_int(j, "failure_count").value_or(0);
  e.last_error = opt_string(j, "last_error");
  return e;
}

}  // namespace a2ctl
