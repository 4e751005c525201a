// SPDX-License-Identifier: MIT
// export, import: a session's events as JSON lines (docs/operating.md#export-and-import).
#include <CLI/CLI.hpp>
#include <istream>
#include <memory>

#include "cli.hpp"
#include "json_codec.hpp"
#include "output.hpp"

namespace a2ctl {
namespace {

constexpr std::int64_t kExportPage = 1000;
constexpr std::size_t kImportBatch = 500;

void run_export(Context& ctx, const std::string& session, std::int64_t after) {
  if (after < 0) throw UsageError("--after must be >= 0");
  auto& store = ctx.store();
  const auto head = store.head(session);
  // The current lifetime after its clear marker: the marker itself is not data to import.
  std::int64_t cursor = std::max(after, head.clear_index);
  std::int64_t written = 0;
  while (cursor < head.head_index) {
    auto rows = store.read_range(session, cursor, std::min(cursor + kExportPage, head.head_index));
    if (rows.empty()) break;  // Cleared meanwhile: the rows are no longer readable.
    for (const auto& e : rows)
      ctx.out << to_json(e).dump(-1, ' ', false, a2::Json::error_handler_t::replace) << '\n';
    written += static_cast<std::int64_t>(rows.size());
    cursor = rows.back().index;
  }
  ctx.out.flush();
  ctx.err << "exported " << written << (written == 1 ? " event" : " events") << " of "
          << printable(session) << '\n';
}

// One line of the input, turned into what append takes.
struct ImportLine {
  std::size_t line = 0;
  a2::NewEvent event;
};

a2::NewEvent to_new_event(const a2::StoredEvent& e, const std::string& id_prefix) {
  a2::NewEvent n;
  n.id = id_prefix + e.id;
  n.type = e.type;
  n.payload = e.payload;
  n.lane = e.lane;
  // A finished event (completed or skipped) is imported as a fact; anything else, dead letters
  // included, as work that is claimable again. Causes are not imported: they name attempts of
  // the source session that the target does not have.
  n.settled = e.processed_at.has_value();
  if (!n.settled && e.available_at) n.available_at_ms = e.available_at;
  return n;
}

struct ImportCount {
  std::int64_t imported = 0;
  std::int64_t present = 0;
};

// Appends one batch. An all-replayed batch changes nothing and returns the stored rows (their
// indexes are at or below the head read before); a batch mixing new and present ids is refused
// as a whole by the store, so it is retried event by event.
void import_batch(a2::Store& store, const std::string& session, std::vector<ImportLine>& batch,
                  ImportCount& count) {
  const std::int64_t head = store.head(session).head_index;
  auto tally = [&](const a2::AppendResult& r) {
    for (const auto& row : r.events) (row.index > head ? count.imported : count.present) += 1;
  };
  std::vector<a2::NewEvent> events;
  for (const auto& l : batch) events.push_back(l.event);
  try {
    tally(store.append(session, std::move(events)));
    return;
  } catch (const a2::PartialDuplicateBatch&) {
    if (batch.size() == 1)
      throw Refused("line " + std::to_string(batch[0].line) + ": id '" +
                    printable(*batch[0].event.id) +
                    "' belongs to another event (another session, or "
                    "different content); the lines before it are imported");
  }
  for (auto& l : batch) {
    try {
      tally(store.append(session, {l.event}));
    } catch (const a2::PartialDuplicateBatch&) {
      throw Refused("line " + std::to_string(l.line) + ": id '" + printable(*l.event.id) +
                    "' belongs to another event (another session, or different content); the "
                    "lines before it are imported");
    }
  }
}

void run_import(Context& ctx, const std::string& session, const std::string& id_prefix) {
  std::vector<ImportLine> lines;
  std::string text;
  for (std::size_t n = 1; std::getline(ctx.in, text); ++n) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    a2::Json j;
    try {
      j = a2::Json::parse(text);
    } catch (const std::exception& e) {
      throw UsageError("line " + std::to_string(n) + " is not JSON: " + e.what());
    }
    try {
      lines.push_back({n, to_new_event(stored_event_from_json(j), id_prefix)});
    } catch (const UsageError& e) {
      throw UsageError("line " + std::to_string(n) + ": " + e.what());
    }
  }
  auto& store = ctx.store();
  ImportCount count;
  for (std::size_t i = 0; i < lines.size(); i += kImportBatch) {
    std::vector<ImportLine> batch(
        lines.begin() + static_cast<std::ptrdiff_t>(i),
        lines.begin() + static_cast<std::ptrdiff_t>(std::min(lines.size(), i + kImportBatch)));
    import_batch(store, session, batch, count);
  }
  if (ctx.globals.json) {
    print_json(ctx.out, a2::Json{{"imported", count.imported}, {"already_present", count.present}});
  } else if (count.imported == 0 && count.present > 0) {
    ctx.out << "nothing changed: all " << count.present << " events are already in "
            << printable(session) << '\n';
  } else {
    ctx.out << "imported " << count.imported << (count.imported == 1 ? " event" : " events")
            << " into " << printable(session) << " (" << count.present << " already present)\n";
  }
}

}  // namespace

void add_transfer_commands(CLI::App& app, Context& ctx) {
  auto session = std::make_shared<std::string>();
  auto after = std::make_shared<std::int64_t>(0);
  auto* exp = app.add_subcommand(
      "export",
      "Write a session's events (current lifetime, after its clear marker) to stdout "
      "as JSON lines, one event with every field per line");
  exp->add_option("SESSION", *session, "The session id")->required();
  exp->add_option("--after", *after, "Start after this index")->capture_default_str();
  exp->footer("Examples:\n  a2ctl export orders:42 > orders-42.jsonl");
  ctx.define(exp, [&ctx, session, after] { run_export(ctx, *session, *after); });

  auto target = std::make_shared<std::string>();
  auto prefix = std::make_shared<std::string>();
  auto* imp = app.add_subcommand(
      "import",
      "Append the events of JSON lines on stdin (export's format) to a session. "
      "Idempotent through the ids: importing the same file again changes nothing");
  imp->add_option("SESSION", *target, "The session to append to")->required();
  imp->add_option("--id-prefix", *prefix,
                  "Prepend this to every id (ids are unique in a store: needed to copy a session "
                  "within one store)");
  imp->footer(
      "Finished events (processed_at set) are imported settled; the others, dead letters "
      "included,\n"
      "as claimable work. Causes and work history (attempts, failures) are not imported.\n"
      "Examples:\n  a2ctl --store redis://new-host import orders:42 < orders-42.jsonl\n"
      "  a2ctl export orders:42 | a2ctl import orders:42-copy --id-prefix copy-");
  ctx.define(imp, [&ctx, target, prefix] { run_import(ctx, *target, *prefix); });
}

}  // namespace a2ctl
