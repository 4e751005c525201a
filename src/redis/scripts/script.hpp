// SPDX-License-Identifier: MIT
#pragma once

// The typed seam between C++ and the Lua scripts of lua/ (docs/redis-layout.md#scripts). Each
// script has one typed caller in src/redis/scripts/<script>.hpp: a struct of its arguments that
// encodes itself into KEYS and ARGV (encode), the script's reply decoded into a typed result
// (decode), and the script's declared signature (kKeys, kArgv), which must equal the
// `-- @keys` / `-- @argv` header lines of the script; test/redis/script_signature_test.cpp checks
// that, and that every encoding fits it. Nothing outside these callers addresses a script's
// arguments or reply by position.
//
// Signature grammar (the script's header and kKeys/kArgv alike): names separated by spaces;
// `name*count` is that many values, `{ ... }*count` that many groups, where count is the value
// of an earlier ARGV of that name.

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/embedded.hpp"
#include "redis/client.hpp"
#include "redis/keys.hpp"

namespace a2::redis::detail::scripts {

// The KEYS or the ARGV of one script call. Each value is written in RESP (Resp::arg) as it is
// added, all into one buffer, so a request is its EVALSHA header and these bytes: no string per
// value on the way. values() reads them back (tests, diagnostics). Plain value.
class Args {
 public:
  Args() = default;
  Args(std::initializer_list<std::string_view> values) { *this = values; }
  Args& operator=(std::initializer_list<std::string_view> values);

  void push_back(std::string_view value) {
    out().arg(value);
    ++size_;
  }
  void emplace_back(std::string_view value) { push_back(value); }
  // One value: the pieces joined (a key's pieces, keys.hpp), without a string of their own.
  template <class Pieces>
  void push_joined(const Pieces& pieces) {
    out().arg_joined(pieces);
    ++size_;
  }
  // One value that write(std::string& out) appends to out.
  template <class Write>
  void push_written(Write&& write) {
    out().arg_written(write);
    ++size_;
  }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const std::string& encoded() const { return bytes_; }
  std::vector<std::string> values() const;

 private:
  // The buffer, with room for a usual call's values from the first one on (a larger call's
  // buffer grows by doubling).
  Resp out() {
    constexpr std::size_t kFirstBytes = 512;
    if (bytes_.capacity() < kFirstBytes) bytes_.reserve(kFirstBytes);
    return Resp(bytes_);
  }

  std::string bytes_;
  std::size_t size_ = 0;
};

// One script invocation's KEYS and ARGV.
struct Call {
  Args keys;
  Args argv;
};

// Sends one request that `encode` writes and returns its reply: on a pooled connection
// (Connection::command_with) or through the store's multiplexer (redis/multiplex.hpp).
using Send = std::function<Reply(const std::function<void(Resp&)>& encode)>;

// Runs a script by SHA (one round trip). On NOSCRIPT (the server's script cache was flushed or
// restarted) it loads the text and retries once: the one place script text is ever sent. An
// error reply (a Lua error) is a store failure.
Reply run_script(const Send& send, std::string_view op, const a2::detail::EmbeddedText& script,
                 const Call& call);
// The same on a pooled connection.
Reply run_script(Connection& c, std::string_view op, const a2::detail::EmbeddedText& script,
                 const Call& call);

// Runs one script for many calls in one pipelined round trip (one EVALSHA each); on NOSCRIPT it
// loads the text and sends the whole round trip once more, so only for scripts that may run twice
// (read-only ones, or ones whose second run changes nothing more). Any error reply fails the
// call. The replies answer `calls` in order.
std::vector<Reply> run_script_pipeline(Connection& c, std::string_view op,
                                       const a2::detail::EmbeddedText& script,
                                       const std::vector<Call>& calls);

// Runs one script for many calls that write, in one pipelined round trip (one EVALSHA each),
// and returns every reply as it came, an error reply included (each call's own to judge). A
// call answered NOSCRIPT did not run: after loading the text, only those calls are sent again
// (a second round trip, only after the server lost its scripts).
std::vector<Reply> run_script_each(Connection& c, std::string_view op,
                                   const a2::detail::EmbeddedText& script,
                                   const std::vector<Call>& calls);

// Runs the typed call `args` (a struct of src/redis/scripts/) and returns its raw reply, for
// Args::decode.
template <class Args>
Reply run(Connection& c, std::string_view op, const Keys& keys, const Args& args) {
  return run_script(c, op, Args::script(), args.encode(keys));
}
template <class Args>
Reply run(const Send& send, std::string_view op, const Keys& keys, const Args& args) {
  return run_script(send, op, Args::script(), args.encode(keys));
}

// The keys that open the KEYS of append, claim_available and complete_attempt, in their order:
// log count meta pending ready, written from their pieces.
inline void push_log_and_queue_keys(Args& keys, const Keys& k, std::string_view session) {
  keys.push_joined(k.log<KeyPieces>(session));
  keys.push_joined(k.count<KeyPieces>(session));
  keys.push_joined(k.meta<KeyPieces>(session));
  keys.push_joined(k.pending<KeyPieces>(session));
  keys.push_joined(k.ready<KeyPieces>(session));
}

inline std::string decimal(std::int64_t v) { return std::to_string(v); }
inline std::string flag(bool v) { return v ? "1" : "0"; }
// An event's `av` (available_at): the time when it is after now, else none (a time not after now
// means "at once" and stores nothing, docs/semantics.md#delayed-work). The scripts store what
// this gives, and the rows append and complete_attempt return carry the same.
inline std::optional<std::int64_t> delayed_until(std::int64_t now, std::optional<std::int64_t> at) {
  if (at && *at > now) return at;
  return std::nullopt;
}
// delayed_until as a script argument: the time, or '' for none.
inline std::string delay(std::int64_t now, std::optional<std::int64_t> at) {
  const auto until = delayed_until(now, at);
  return until ? decimal(*until) : std::string();
}

}  // namespace a2::redis::detail::scripts
