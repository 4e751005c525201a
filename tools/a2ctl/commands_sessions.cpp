// SPDX-License-Identifier: MIT
// sessions, show, stats: what the store holds, read with list_sessions and inspect_session.
#include <CLI/CLI.hpp>
#include <map>
#include <memory>
#include <thread>

#include "cli.hpp"
#include "json_codec.hpp"
#include "output.hpp"

namespace a2ctl {

std::vector<a2::SessionSummary> all_sessions(a2::Store& store) {
  std::map<std::string, a2::SessionSummary> by_id;
  a2::ListSessionsRequest request{.cursor = "", .limit = 1000};
  for (;;) {
    auto page = store.list_sessions(request);
    for (auto& s : page.sessions) by_id[s.session_id] = std::move(s);
    if (page.next_cursor.empty()) break;
    request.cursor = std::move(page.next_cursor);
  }
  std::vector<a2::SessionSummary> out;
  out.reserve(by_id.size());
  for (auto& [id, s] : by_id) out.push_back(std::move(s));
  return out;
}

namespace {

struct SessionsArgs {
  std::size_t limit = 0;
  bool with_dead = false;
  bool with_work = false;
};

void run_sessions(Context& ctx, const SessionsArgs& args) {
  auto all = all_sessions(ctx.store());
  std::vector<a2::SessionSummary> shown;
  std::size_t matching = 0;
  for (auto& s : all) {
    if (args.with_dead && s.dead == 0) continue;
    if (args.with_work && s.pending == 0) continue;
    ++matching;
    if (args.limit == 0 || shown.size() < args.limit) shown.push_back(s);
  }
  if (ctx.globals.json) {
    a2::Json doc = a2::Json::object();
    doc["sessions"] = a2::Json::array();
    for (const auto& s : shown) doc["sessions"].push_back(to_json(s));
    doc["total"] = matching;
    doc["truncated"] = shown.size() < matching;
    print_json(ctx.out, doc);
    return;
  }
  Table t({"SESSION", "HEAD", "CLEARED", "PENDING", "READY", "CLAIMED", "DEAD"},
          {"HEAD", "CLEARED", "PENDING", "READY", "CLAIMED", "DEAD"});
  for (const auto& s : shown)
    t.add({printable(s.session_id), std::to_string(s.head), std::to_string(s.clear_index),
           std::to_string(s.pending), std::to_string(s.ready), std::to_string(s.claimed),
           std::to_string(s.dead)});
  t.print(ctx.out);
  ctx.out << matching << (matching == 1 ? " session" : " sessions");
  if (shown.size() < matching) ctx.out << " (" << shown.size() << " shown; --limit)";
  ctx.out << '\n';
}

void run_show(Context& ctx, const std::string& session) {
  auto s = ctx.store().inspect_session(session);
  if (ctx.globals.json) {
    print_json(ctx.out, to_json(s));
    return;
  }
  const auto& m = s.summary;
  const std::int64_t now = ctx.now_ms();
  print_fields(ctx.out, {{"session", printable(m.session_id)},
                         {"head", std::to_string(m.head)},
                         {"cleared at", m.clear_index ? std::to_string(m.clear_index) : "never"},
                         {"pending", std::to_string(m.pending)},
                         {"ready", std::to_string(m.ready)},
                         {"claimed", std::to_string(m.claimed)},
                         {"dead", std::to_string(m.dead)}});
  ctx.out << "\nlanes\n";
  if (s.lanes.empty()) {
    ctx.out << "  (none)\n";
  } else {
    Table t({"LANE", "HEAD", "PENDING"}, {"HEAD", "PENDING"});
    for (const auto& l : s.lanes)
      t.add({printable(l.lane), std::to_string(l.head_index), std::to_string(l.pending)});
    t.print(ctx.out);
  }
  ctx.out << "\nclaims\n";
  if (s.claims.empty()) {
    ctx.out << "  (none)\n";
  } else {
    Table t({"INDEX", "ATTEMPT", "HOLDER", "EXPIRES"}, {"INDEX", "ATTEMPT"});
    for (const auto& c : s.claims)
      t.add({std::to_string(c.index), std::to_string(c.attempt), printable(c.holder),
             time_with_relative(c.expires_at, now)});
    t.print(ctx.out);
  }
  ctx.out << "\nsnapshots\n";
  if (s.snapshots.empty()) {
    ctx.out << "  (none)\n";
  } else {
    Table t({"REDUCER", "INDEX", "HISTORY"}, {"INDEX", "HISTORY"});
    for (const auto& c : s.snapshots)
      t.add({printable(c.reducer), std::to_string(c.index), std::to_string(c.history)});
    t.print(ctx.out);
  }
}

struct Totals {
  std::int64_t sessions = 0, events = 0, pending = 0, ready = 0, claimed = 0, dead = 0;
};

Totals totals_of(const std::vector<a2::SessionSummary>& all) {
  Totals t;
  for (const auto& s : all) {
    ++t.sessions;
    t.events += s.head;
    t.pending += s.pending;
    t.ready += s.ready;
    t.claimed += s.claimed;
    t.dead += s.dead;
  }
  return t;
}

void run_stats(Context& ctx, const std::string& window_text) {
  auto window = parse_duration(window_text);
  if (!window) throw UsageError("--window '" + window_text + "' is not a duration (1s, 500ms, 2m)");
  auto& store = ctx.store();
  const auto first = totals_of(all_sessions(store));
  Totals second = first;
  double seconds = 0;
  if (window->count() > 0) {
    const auto start = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(*window);
    second = totals_of(all_sessions(store));
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  // Rates: the change of each total per second across the window (appends raise `events`).
  auto rate = [&](std::int64_t a, std::int64_t b) {
    return seconds > 0 ? static_cast<double>(b - a) / seconds : 0.0;
  };
  struct Row {
    const char* name;
    std::int64_t a, b;
  };
  const Row rows[] = {
      {"sessions", first.sessions, second.sessions}, {"events", first.events, second.events},
      {"pending", first.pending, second.pending},    {"ready", first.ready, second.ready},
      {"claimed", first.claimed, second.claimed},    {"dead", first.dead, second.dead}};
  if (ctx.globals.json) {
    a2::Json doc = a2::Json::object();
    doc["window_seconds"] = seconds;
    doc["totals"] = a2::Json::object();
    doc["rates_per_second"] = a2::Json::object();
    for (const auto& r : rows) {
      doc["totals"][r.name] = r.b;
      doc["rates_per_second"][r.name] = rate(r.a, r.b);
    }
    print_json(ctx.out, doc);
    return;
  }
  Table t({"METRIC", "TOTAL", "CHANGE/S"}, {"TOTAL", "CHANGE/S"});
  for (const auto& r : rows) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%+.1f", rate(r.a, r.b));
    t.add({r.name, std::to_string(r.b), seconds > 0 ? buf : "-"});
  }
  t.print(ctx.out);
}

}  // namespace

void add_session_commands(CLI::App& app, Context& ctx) {
  auto args = std::make_shared<SessionsArgs>();
  auto* sessions = app.add_subcommand(
      "sessions",
      "List the sessions (every page, sorted by id) with their head, clear boundary and "
      "pending / ready / claimed / dead counts");
  sessions->add_option("--limit", args->limit, "Show at most this many (0: all)");
  sessions->add_flag("--with-dead", args->with_dead, "Only sessions with dead letters");
  sessions->add_flag("--with-work", args->with_work, "Only sessions with pending work");
  sessions->footer(
      "Examples:\n  a2ctl sessions\n  a2ctl sessions --with-dead\n  a2ctl sessions --limit 20 "
      "--json");
  ctx.define(sessions, [&ctx, args] { run_sessions(ctx, *args); });

  auto session = std::make_shared<std::string>();
  auto* show = app.add_subcommand(
      "show",
      "A session's counts, its lanes with their heads, its claims with holder and expiry, "
      "and its newest checkpoint per reducer");
  show->add_option("SESSION", *session, "The session id")->required();
  show->footer("Examples:\n  a2ctl show orders:42\n  a2ctl show orders:42 --json");
  ctx.define(show, [&ctx, session] { run_show(ctx, *session); });

  auto window = std::make_shared<std::string>("1s");
  auto* stats = app.add_subcommand(
      "stats",
      "Totals over every session (sessions, events, pending, ready, claimed, dead) and "
      "their change per second over a window (the sessions are listed twice)");
  stats->add_option("--window", *window, "How long to measure the rates (1s, 500ms, 2m; 0: none)")
      ->capture_default_str();
  stats->footer("Examples:\n  a2ctl stats\n  a2ctl stats --window 10s --json");
  ctx.define(stats, [&ctx, window] { run_stats(ctx, *window); });
}

}  // namespace a2ctl
