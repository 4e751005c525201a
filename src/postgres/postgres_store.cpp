// SPDX-License-Identifier: MIT
// The Postgres backend: every write is one call of a server-side function of sql/schema.sql
// (one round trip in autocommit), every read one statement of sql/<stem>.sql.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "a2/detail/constants.hpp"
#include "a2/detail/json_text.hpp"
#include "a2/detail/rows.hpp"
#include "a2/embedded/sql_files.hpp"
#include "a2/postgres.hpp"
#include "postgres/connection_pool.hpp"
#include "postgres/postgres_feed.hpp"

namespace a2::postgres {
namespace {

using detail::ConnectionPool;
using detail::Notifier;

constexpr int kSchemaVersion = 1;
// The default command_timeout: statement_timeout plus this, or the fixed value when the
// statement_timeout is 0 (none).
constexpr std::int64_t kCommandTimeoutMargin = 5000;
constexpr std::int64_t kDefaultCommandTimeout = 35000;

Json opt_json(const std::optional<std::int64_t>& v) { return v ? Json(*v) : Json(); }
Json opt_json(const std::optional<std::string>& v) { return v ? Json(*v) : Json(); }
Json cause_json(const std::optional<EventCause>& c) {
  if (!c) return Json();
  return Json{{"index", c->index}, {"attempt", c->attempt}};
}

std::optional<std::int64_t> opt_int(const Json& j, const char* key) {
  const auto& v = j.at(key);
  if (v.is_null()) return std::nullopt;
  return v.get<std::int64_t>();
}
std::optional<std::string> opt_string(const Json& j, const char* key) {
  const auto& v = j.at(key);
  if (v.is_null()) return std::nullopt;
  return v.get<std::string>();
}

// A row of a2_events as to_jsonb() renders it.
StoredEvent stored_from_json(const Json& j) {
  StoredEvent e;
  e.session_id = j.at("session_id").get<std::string>();
  e.index = j.at("idx").get<std::int64_t>();
  e.id = j.at("event_id").get<std::string>();
  e.type = j.at("event_type").get<std::string>();
  e.payload = j.at("payload");
  e.created_at = j.at("created_at").get<std::int64_t>();
  const auto& cause = j.at("cause");
  if (!cause.is_null())
    e.cause =
        EventCause{cause.at("index").get<std::int64_t>(), cause.at("attempt").get<std::int64_t>()};
  e.lane = opt_string(j, "lane");
  e.processed_at = opt_int(j, "processed_at");
  e.processed_by_attempt = opt_int(j, "processed_by_attempt");
  const auto& returned = j.at("returned_event_ids");
  if (!returned.is_null()) e.returned_event_ids = returned.get<std::vector<std::string>>();
  e.first_claimed_at = opt_int(j, "first_claimed_at");
  e.last_claimed_at = opt_int(j, "last_claimed_at");
  e.attempt_count = j.at("attempt_count").get<std::int64_t>();
  e.claim_holder = opt_string(j, "claim_holder");
  e.claim_expires_at = opt_int(j, "claim_expires_at");
  e.failure_count = j.at("failure_count").get<std::int64_t>();
  e.last_failed_at = opt_int(j, "last_failed_at");
  e.last_failed_attempt = opt_int(j, "last_failed_attempt");
  e.last_error = opt_string(j, "last_error");
  e.failed_at = opt_int(j, "failed_at");
  return e;
}

std::vector<StoredEvent> stored_list(const Json& j) {
  std::vector<StoredEvent> out;
  if (j.is_null()) return out;
  out.reserve(j.size());
  for (const auto& row : j) out.push_back(stored_from_json(row));
  return out;
}

std::vector<StoredEvent> stored_rows(const pqxx::result& rows) {
  std::vector<StoredEvent> out;
  out.reserve(rows.size());
  for (const auto& row : rows)
    out.push_back(stored_from_json(
        a2::detail::parse_stored_json(row[0].c_str(), a2::detail::kEnvelopeLevels)));
  return out;
}

std::vector<Event> event_rows(const pqxx::result& rows) {
  std::vector<Event> out;
  out.reserve(rows.size());
  for (const auto& row : rows) out.push_back(detail::event_from_row(row));
  return out;
}

bool plain_identifier(const std::string& s) {
  if (s.empty() || s.size() > 63) return false;
  if (!(s[0] == '_' || (s[0] >= 'a' && s[0] <= 'z'))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
  });
}

class PostgresStore final : public Store {
 public:
  PostgresStore(const Options& options, std::shared_ptr<ConnectionPool> pool)
      : Store(options.clock, options.ids),
        pool_(std::move(pool)),
        notifier_(std::make_shared<Notifier>(pool_)),
        safety_poll_(options.feed_safety_poll),
        clear_event_type_(options.clear_event_type) {}

