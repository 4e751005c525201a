// SPDX-License-Identifier: MIT
#pragma once

// The Redis transport of the backend: url parsing, owned replies, one hiredis connection, and a
// connection type of the shared pool. This is the one place where hiredis errors become a2::Error
// (Unavailable).

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "a2/errors.hpp"
#include "common/pool.hpp"

struct redisContext;

namespace a2::redis::detail {

// Where and how to connect. Parsed from "redis://[[user]:password@]host[:port][/db]" or
// "unix:///path/to/socket[?db=N]".
struct Endpoint {
  std::string host;  // Empty for a unix socket.
  int port = 6379;
  std::string unix_path;
  std::string user;
  std::string password;
  int db = 0;
};

// Throws InvalidArgument for a malformed url.
Endpoint parse_url(const std::string& url);

// A reply as hiredis's reader builds it (client.cpp gives the reader functions that build these
// values directly: no redisReply tree, no copy), so no hiredis type leaks beyond client.cpp.
// Plain value.
struct Reply {
  enum class Type { string, array, integer, nil, status, error };
  Type type = Type::nil;
  std::string str;              // string, status, error.
  long long integer = 0;        // integer.
  std::vector<Reply> elements;  // array.

  bool is_nil() const { return type == Type::nil; }
  bool is_error() const { return type == Type::error; }
  bool is_array() const { return type == Type::array; }
  bool is_string() const { return type == Type::string || type == Type::status; }
  std::size_t size() const { return elements.size(); }
  const Reply& operator[](std::size_t i) const { return elements.at(i); }
};

using Argv = std::vector<std::string>;

// One blocking hiredis connection. Not thread-safe: used by one thread at a time (the pool hands
// it out). Any transport failure marks it broken; a broken connection is never reused.
class Connection {
 public:
  Connection(const Endpoint& endpoint, std::chrono::milliseconds connect_timeout,
             std::chrono::milliseconds command_timeout);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Sends one command and waits for its reply (an error reply is returned, not thrown).
  // Throws Unavailable("a2 redis <op>: ...") on a transport failure; outcome_unknown is set when
  // the whole command had been written before the failure.
  Reply command(std::string_view op, const Argv& argv);
  // Sends every command in one write, then reads every reply: one round trip.
  std::vector<Reply> pipeline(std::string_view op, const std::vector<Argv>& commands);

  // Pub/sub side: queue a command without waiting for a reply (the subscription's
  // confirmation arrives as a message).
  void send(std::string_view op, const Argv& argv);
  // Waits up to `timeout` for one reply or pushed message. nullopt on timeout.
  std::optional<Reply> receive(std::string_view op, std::chrono::milliseconds timeout);

  // Every later command must finish by `deadline` (the call's): the socket timeout is set to
  // the time left before each command, and a command started past it fails unsent.
  void set_deadline(a2::detail::SteadyTime deadline) { deadline_ = deadline; }

  bool broken() const { return broken_; }
  // For the pool, on an idle connection: false (and broken) when the server closed it or sent
  // something unasked, seen by a non-blocking poll of the socket; no round trip.
  bool idle_alive();

 private:
  // Sets the socket timeout to the time left before the deadline; fails (unsent) past it.
  void apply_deadline(std::string_view op);
  void append(const Argv& argv);
  // Writes the output buffer completely; returns false (and marks broken) on failure.
  void flush(std::string_view op);
  // flush() of a request whose answer the caller then reads: one round trip, counted.
  void send_request(std::string_view op);
  [[noreturn]] void fail(std::string_view op, bool sent);
  Reply read_one(std::string_view op);

  redisContext* context_ = nullptr;
  bool broken_ = false;
  bool timed_out_ = false;  // The deadline passed: fail() says so.
  std::optional<a2::detail::SteadyTime> deadline_;
};

// The pool of a store's connections (src/common/pool.hpp).
using Pool = a2::detail::Pool<Connection>;

}  // namespace a2::redis::detail
