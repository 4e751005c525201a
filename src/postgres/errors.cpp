// SPDX-License-Identifier: MIT
#include "postgres/errors.hpp"

#include <cstdint>
#include <exception>
#include <pqxx/pqxx>
#include <string>

#include "a2/detail/contract_errors.hpp"
#include "a2/detail/json_text.hpp"
#include "a2/errors.hpp"
#include "postgres/statement_error.hpp"

namespace a2::postgres::detail {
namespace {

using a2::detail::ErrorSite;

ErrorSite site(std::string_view op) { return ErrorSite{"postgres", op}; }
std::string context(std::string_view op) { return a2::detail::error_prefix(site(op)); }

// The primary line of a server error ("ERROR:  text\nDETAIL: ..." -> "text").
std::string primary_message(std::string_view what) {
  auto line = what.substr(0, what.find('\n'));
  for (std::string_view prefix : {"ERROR:  ", "FATAL:  ", "ERROR: ", "FATAL: "}) {
    if (line.substr(0, prefix.size()) == prefix) {
      line.remove_prefix(prefix.size());
      break;
    }
  }
  return std::string(line);
}

// The DETAIL line of a server error as JSON (schema.sql raises contract errors with a JSON
// object there); discarded (null) when absent or not JSON.
Json detail_of(std::string_view what) {
  constexpr std::string_view kDetail = "\nDETAIL:  ";
  const auto at = what.find(kDetail);
  if (at == std::string_view::npos) return Json();
  auto line = what.substr(at + kDetail.size());
  line = line.substr(0, line.find('\n'));
  try {
    return a2::detail::parse_stored_json(line);
  } catch (const std::exception&) {
    return Json();
  }
}

// The contract error of SQLSTATE `state` (A2001..A2005) with the facts of `detail`. Returns
// only when the detail lacks them (a function of another version): the caller then throws the
// error's type with the server's words.
void throw_contract_error(std::string_view op, const std::string& state, const Json& d) {
  if (!d.is_object()) return;
  auto text = [&](const char* key) { return d.at(key).get<std::string>(); };
  auto number = [&](const char* key) { return d.at(key).get<std::int64_t>(); };
  try {
    if (state == "A2001") a2::detail::throw_no_event(site(op), text("session"), number("index"));
    if (state == "A2002") a2::detail::throw_id_held_by_cleared_work(site(op), text("session"));
    if (state == "A2004")
      a2::detail::throw_attempt_superseded(site(op), text("session"), number("index"),
                                           number("attempt"));
    if (state == "A2005")
      a2::detail::throw_scheduled_work_cleared(site(op), text("session"), number("origin"));
    if (state == "A2003") {
      const std::string kind = text("kind");
      if (kind == "id_owned_elsewhere") a2::detail::throw_id_owned_elsewhere(site(op), text("id"));
      if (kind == "some_ids_stored")
        a2::detail::throw_some_ids_stored(site(op), text("session"),
                                          static_cast<std::size_t>(number("stored")),
                                          static_cast<std::size_t>(number("total")));
      if (kind == "replay_mismatch") a2::detail::throw_replay_mismatch(site(op), text("session"));
      if (kind == "completion_mismatch")
        a2::detail::throw_completion_mismatch(site(op), text("session"), number("index"),
                                              number("attempt"));
      if (kind == "child_id_taken")
        a2::detail::throw_child_id_taken(site(op), text("session"), number("index"), text("id"));
      if (kind == "marker_id_taken") a2::detail::throw_marker_id_taken(site(op), text("id"));
    }
  } catch (const a2::Error&) {
    throw;
  } catch (const std::exception&) {
    // A detail without the expected facts.
  }
}

}  // namespace

void translate_current_exception(std::string_view op, bool sent) {
  try {
    throw;
  } catch (const a2::Error&) {
    throw;
  } catch (const pqxx::sql_error& e) {
    const std::string& state = e.sqlstate();
    const std::string message = context(op) + primary_message(e.what());
    if (state.size() == 5 && state.compare(0, 3, "A20") == 0) {
      throw_contract_error(op, state, detail_of(e.what()));
      if (state == "A2001") throw InvalidArgument(message);
      if (state == "A2002") throw Unavailable(message);
      if (state == "A2003") throw PartialDuplicateBatch(message);
      if (state == "A2004") throw SupersededAttempt(message);
      if (state == "A2005") throw SessionCleared(message);
    }
    if (const auto* statement = dynamic_cast<const StatementError*>(&e);
        statement != nullptr && statement->event_id_taken())
      throw PartialDuplicateBatch(context(op) +
                                  "an event id of this write was stored meanwhile by a concurrent "
                                  "write (unique violation of a2_events_event_id_key); nothing "
                                  "changed");
    // Deadlocks (40P01), serialization failures (40001), timeouts and anything unexpected.
    throw Unavailable(message + " (SQLSTATE " + state + ")");
  } catch (const pqxx::broken_connection& e) {
    if (sent)
      throw Unavailable(context(op) +
                            "the connection was lost after the request was sent; "
                            "outcome unknown: " +
                            primary_message(e.what()),
                        true);
    throw Unavailable(context(op) + "cannot connect: " + primary_message(e.what()));
  } catch (const pqxx::in_doubt_error& e) {
    throw Unavailable(context(op) + "outcome unknown: " + primary_message(e.what()), true);
  } catch (const pqxx::statement_completion_unknown& e) {
    throw Unavailable(context(op) + "outcome unknown: " + primary_message(e.what()), true);
  } catch (const pqxx::failure& e) {
    throw Unavailable(context(op) + primary_message(e.what()));
  } catch (const std::exception& e) {
    throw Unavailable(context(op) + e.what());
  } catch (...) {
    throw Unavailable(context(op) + "unknown failure");
  }
}

void throw_timed_out(std::string_view op, std::chrono::milliseconds command_timeout) {
  throw Unavailable(context(op) + "no answer within the command timeout (" +
                        std::to_string(command_timeout.count()) +
                        " ms); the connection was closed; outcome unknown",
                    true);
}

void throw_unreadable_reply(std::string_view op, std::string_view why) {
  throw Unavailable(context(op) +
                        "unreadable reply after the function committed (outcome "
                        "unknown): " +
                        std::string(why),
                    true);
}

}  // namespace a2::postgres::detail