  ~PostgresStore() override { close(); }

 protected:
  AppendResult do_append(const std::string& s, std::vector<NewEvent> events,
                         const AppendOptions& options) override {
    // The common case, one unsettled event without cause, lane or origin, goes to
    // a2_append_one: typed arguments, and the row is known here once its index is. When the id
    // is already taken the function answers as a2_append would (replay, or the foreign id's
    // error), in the same call.
    if (events.size() == 1 && !options.origin_index && !events[0].cause && !events[0].lane &&
        !events[0].settled) {
      NewEvent& e = events[0];
      const std::int64_t now = clock().now_ms();
      Json reply = pool_->run("append", [&](pqxx::connection_base& conn) {
        pqxx::nontransaction tx(conn);
        auto rows = tx.exec_prepared("a2_append_one", s, now, *e.id, e.type,
                                     a2::detail::json_text(e.payload));
        return after_call("append",
                          [&] {
            return a2::detail::parse_stored_json(rows.at(0)[0].c_str(), a2::detail::kEnvelopeLevels);
          });
      });
      if (!reply.is_number_integer()) return append_result(reply);
      AppendResult result;
      result.events.push_back(a2::detail::new_row(s, reply.get<std::int64_t>(), std::move(*e.id),
                                                  std::move(e.type), std::move(e.payload),
                                                  std::nullopt, std::nullopt, false, now));
      result.has_pending = true;
      return result;
    }
    Json batch = Json::array();
    for (const auto& e : events)
      batch.push_back({{"id", *e.id},
                       {"type", e.type},
                       {"payload", e.payload},
                       {"cause", cause_json(e.cause)},
                       {"lane", opt_json(e.lane)},
                       {"settled", e.settled}});
    Json request = {{"s", s},
                    {"now", clock().now_ms()},
                    {"origin", opt_json(options.origin_index)},
                    {"events", std::move(batch)}};
    return call("append", "a2_append", request, append_result);
  }

  static AppendResult append_result(const Json& r) {
    return AppendResult{stored_list(r.at("events")), r.at("has_pending").get<bool>()};
  }

  std::vector<StoredEvent> do_read(const std::string& s, const ReadOptions& options) override {
    return pool_->run("read", [&](pqxx::connection_base& conn) {
      pqxx::nontransaction tx(conn);
      return stored_rows(tx.exec_prepared("a2_read", s, options.after_index,
                                          options.through_index.value_or(kMaxSafeInteger)));
    });
  }

  std::vector<Event> do_read_history(const std::string& s, const ReadOptions& options) override {
    return pool_->run("read_history", [&](pqxx::connection_base& conn) {
      pqxx::nontransaction tx(conn);
      return event_rows(tx.exec_prepared("a2_read_history", s, options.after_index,
                                         options.through_index.value_or(kMaxSafeInteger)));
    });
  }

  std::optional<std::vector<Event>> do_read_tail(const std::string& s, std::int64_t from_index,
                                                 std::optional<std::int64_t> through) override {
    return pool_->run(
        "read_tail", [&](pqxx::connection_base& conn) -> std::optional<std::vector<Event>> {
          pqxx::nontransaction tx(conn);
          auto rows =
              tx.exec_prepared("a2_read_tail", s, from_index, through.value_or(kMaxSafeInteger));
          if (rows.empty()) return std::vector<Event>{};
          auto clear_index = rows[0][6].as<std::int64_t>();
          // from_index below the lifetime's start, or more than one page: does not fit.
          if (from_index < std::max<std::int64_t>(clear_index, 1) ||
              static_cast<std::int64_t>(rows.size()) > a2::detail::kReadPageSize)
            return std::nullopt;
          return event_rows(rows);
        });
  }

  std::vector<Event> do_read_events(const std::string& s, std::int64_t after_index) override {
    return pool_->run("read_events", [&](pqxx::connection_base& conn) {
      pqxx::nontransaction tx(conn);
      return event_rows(
          tx.exec_prepared("a2_read_events_page", s, after_index, a2::detail::kReadPageSize));
    });
  }

