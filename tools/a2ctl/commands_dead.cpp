// SPDX-License-Identifier: MIT
// dead-letters, redrive: find the stuck work and bring it back (or skip it).
#include <CLI/CLI.hpp>
#include <memory>
#include <set>

#include "cli.hpp"
#include "confirm.hpp"
#include "json_codec.hpp"
#include "output.hpp"

namespace a2ctl {
namespace {

// The dead letters of one session, or of every session whose summary counts dead letters
// (list_sessions first, so thousands of healthy sessions cost one listing).
std::vector<a2::StoredEvent> find_dead(a2::Store& store,
                                       const std::optional<std::string>& session) {
  if (session) return store.dead_letters(*session);
  std::vector<a2::StoredEvent> out;
  for (const auto& s : all_sessions(store)) {
    if (s.dead == 0) continue;
    auto rows = store.dead_letters(s.session_id);
    out.insert(out.end(), rows.begin(), rows.end());
  }
  return out;
}

void run_dead_letters(Context& ctx, const std::optional<std::string>& session, bool full) {
  auto rows = find_dead(ctx.store(), session);
  if (ctx.globals.json) {
    a2::Json doc = a2::Json::object();
    doc["dead_letters"] = a2::Json::array();
    for (const auto& e : rows) doc["dead_letters"].push_back(to_json(e));
    print_json(ctx.out, doc);
    return;
  }
  const std::int64_t now = ctx.now_ms();
  Table t({"SESSION", "INDEX", "TYPE", "ID", "FAILURES", "FAILED", "LAST ERROR"},
          {"INDEX", "FAILURES"});
  for (const auto& e : rows)
    t.add({printable(e.session_id), std::to_string(e.index), clip(e.type, 40), clip(e.id, 40),
           std::to_string(e.failure_count), time_with_relative(e.failed_at, now),
           e.last_error ? (full ? printable(*e.last_error) : clip(*e.last_error, 60)) : "-"});
  t.print(ctx.out);
  ctx.out << rows.size() << (rows.size() == 1 ? " dead letter" : " dead letters") << '\n';
}

struct RedriveArgs {
  std::string session;
  std::vector<std::int64_t> indexes;
  bool all_dead = false;
  std::optional<std::string> only_session;
  bool retry = false;
  bool skip = false;
};

void run_redrive(Context& ctx, const RedriveArgs& args) {
  if (args.retry == args.skip) throw UsageError("give exactly one of --retry and --skip");
  const a2::RedriveAction action = args.retry ? a2::RedriveAction::retry : a2::RedriveAction::skip;
  std::vector<std::pair<std::string, std::int64_t>> targets;
  if (args.all_dead) {
    if (!args.session.empty() || !args.indexes.empty())
      throw UsageError("--all-dead takes no SESSION INDEX...; use --session S to limit it");
    for (const auto& e : find_dead(ctx.store(), args.only_session))
      targets.emplace_back(e.session_id, e.index);
  } else {
    if (args.only_session) throw UsageError("--session goes with --all-dead");
    if (args.session.empty() || args.indexes.empty())
      throw UsageError("give SESSION INDEX... or --all-dead");
    for (auto i : args.indexes) targets.emplace_back(args.session, i);
  }
  if (targets.empty()) {
    if (ctx.globals.json)
      print_json(ctx.out,
                 a2::Json{{"action", a2::to_string(action)}, {"results", a2::Json::array()}});
    else
      ctx.out << "no dead letters\n";
    return;
  }
  std::set<std::string> sessions;
  for (const auto& t : targets) sessions.insert(t.first);
  confirm(ctx, std::string(args.retry ? "Retry " : "Skip ") + std::to_string(targets.size()) +
                   (targets.size() == 1 ? " dead letter" : " dead letters") + " in " +
                   std::to_string(sessions.size()) +
                   (sessions.size() == 1 ? " session" : " sessions") + "?");
  auto& store = ctx.store();
  std::size_t refused = 0;
  a2::Json results = a2::Json::array();
  Table t({"SESSION", "INDEX", "RESULT"}, {"INDEX"});
  for (const auto& [session, index] : targets) {
    auto r = store.redrive({.session_id = session, .index = index, .action = action});
    if (!r.redriven) ++refused;
    results.push_back({{"session_id", session}, {"index", index}, {"redriven", r.redriven}});
    t.add({printable(session), std::to_string(index),
           r.redriven ? (args.retry ? "retried" : "skipped") : "not a dead letter; unchanged"});
  }
  if (ctx.globals.json)
    print_json(ctx.out, a2::Json{{"action", a2::to_string(action)}, {"results", results}});
  else
    t.print(ctx.out);
  if (refused > 0)
    throw Refused(std::to_string(refused) + " of " + std::to_string(targets.size()) +
                  " not redriven: not a dead letter of the current lifetime");
}

}  // namespace

void add_dead_commands(CLI::App& app, Context& ctx) {
  auto session = std::make_shared<std::optional<std::string>>();
  auto full = std::make_shared<bool>(false);
  auto* dead = app.add_subcommand(
      "dead-letters",
      "The dead letters of a session, or of every session (only sessions counting dead letters "
      "are read), with failure count, time and last error");
  dead->add_option("SESSION", *session, "Only this session");
  dead->add_flag("--full", *full, "Print the last errors whole (default: cut at 60 characters)");
  dead->footer(
      "Examples:\n  a2ctl dead-letters\n  a2ctl dead-letters orders:42 --full\n"
      "  a2ctl dead-letters --json | jq '.dead_letters[] | {session_id, index, last_error}'");
  ctx.define(dead, [&ctx, session, full] { run_dead_letters(ctx, *session, *full); });

  auto args = std::make_shared<RedriveArgs>();
  auto* redrive = app.add_subcommand(
      "redrive",
      "Bring dead letters back: --retry makes them claimable again (failure count reset), --skip "
      "settles them (their lane moves on). Asks for confirmation; --yes for scripts");
  redrive->add_option("SESSION", args->session, "The session of the dead letters");
  redrive->add_option("INDEX", args->indexes, "Their indexes");
  redrive->add_flag("--all-dead", args->all_dead,
                    "Every dead letter (of every session, or --session)");
  redrive->add_option("--session", args->only_session, "With --all-dead: only this session");
  auto* retry = redrive->add_flag("--retry", args->retry, "Retry: claimable again at once");
  auto* skip = redrive->add_flag("--skip", args->skip, "Skip: settled without running");
  retry->excludes(skip);
  redrive->footer(
      "Exit 1 when an index is not a dead letter of the current lifetime (it is left unchanged).\n"
      "Examples:\n  a2ctl redrive orders:42 7 --retry\n  a2ctl redrive orders:42 7 9 --skip --yes\n"
      "  a2ctl redrive --all-dead --session orders:42 --retry\n  a2ctl redrive --all-dead --retry "
      "--yes");
  ctx.define(redrive, [&ctx, args] { run_redrive(ctx, *args); });
}

}  // namespace a2ctl
