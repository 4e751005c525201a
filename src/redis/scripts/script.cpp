// SPDX-License-Identifier: MIT
#include "redis/scripts/script.hpp"

#include <algorithm>
#include <cstdint>

#include "a2/observe.hpp"
#include "redis/errors.hpp"

namespace a2::redis::detail::scripts {

namespace {

// EVALSHA sha numkeys key... arg..., encoded in place.
void put_evalsha(Resp& r, const a2::detail::EmbeddedText& script, const Call& call) {
  // The header and the first three arguments take under 128 bytes.
  r.reserve(128 + call.keys.encoded().size() + call.argv.encoded().size());
  r.command(3 + call.keys.size() + call.argv.size());
  r.arg("EVALSHA");
  r.arg(script.sha1);
  r.arg(static_cast<std::int64_t>(call.keys.size()));
  r.raw(call.keys.encoded());
  r.raw(call.argv.encoded());
}

bool noscript(const Reply& r) { return r.is_error() && r.str.rfind("NOSCRIPT", 0) == 0; }

// SCRIPT LOAD of the script's text, encoded in place.
void put_load(Resp& r, const a2::detail::EmbeddedText& script) {
  r.command(3);
  r.arg("SCRIPT");
  r.arg("LOAD");
  r.arg(script.text);
}

// The server lost the script (NOSCRIPT: a restart, SCRIPT FLUSH): load it, and say so.
void load(const Send& send, std::string_view op, const a2::detail::EmbeddedText& script) {
  a2::detail::log_event(LogLevel::info, "script_reload",
                        "a2 redis " + std::string(op) + ": the server had no script " +
                            std::string(script.name) + " (NOSCRIPT); loading it");
  Reply loaded = send([&](Resp& r) { put_load(r, script); });
  if (loaded.is_error())
    fail(op, "SCRIPT LOAD " + std::string(script.name) + " failed: " + loaded.str);
  if (loaded.str != script.sha1)
    fail(op, "the server hashed script " + std::string(script.name) + " to " + loaded.str +
                 ", not " + std::string(script.sha1));
}

Send on(Connection& c, std::string_view op) {
  return [&c, op](const std::function<void(Resp&)>& encode) { return c.command_with(op, encode); };
}

}  // namespace

Args& Args::operator=(std::initializer_list<std::string_view> values) {
  bytes_.clear();
  size_ = 0;
  for (std::string_view v : values) push_back(v);
  return *this;
}

std::vector<std::string> Args::values() const {
  // Each value is "$<length>\r\n<bytes>\r\n" (Resp::arg).
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < bytes_.size()) {
    const std::size_t line_end = bytes_.find("\r\n", at);
    const std::size_t n = std::stoull(bytes_.substr(at + 1, line_end - at - 1));
    out.push_back(bytes_.substr(line_end + 2, n));
    at = line_end + 2 + n + 2;
  }
  return out;
}

Reply run_script(const Send& send, std::string_view op, const a2::detail::EmbeddedText& script,
                 const Call& call) {
  const auto encode = [&](Resp& r) { put_evalsha(r, script, call); };
  Reply reply = send(encode);
  if (noscript(reply)) {
    load(send, op, script);
    reply = send(encode);
  }
  if (reply.is_error()) fail(op, "script " + std::string(script.name) + " failed: " + reply.str);
  return reply;
}

Reply run_script(Connection& c, std::string_view op, const a2::detail::EmbeddedText& script,
                 const Call& call) {
  return run_script(on(c, op), op, script, call);
}

std::vector<Reply> run_script_pipeline(Connection& c, std::string_view op,
                                       const a2::detail::EmbeddedText& script,
                                       const std::vector<Call>& calls) {
  const auto encode = [&](Resp& r) {
    for (const auto& call : calls) put_evalsha(r, script, call);
  };
  auto replies = c.pipeline_with(op, calls.size(), encode);
  if (std::any_of(replies.begin(), replies.end(), noscript)) {
    load(on(c, op), op, script);
    replies = c.pipeline_with(op, calls.size(), encode);
  }
  for (const auto& r : replies)
    if (r.is_error()) fail(op, "script " + std::string(script.name) + " failed: " + r.str);
  return replies;
}

std::vector<Reply> run_script_each(Connection& c, std::string_view op,
                                   const a2::detail::EmbeddedText& script,
                                   const std::vector<Call>& calls) {
  auto replies = c.pipeline_with(op, calls.size(), [&](Resp& r) {
    for (const auto& call : calls) put_evalsha(r, script, call);
  });
  std::vector<std::size_t> again;
  for (std::size_t i = 0; i < replies.size(); ++i)
    if (noscript(replies[i])) again.push_back(i);
  if (again.empty()) return replies;
  load(on(c, op), op, script);
  auto second = c.pipeline_with(op, again.size(), [&](Resp& r) {
    for (std::size_t i : again) put_evalsha(r, script, calls[i]);
  });
  for (std::size_t j = 0; j < again.size(); ++j) replies[again[j]] = std::move(second[j]);
  return replies;
}

}  // namespace a2::redis::detail::scripts