  std::vector<SerializedEvent> do_read_feed_page(const std::string& s,
                                                 std::int64_t after_index) override {
    return pool_->run("read_feed_page", [&](pqxx::connection_base& conn) {
      pqxx::nontransaction tx(conn);
      auto rows =
          tx.exec_prepared("a2_read_events_page", s, after_index, a2::detail::kFeedPageSize);
      std::vector<SerializedEvent> out;
      out.reserve(rows.size());
      for (const auto& row : rows) {
        SerializedEvent e;
        e.session_id = row[0].c_str();
        e.index = row[1].as<std::int64_t>();
        e.id = row[2].c_str();
        e.type = row[3].c_str();
        e.payload_json = row[4].is_null() ? "null" : row[4].c_str();
        e.created_at = row[5].as<std::int64_t>();
        out.push_back(std::move(e));
      }
      return out;
    });
  }

  ClaimResult do_claim_available(const ClaimRequest& request) override {
    auto now = clock().now_ms();
    Json body = {
        {"s", request.session_id},
        {"holder", request.holder},
        {"now", now},
        {"expires", a2::detail::lease_expires_at(now, request.ttl_ms, request.expires_at_ms)},
        {"exclude", request.exclude_indexes}};
    return call("claim_available", "a2_claim_available", body, [](const Json& r) {
      ClaimResult out;
      auto verdict = r.at("verdict").get<std::string>();
      if (verdict == "claimed") {
        out.verdict = ClaimVerdict::claimed;
        out.events = stored_list(r.at("events"));
        auto clear_index = r.at("clear_index").get<std::int64_t>();
        if (clear_index > 0)
          for (auto& e : out.events) e.clear_index = clear_index;
      } else if (verdict == "busy") {
        out.verdict = ClaimVerdict::busy;
        out.retry_at = r.at("retry_at").get<std::int64_t>();
      } else {
        out.verdict = ClaimVerdict::settled;
      }
      return out;
    });
  }

  RenewResult do_renew_claims(const RenewRequest& request) override {
    auto now = clock().now_ms();
    Json claims = Json::array();
    for (const auto& c : request.claims)
      claims.push_back({{"index", c.index}, {"attempt", c.attempt}});
    Json body = {
        {"s", request.session_id},
        {"holder", request.holder},
        {"now", now},
        {"expires", a2::detail::lease_expires_at(now, request.ttl_ms, request.expires_at_ms)},
        {"claims", std::move(claims)}};
    return call("renew_claims", "a2_renew_claims", body, [](const Json& r) {
      return RenewResult{r.at("renewed").get<std::vector<std::int64_t>>(),
                         r.at("superseded").get<std::vector<std::int64_t>>()};
    });
  }

  CompleteResult do_complete_attempt(const CompleteRequest& request) override {
    Json children = Json::array();
    for (const auto& c : request.events)
      children.push_back({{"id", *c.id},
                          {"type", c.type},
                          {"payload", c.payload},
                          {"lane", opt_json(c.lane)},
                          {"settled", c.settled}});
    Json body = {{"s", request.session_id},
                 {"index", request.index},
                 {"attempt", request.attempt},
                 {"now", clock().now_ms()},
                 {"children", std::move(children)}};
    return call("complete_attempt", "a2_complete_attempt", body, [](const Json& r) {
      if (r.at("verdict").get<std::string>() != "completed")
        return CompleteResult{CompleteVerdict::superseded, {}};
      return CompleteResult{CompleteVerdict::completed, stored_list(r.at("events"))};
    });
  }

  FailResult do_fail_attempt(const FailRequest& request) override {
    Json body = {{"s", request.session_id},
                 {"index", request.index},
                 {"attempt", request.attempt},
                 {"error", request.error},
                 {"max_failures", request.max_failures},
                 {"now", clock().now_ms()}};
    return call("fail_attempt", "a2_fail_attempt", body, [](const Json& r) {
      auto verdict = r.at("verdict").get<std::string>();
      FailResult out;
      out.verdict = verdict == "failed"          ? FailVerdict::failed
                    : verdict == "dead_lettered" ? FailVerdict::dead_lettered
                                                 : FailVerdict::superseded;
      out.failure_count = r.at("failure_count").get<std::int64_t>();
      return out;
    });
  }

  std::vector<StoredEvent> do_dead_letters(const std::string& s) override {
    return pool_->run("dead_letters", [&](pqxx::connection_base& conn) {
      pqxx::nontransaction tx(conn);
      return stored_rows(tx.exec_prepared("a2_dead_letters", s));
    });
  }

