// SPDX-License-Identifier: MIT
// The command line: global options, the command groups, and the one place that turns errors into
// exit codes and "a2ctl <command>: <message>" lines.
#include "cli.hpp"

#include <CLI/CLI.hpp>
#include <iostream>

#include "a2/version.hpp"

namespace a2ctl {
namespace {

constexpr const char* kFooter = R"(Store URLs:
  redis://[:password@]host[:port][/db]   unix:///path/to/redis.sock
  postgres://user@host:port/db           postgresql:///db?host=/run/postgresql
  "host=/tmp port=5432 dbname=app"       (a libpq key=value string)

Exit codes: 0 ok, 1 refused by the store (a verdict), 2 usage, 3 store unavailable.

Examples:
  export A2_STORE=redis://127.0.0.1:6379
  a2ctl sessions --with-dead
  a2ctl dead-letters
  a2ctl redrive orders:42 7 --retry
  a2ctl --store postgresql:///app --schema jobs show orders:42 --json

docs/operating.md describes every command.)";

// The name of the command being run, for error messages ("a2ctl" before one is known).
std::string command_name(const CLI::App& app) {
  for (const auto* sub : app.get_subcommands()) return "a2ctl " + sub->get_name();
  return "a2ctl";
}

}  // namespace

int run(int argc, char** argv, Context& ctx) {
  CLI::App app("a2ctl: look at and operate an a2 store (sessions, events, work, dead letters)",
               "a2ctl");
  app.footer(kFooter);
  app.require_subcommand(1);
  app.fallthrough();  // Global options may follow the command name too.
  app.set_version_flag("--version", std::to_string(A2_VERSION_MAJOR) + "." +
                                        std::to_string(A2_VERSION_MINOR) + "." +
                                        std::to_string(A2_VERSION_PATCH));
  auto& g = ctx.globals;
  app.add_option("--store", g.store_url, "The store URL (or set A2_STORE)")->envname("A2_STORE");
  app.add_option("--prefix", g.prefix, "The Redis key prefix (default a2; or set A2_PREFIX)")
      ->envname("A2_PREFIX");
  app.add_option("--schema", g.schema, "The Postgres schema (default public; or set A2_SCHEMA)")
      ->envname("A2_SCHEMA");
  app.add_flag("--json", g.json, "Print one JSON document (scripts) instead of tables");
  app.add_flag("-y,--yes", g.yes, "Confirm destructive commands without asking");
  app.add_option("--now", g.now,
                 "Judge leases and print relative times as if it were this time (ms since the "
                 "epoch or ISO-8601 UTC); also the store's clock. Default: the system clock");

  add_session_commands(app, ctx);
  add_event_commands(app, ctx);
  add_dead_commands(app, ctx);
  add_write_commands(app, ctx);
  add_transfer_commands(app, ctx);

  try {
    try {
      app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
      app.exit(e, ctx.out, ctx.err);
      ctx.out << '\n';  // The footer ends without one.
      return kOk;
    } catch (const CLI::CallForAllHelp& e) {
      app.exit(e, ctx.out, ctx.err);
      ctx.out << '\n';
      return kOk;
    } catch (const CLI::CallForVersion& e) {
      return app.exit(e, ctx.out, ctx.err);
    } catch (const CLI::ParseError& e) {
      ctx.err << command_name(app) << ": " << e.what()
              << "\nRun with --help for more information.\n";
      return kUsage;
    }
    ctx.command = command_name(app);
    for (auto& [sub, action] : ctx.actions)
      if (sub->parsed()) action();
    ctx.out.flush();
    return kOk;
  } catch (const UsageError& e) {
    ctx.err << ctx.command << ": " << e.what() << '\n';
    return kUsage;
  } catch (const Refused& e) {
    ctx.err << ctx.command << ": " << e.what() << '\n';
    return kRefused;
  } catch (const a2::InvalidArgument& e) {
    ctx.err << ctx.command << ": " << e.what() << '\n';
    return kUsage;
  } catch (const a2::Unavailable& e) {
    ctx.err << ctx.command << ": " << e.what() << '\n';
    return kUnavailable;
  } catch (const a2::Error& e) {
    // PartialDuplicateBatch, SupersededAttempt, SessionCleared: the store refused the write.
    ctx.err << ctx.command << ": " << e.what() << " (" << a2::to_string(e.code()) << ")\n";
    return kRefused;
  } catch (const std::exception& e) {
    ctx.err << ctx.command << ": " << e.what() << '\n';
    return kUnavailable;
  }
}

}  // namespace a2ctl
