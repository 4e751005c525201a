// SPDX-License-Identifier: MIT
// events, event, tail: a session's log (read_range, subscribe).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <csignal>
#include <memory>

#include "cli.hpp"
#include "json_codec.hpp"
#include "output.hpp"

namespace a2ctl {
namespace {

std::atomic<bool> g_interrupted{false};
extern "C" void on_interrupt(int) { g_interrupted.store(true); }

struct EventsArgs {
  std::string session;
  std::int64_t after = 0;
  std::int64_t limit = 100;
};

void print_events_table(Context& ctx, const std::vector<a2::StoredEvent>& rows) {
  const std::int64_t now = ctx.now_ms();
  Table t({"INDEX", "TYPE", "ID", "CREATED", "STATE", "LANE", "ATTEMPTS", "FAILURES", "PAYLOAD"},
          {"INDEX", "ATTEMPTS", "FAILURES"});
  for (const auto& e : rows)
    t.add({std::to_string(e.index), clip(e.type, 40), clip(e.id, 40), iso_time(e.created_at),
           state_of(e, now), e.lane ? clip(*e.lane, 24) : "-", std::to_string(e.attempt_count),
           std::to_string(e.failure_count),
           clip(e.payload.dump(-1, ' ', false, a2::Json::error_handler_t::replace), 60)});
  t.print(ctx.out);
}

void run_events(Context& ctx, const EventsArgs& args) {
  if (args.after < 0) throw UsageError("--after must be >= 0");
  if (args.limit < 1) throw UsageError("--limit must be >= 1");
  auto& store = ctx.store();
  // Indexes are dense, so `limit` rows from the first index of the lifetime after --after.
  const auto head = store.head(args.session);
  const std::int64_t start = std::max(args.after, head.clear_index > 0 ? head.clear_index - 1 : 0);
  auto rows = store.read_range(args.session, start, start + args.limit);
  if (ctx.globals.json) {
    a2::Json doc = a2::Json::object();
    doc["session_id"] = args.session;
    doc["head"] = head.head_index;
    doc["clear_index"] = head.clear_index;
    doc["events"] = a2::Json::array();
    for (const auto& e : rows) doc["events"].push_back(to_json(e));
    print_json(ctx.out, doc);
    return;
  }
  print_events_table(ctx, rows);
  const std::int64_t last = rows.empty() ? start : rows.back().index;
  ctx.out << rows.size() << (rows.size() == 1 ? " event" : " events") << " (head "
          << head.head_index;
  if (last < head.head_index) ctx.out << "; more: --after " << last;
  ctx.out << ")\n";
}

void run_event(Context& ctx, const std::string& session, std::int64_t index) {
  if (index < 1) throw UsageError("INDEX must be >= 1");
  auto rows = ctx.store().read_range(session, index - 1, index);
  if (rows.empty())
    throw Refused("no event at index " + std::to_string(index) +
                  " in the current lifetime of session '" + printable(session) + "'");
  const auto& e = rows.front();
  if (ctx.globals.json) {
    print_json(ctx.out, to_json(e));
    return;
  }
  const std::int64_t now = ctx.now_ms();
  auto num = [](const std::optional<std::int64_t>& v) { return v ? std::to_string(*v) : "-"; };
  std::string returned = "-";
  if (e.returned_event_ids) {
    returned.clear();
    for (const auto& id : *e.returned_event_ids)
      returned += (returned.empty() ? "" : ", ") + printable(id);
    if (returned.empty()) returned = "(none)";
  }
  print_fields(ctx.out,
               {{"session", printable(e.session_id)},
                {"index", std::to_string(e.index)},
                {"id", printable(e.id)},
                {"type", printable(e.type)},
                {"state", state_of(e, now)},
                {"created_at", iso_time(e.created_at)},
                {"cause", e.cause ? "index " + std::to_string(e.cause->index) + " attempt " +
                                        std::to_string(e.cause->attempt)
                                  : "-"},
                {"lane", e.lane ? printable(*e.lane) : "-"},
                {"available_at", time_with_relative(e.available_at, now)},
                {"processed_at", time_or_dash(e.processed_at)},
                {"processed_by_attempt", num(e.processed_by_attempt)},
                {"returned_event_ids", returned},
                {"attempt_count", std::to_string(e.attempt_count)},
                {"first_claimed_at", time_or_dash(e.first_claimed_at)},
                {"last_claimed_at", time_or_dash(e.last_claimed_at)},
                {"claim_holder", e.claim_holder ? printable(*e.claim_holder) : "-"},
                {"claim_expires_at", time_with_relative(e.claim_expires_at, now)},
                {"failure_count", std::to_string(e.failure_count)},
                {"last_failed_at", time_or_dash(e.last_failed_at)},
                {"last_failed_attempt", num(e.last_failed_attempt)},
                {"failed_at", time_or_dash(e.failed_at)},
                {"last_error", e.last_error ? printable(*e.last_error) : "-"},
                {"payload", e.payload.dump(-1, ' ', false, a2::Json::error_handler_t::replace)}});
}

struct TailArgs {
  std::string session;
  std::optional<std::int64_t> after;
  std::int64_t count = 0;
};

void run_tail(Context& ctx, const TailArgs& args) {
  auto& store = ctx.store();
  const std::int64_t after = args.after ? *args.after : store.head(args.session).head_index;
  if (after < 0) throw UsageError("--after must be >= 0");
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  auto feed = store.subscribe(args.session, after);
  std::int64_t seen = 0;
  while (!g_interrupted.load() && (args.count == 0 || seen < args.count)) {
    for (const auto& e : feed->next(std::chrono::milliseconds(200))) {
      const std::string payload =
          e.payload.dump(-1, ' ', false, a2::Json::error_handler_t::replace);
      if (ctx.globals.json) {
        a2::Json j{{"session_id", e.session_id},
                   {"index", e.index},
                   {"id", e.id},
                   {"type", e.type},
                   {"payload", e.payload},
                   {"created_at", e.created_at}};
        ctx.out << j.dump(-1, ' ', false, a2::Json::error_handler_t::replace) << '\n';
      } else {
        ctx.out << e.index << "  " << iso_time(e.created_at) << "  " << printable(e.type) << "  "
                << printable(e.id) << "  " << clip(payload, 200) << '\n';
      }
      ctx.out.flush();
      if (args.count > 0 && ++seen >= args.count) break;
    }
  }
  feed->cancel();
}

}  // namespace

void add_event_commands(CLI::App& app, Context& ctx) {
  auto ea = std::make_shared<EventsArgs>();
  auto* events = app.add_subcommand(
      "events",
      "A page of a session's events (current lifetime, clear marker included) with their "
      "work state");
  events->add_option("SESSION", ea->session, "The session id")->required();
  events->add_option("--after", ea->after, "Start after this index")->capture_default_str();
  events->add_option("--limit", ea->limit, "At most this many events")->capture_default_str();
  events->footer(
      "States: pending, delayed (available later), claimed (live lease), done, dead.\n"
      "Examples:\n  a2ctl events orders:42\n  a2ctl events orders:42 --after 100 --limit 50 "
      "--json");
  ctx.define(events, [&ctx, ea] { run_events(ctx, *ea); });

  auto session = std::make_shared<std::string>();
  auto index = std::make_shared<std::int64_t>(0);
  auto* event = app.add_subcommand("event", "Every field of one event (work metadata included)");
  event->add_option("SESSION", *session, "The session id")->required();
  event->add_option("INDEX", *index, "The event's index")->required();
  event->footer(
      "Exit 1 when the index holds no event of the current lifetime.\n"
      "Examples:\n  a2ctl event orders:42 7\n  a2ctl event orders:42 7 --json");
  ctx.define(event, [&ctx, session, index] { run_event(ctx, *session, *index); });

  auto ta = std::make_shared<TailArgs>();
  auto* tail = app.add_subcommand(
      "tail", "Follow a session's live feed: print each new event until interrupted (Ctrl-C)");
  tail->add_option("SESSION", ta->session, "The session id")->required();
  tail->add_option("--after", ta->after,
                   "Start after this index (default: the head, new events only)");
  tail->add_option("--count", ta->count, "Stop after this many events (0: never)");
  tail->footer(
      "With --json each event is one JSON line (session_id, index, id, type, payload, "
      "created_at).\nExamples:\n  a2ctl tail orders:42\n  a2ctl tail orders:42 --after 0 --json");
  ctx.define(tail, [&ctx, ta] { run_tail(ctx, *ta); });
}

}  // namespace a2ctl