  RedriveResult do_redrive(const RedriveRequest& request) override {
    Json body = {{"s", request.session_id},
                 {"index", request.index},
                 {"action", std::string(to_string(request.action))},
                 {"now", clock().now_ms()}};
    return call("redrive", "a2_redrive", body, [](const Json& r) {
      return RedriveResult{r.at("redriven").get<bool>(), r.at("has_pending").get<bool>()};
    });
  }

  StateResult do_read_state(const std::string& s, const std::string& reducer,
                            const StateOptions& options) override {
    auto results =
        read_states("read_state", reducer,
                    {StateRequest{s, options.through_index, options.snapshot_through_index}});
    return std::move(results.at(0));
  }

  std::vector<StateResult> do_read_states(const std::string& reducer,
                                          const std::vector<StateRequest>& requests) override {
    return read_states("read_states", reducer, requests);
  }

  void do_put_snapshots(const std::string& s, const std::string& reducer,
                        std::vector<SnapshotWrite> writes) override {
    Json list = Json::array();
    for (const auto& w : writes)
      list.push_back({{"index", w.index}, {"state", w.state}, {"pins", w.pin_event_indexes}});
    Json body = {{"s", s}, {"reducer", reducer}, {"now", clock().now_ms()}, {"writes", list}};
    call("put_snapshots", "a2_put_snapshots", body, [](const Json&) { return 0; });
  }

  ClearResult do_clear(const ClearRequest& request) override {
    Json body = {{"s", request.session_id},
                 {"now", clock().now_ms()},
                 {"if_last", opt_json(request.if_last_index)},
                 {"cause", cause_json(request.cause)},
                 {"marker_id", ids().next_id()},
                 {"marker_type", clear_event_type_}};
    return call("clear", "a2_clear", body, [](const Json& r) {
      return ClearResult{r.at("cleared").get<bool>(), r.at("index").get<std::int64_t>(),
                         r.at("clear_index").get<std::int64_t>()};
    });
  }

  ReclaimResult do_reclaim(const std::string& s) override {
    Json body = {{"s", s}, {"batch", a2::detail::kReclaimBatchSize}};
    return call("reclaim", "a2_reclaim", body, [](const Json& r) {
      return ReclaimResult{r.at("deleted").get<std::int64_t>(), r.at("done").get<bool>()};
    });
  }

  std::unique_ptr<Feed> do_subscribe(const std::string& s, std::int64_t after_index) override {
    notifier_->start();
    return std::make_unique<detail::PostgresFeed>(pool_, notifier_, s, after_index, safety_poll_);
  }

  PresenceMap do_patch_presence(const std::string& s, const PresencePatch& patch) override {
    Json body = {{"s", s},
                 {"participant", patch.participant},
                 {"state", patch.state},
                 {"ttl", patch.ttl_ms},
                 {"now", clock().now_ms()},
                 {"source", nullptr}};
    return call("patch_presence", "a2_patch_presence", body,
                [](const Json& r) { return r.get<PresenceMap>(); });
  }

  PresenceMap do_read_presence(const std::string& s) override {
    auto now = clock().now_ms();
    return pool_->run("read_presence", [&](pqxx::connection_base& conn) {
      pqxx::nontransaction tx(conn);
      auto rows = tx.exec_prepared("a2_read_presence", s, now);
      return a2::detail::parse_stored_json(rows.at(0)[0].c_str(), a2::detail::kEnvelopeLevels)
          .get<PresenceMap>();
    });
  }

  void do_close() override {
    notifier_->stop();
    pool_->close();
  }

 private:
  // Decodes the reply of a write function that has committed (autocommit). Should decoding
  // fail, the change has happened: the caller hears outcome unknown, never a plain failure.
  template <class F>
  static auto after_call(std::string_view op, F&& decode) -> decltype(decode()) {
    try {
      return decode();
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      throw Unavailable(
          "a2 postgres " + std::string(op) +
              ": unreadable reply after the function committed (outcome unknown): " + e.what(),
          true);
    }
  }

  // One call of a write function: one round trip, result decoded by `decode`.
  template <class Decode>
  std::invoke_result_t<Decode, const Json&> call(std::string_view op, const char* statement,
                                                 const Json& request, Decode&& decode) {
    return pool_->run(op, [&](pqxx::connection_base& conn) {
      pqxx::nontransaction tx(conn);
      auto rows = tx.exec_prepared(statement, a2::detail::json_text(request));
      return after_call(op, [&] {
        const auto& field = rows.at(0)[0];
        return decode(field.is_null() ? Json()
                                     : a2::detail::parse_stored_json(
                                           field.c_str(), a2::detail::kEnvelopeLevels));
      });
    });
  }

