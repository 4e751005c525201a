// SPDX-License-Identifier: MIT
// append, clear, reclaim: the writes an operator needs by hand.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <memory>

#include "cli.hpp"
#include "confirm.hpp"
#include "json_codec.hpp"
#include "output.hpp"

namespace a2ctl {
namespace {

struct AppendArgs {
  std::string session;
  std::string type;
  std::string payload = "null";
  std::optional<std::string> id;
  std::optional<std::string> lane;
  bool settled = false;
};

a2::Json parse_payload(const std::string& text) {
  try {
    return a2::Json::parse(text);
  } catch (const std::exception& e) {
    throw UsageError("--payload is not JSON: " + std::string(e.what()));
  }
}

void run_append(Context& ctx, const AppendArgs& args) {
  a2::NewEvent e;
  e.id = args.id;
  e.type = args.type;
  e.payload = parse_payload(args.payload);
  e.lane = args.lane;
  e.settled = args.settled;
  auto& store = ctx.store();
  // An append whose id the session already owns writes nothing and returns the stored row.
  const std::int64_t head = store.head(args.session).head_index;
  auto r = store.append(args.session, {e});
  const bool written = !r.events.empty() && r.events.front().index > head;
  if (ctx.globals.json) {
    a2::Json doc = a2::Json::object();
    doc["appended"] = written;
    doc["events"] = a2::Json::array();
    for (const auto& row : r.events) doc["events"].push_back(to_json(row));
    doc["has_pending"] = r.has_pending;
    print_json(ctx.out, doc);
    return;
  }
  for (const auto& row : r.events)
    ctx.out << (written ? "appended " : "already present, nothing written: ")
            << printable(row.session_id) << " #" << row.index << " id " << printable(row.id)
            << '\n';
}

struct ClearArgs {
  std::string session;
  std::optional<std::int64_t> if_last;
};

void run_clear(Context& ctx, const ClearArgs& args) {
  auto& store = ctx.store();
  const auto head = store.head(args.session);
  confirm(ctx, "Clear session '" + printable(args.session) + "' (head " +
                   std::to_string(head.head_index) + "): its events, work and checkpoints become " +
                   "invisible?");
  // Without --if-last the head read above guards the clear: a session that moved on since the
  // question was asked is not cleared (and a retry of a lost reply is recognised).
  const std::int64_t expected = args.if_last ? *args.if_last : head.head_index;
  auto r =
      store.clear({.session_id = args.session, .if_last_index = expected, .cause = std::nullopt});
  if (ctx.globals.json) {
    print_json(
        ctx.out,
        a2::Json{{"cleared", r.cleared}, {"index", r.index}, {"clear_index", r.clear_index}});
  } else if (r.cleared) {
    ctx.out << "cleared " << printable(args.session) << ": marker at " << r.index
            << "; run `a2ctl reclaim` to delete the old events\n";
  }
  if (!r.cleared)
    throw Refused("not cleared: the head is " + std::to_string(r.index) + ", not " +
                  std::to_string(expected) + " (the session moved on; nothing changed)");
}

void run_reclaim(Context& ctx, const std::string& session) {
  auto& store = ctx.store();
  const bool tty = isatty(STDERR_FILENO);
  std::int64_t deleted = 0, batches = 0;
  for (;;) {
    auto r = store.reclaim(session);
    deleted += r.deleted;
    ++batches;
    if (tty)
      ctx.err << "\rreclaim " << printable(session) << ": " << deleted << " events deleted"
              << std::flush;
    if (r.done) break;
  }
  if (tty)
    ctx.err << '\n';
  else
    ctx.err << "reclaim " << printable(session) << ": " << deleted << " events deleted in "
            << batches << (batches == 1 ? " batch\n" : " batches\n");
  if (ctx.globals.json)
    print_json(ctx.out, a2::Json{{"deleted", deleted}, {"batches", batches}, {"done", true}});
  else
    ctx.out << "reclaimed " << deleted << " events of " << printable(session) << '\n';
}

}  // namespace

void add_write_commands(CLI::App& app, Context& ctx) {
  auto aa = std::make_shared<AppendArgs>();
  auto* append = app.add_subcommand("append", "Append one event (work, or a fact with --settled)");
  append->add_option("SESSION", aa->session, "The session id")->required();
  append->add_option("--type", aa->type, "The event type")->required();
  append->add_option("--payload", aa->payload, "The payload, JSON text")->capture_default_str();
  append->add_option("--id", aa->id,
                     "The event id (default: a random one); a repeat with the "
                     "same id and content changes nothing");
  append->add_option("--lane", aa->lane, "The lane (events of a lane run one at a time, in order)");
  append->add_flag("--settled", aa->settled, "Store it already processed: a fact, not work");
  append->footer(
      "Exit 1 when the store refuses it (the id belongs to another event: "
      "partial_duplicate_batch).\n"
      "Examples:\n  a2ctl append orders:42 --type order.placed --payload '{\"sku\":\"A1\"}' --id "
      "o42-1\n"
      "  a2ctl append orders:42 --type note --payload '\"checked\"' --settled");
  ctx.define(append, [&ctx, aa] { run_append(ctx, *aa); });

  auto ca = std::make_shared<ClearArgs>();
  auto* clear = app.add_subcommand(
      "clear",
      "Clear a session: append a clear marker and move the boundary there (the old "
      "events, work and checkpoints become invisible; reclaim deletes them). Asks for "
      "confirmation; --yes for scripts");
  clear->add_option("SESSION", ca->session, "The session id")->required();
  clear->add_option("--if-last", ca->if_last,
                    "Clear only if the head is this index (default: the head read before asking)");
  clear->footer(
      "Exit 1 when the session moved on (its head is not the expected one).\n"
      "Examples:\n  a2ctl clear orders:42\n  a2ctl clear orders:42 --yes && a2ctl reclaim "
      "orders:42");
  ctx.define(clear, [&ctx, ca] { run_clear(ctx, *ca); });

  auto session = std::make_shared<std::string>();
  auto* reclaim = app.add_subcommand(
      "reclaim",
      "Delete the events of old lifetimes (below the clear boundary) batch by batch "
      "until none remain, with a progress line on stderr");
  reclaim->add_option("SESSION", *session, "The session id")->required();
  reclaim->footer("Examples:\n  a2ctl reclaim orders:42");
  ctx.define(reclaim, [&ctx, session] { run_reclaim(ctx, *session); });
}

}  // namespace a2ctl
