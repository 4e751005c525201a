// SPDX-License-Identifier: MIT
#include "redis/scripts/script.hpp"

#include <algorithm>

#include "redis/errors.hpp"

namespace a2::redis::detail::scripts {

namespace {

Argv evalsha(const a2::detail::EmbeddedText& script, const Call& call) {
  Argv argv;
  argv.reserve(3 + call.keys.size() + call.argv.size());
  argv.emplace_back("EVALSHA");
  argv.emplace_back(script.sha1);
  argv.push_back(std::to_string(call.keys.size()));
  argv.insert(argv.end(), call.keys.begin(), call.keys.end());
  argv.insert(argv.end(), call.argv.begin(), call.argv.end());
  return argv;
}

bool noscript(const Reply& r) { return r.is_error() && r.str.rfind("NOSCRIPT", 0) == 0; }

void load(Connection& c, std::string_view op, const a2::detail::EmbeddedText& script) {
  Reply loaded = c.command(op, {"SCRIPT", "LOAD", std::string(script.text)});
  if (loaded.is_error())
    fail(op, "SCRIPT LOAD " + std::string(script.name) + " failed: " + loaded.str);
  if (loaded.str != script.sha1)
    fail(op, "the server hashed script " + std::string(script.name) + " to " + loaded.str +
                 ", not " + std::string(script.sha1));
}

}  // namespace

Reply run_script(Connection& c, std::string_view op, const a2::detail::EmbeddedText& script,
                 const Call& call) {
  const Argv argv = evalsha(script, call);
  Reply reply = c.command(op, argv);
  if (noscript(reply)) {
    load(c, op, script);
    reply = c.command(op, argv);
  }
  if (reply.is_error()) fail(op, "script " + std::string(script.name) + " failed: " + reply.str);
  return reply;
}

std::vector<Reply> run_script_pipeline(Connection& c, std::string_view op,
                                       const a2::detail::EmbeddedText& script,
                                       const std::vector<Call>& calls) {
  std::vector<Argv> commands;
  commands.reserve(calls.size());
  for (const auto& call : calls) commands.push_back(evalsha(script, call));
  auto replies = c.pipeline(op, commands);
  if (std::any_of(replies.begin(), replies.end(), noscript)) {
    load(c, op, script);
    replies = c.pipeline(op, commands);
  }
  for (const auto& r : replies)
    if (r.is_error()) fail(op, "script " + std::string(script.name) + " failed: " + r.str);
  return replies;
}

}  // namespace a2::redis::detail::scripts