  std::vector<StateResult> read_states(std::string_view op, const std::string& reducer,
                                       const std::vector<StateRequest>& requests) {
    Json list = Json::array();
    for (std::size_t i = 0; i < requests.size(); ++i)
      list.push_back({{"position", i},
                      {"s", requests[i].session_id},
                      {"through", opt_json(requests[i].through_index)},
                      {"snap", opt_json(requests[i].snapshot_through_index)}});
    return pool_->run(op, [&](pqxx::connection_base& conn) {
      pqxx::nontransaction tx(conn);
      auto rows = tx.exec_prepared("a2_read_states", a2::detail::json_text(list), reducer);
      std::vector<StateResult> out(requests.size());
      for (const auto& row : rows) {
        auto& result = out.at(row[0].as<std::size_t>());
        if (row[1].as<int>() == 0) {
          if (!row[2].is_null()) result.head_index = row[2].as<std::int64_t>();
          if (!row[3].is_null())
            result.snapshot = Checkpoint{
                row[3].as<std::int64_t>(),
                row[4].is_null() ? Json() : a2::detail::parse_stored_json(row[4].c_str())};
          auto clear_index = row[5].as<std::int64_t>();
          if (clear_index > 0) result.clear_index = clear_index;
        } else {
          Event e;
          e.index = row[6].as<std::int64_t>();
          e.id = row[7].c_str();
          e.type = row[8].c_str();
          e.payload = row[9].is_null() ? Json() : a2::detail::parse_stored_json(row[9].c_str());
          e.created_at = row[10].as<std::int64_t>();
          e.session_id = row[11].c_str();
          result.events.push_back(std::move(e));
        }
      }
      return out;
    });
  }

  std::shared_ptr<ConnectionPool> pool_;
  std::shared_ptr<Notifier> notifier_;
  std::chrono::milliseconds safety_poll_;
  std::string clear_event_type_;
};

}  // namespace

std::unique_ptr<Store> open(const Options& options) {
  if (!plain_identifier(options.schema))
    throw InvalidArgument("a2 postgres open: schema " + a2::detail::quote_arg(options.schema) +
                          " must be a plain identifier: [a-z_][a-z0-9_]*, at most 63 bytes");
  if (options.pool_size < 1) throw InvalidArgument("a2 postgres open: pool_size must be >= 1");
  a2::detail::check_clear_event_type("postgres open", options.clear_event_type);
  if (options.statement_timeout.count() < 0)
    throw InvalidArgument("a2 postgres open: statement_timeout must be >= 0");
  if ((options.command_timeout && options.command_timeout->count() <= 0) ||
      (options.pool_acquire_timeout && options.pool_acquire_timeout->count() <= 0))
    throw InvalidArgument("a2 postgres open: command_timeout and pool_acquire_timeout must be > 0");
  const auto command_timeout = options.command_timeout.value_or(
      std::chrono::milliseconds(options.statement_timeout.count() > 0
                                    ? options.statement_timeout.count() + kCommandTimeoutMargin
                                    : kDefaultCommandTimeout));
  auto pool = std::make_shared<ConnectionPool>(detail::Settings{
      options.connection, options.schema, options.pool_size, options.statement_timeout,
      command_timeout, options.pool_acquire_timeout.value_or(command_timeout)});
  // A first connection creates the schema and applies schema.sql under an advisory lock
  // (concurrent opens of one schema take turns), then checks the version; it then joins the pool.
  // Connecting counts against the command timeout; applying the schema does not (it may wait
  // for a concurrent open).
  std::unique_ptr<detail::Connection> conn;
  try {
    conn = pool->connect(std::chrono::steady_clock::now() + command_timeout);
    pqxx::work tx(conn->get());
    tx.exec_params("select pg_advisory_xact_lock(hashtext('a2 schema ' || $1))", options.schema);
    tx.exec("create schema if not exists \"" + options.schema + "\"");
    tx.exec(std::string(a2::detail::sql::kSchema.text));
    auto version = tx.exec("select max(version) from a2_schema_version")[0][0].as<int>();
    if (version != kSchemaVersion)
      throw Unavailable("a2 postgres open: schema '" + options.schema + "' has version " +
                        std::to_string(version) + "; this library supports version " +
                        std::to_string(kSchemaVersion));
    tx.commit();
  } catch (...) {
    detail::translate_current_exception("open", false);
  }
  pool->adopt(std::move(conn));
  return std::make_unique<PostgresStore>(options, std::move(pool));
}

}  // namespace a2::postgres
