// SPDX-License-Identifier: MIT
#pragma once

// The Redis transport of the backend: url parsing, owned replies, requests encoded in RESP, one
// connection (hiredis connects and parses; requests are written and replies read here), and a
// connection type of the shared pool. This is the one place where transport errors become
// a2::Error (Unavailable); the multiplexer (redis/multiplex.hpp) passes them on, per request.

#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "a2/errors.hpp"
#include "common/pool.hpp"

struct redisContext;

namespace a2::detail {
class SpinPacer;  // common/spin_wait.hpp
}  // namespace a2::detail

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

// Writes commands in RESP (the Redis protocol) straight into a request buffer, no argument
// copies in between: command(argc), then argc arg()s.
class Resp {
 public:
  explicit Resp(std::string& out) : out_(out) {}
  void command(std::size_t argc);
  void arg(std::string_view a);
  void arg(std::int64_t v);
  // One argument: the pieces joined, without a string of their own.
  template <class Pieces>
  void arg_joined(const Pieces& pieces) {
    std::size_t n = 0;
    for (std::string_view p : pieces) n += p.size();
    char* at = bulk(n);
    for (std::string_view p : pieces) {
      if (p.empty()) continue;
      std::memcpy(at, p.data(), p.size());
      at += p.size();
    }
  }
  // One argument that write(std::string& out) appends to out, in place: its length is known
  // only once written, so its header goes in front of it then (moving its bytes once).
  template <class Write>
  void arg_written(Write&& write) {
    const std::size_t at = out_.size();
    write(out_);
    insert_header(at);
    out_.append("\r\n", 2);
  }
  // Bytes already in RESP (a request encoded earlier by another Resp).
  void raw(std::string_view encoded) { out_ += encoded; }
  void reserve(std::size_t more) { out_.reserve(out_.size() + more); }

 private:
  void header(char kind, std::size_t n);
  // Adds a bulk string of n bytes, its header and its end written; returns where its bytes go.
  char* bulk(std::size_t n);
  // Inserts the bulk string header of out_[at..] at `at`.
  void insert_header(std::size_t at);
  std::string& out_;
};

// One blocking connection: hiredis connects and parses replies; requests are encoded and written
// here. Not thread-safe: used by one thread at a time (the pool hands it out). Any transport
// failure marks it broken; a broken connection is never reused.
class Connection {
 public:
  // `spin`: the store's spin_wait and its pacing (common/spin_wait.hpp): a wait for a reply of a
  // call (with a deadline) may poll the socket before it sleeps; null: never.
  Connection(const Endpoint& endpoint, std::chrono::milliseconds connect_timeout,
             std::chrono::milliseconds command_timeout,
             std::shared_ptr<a2::detail::SpinPacer> spin = nullptr);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Sends one command and waits for its reply (an error reply is returned, not thrown).
  // Throws Unavailable("a2 redis <op>: ...") on a transport failure; outcome_unknown is set when
  // the whole command had been written before the failure.
  Reply command(std::string_view op, const Argv& argv);
  // The same for a command that `encode(Resp&)` writes in place.
  template <class Encode>
  Reply command_with(std::string_view op, Encode&& encode) {
    start(op);
    Resp resp(out_);
    encode(resp);
    send_request(op);
    return read_one(op);
  }
  // Sends every command in one write, then reads every reply: one round trip.
  std::vector<Reply> pipeline(std::string_view op, const std::vector<Argv>& commands);
  // The same for `count` commands that `encode(Resp&)` writes in place.
  template <class Encode>
  std::vector<Reply> pipeline_with(std::string_view op, std::size_t count, Encode&& encode) {
    start(op);
    Resp resp(out_);
    encode(resp);
    send_request(op);
    std::vector<Reply> out;
    out.reserve(count);
    for (std::size_t i = 0; i < count; ++i) out.push_back(read_one(op));
    return out;
  }

  // Staged pipelining, for long reads: sends every command in one write (one round trip) and
  // returns without waiting; the replies are read later, in order, with next_reply(). A caller
  // may send its next batch before reading this one's replies, so the server works on it while
  // the caller decodes. While replies are unread the connection counts as broken(): a caller
  // that gives up early (an exception) leaves it to be dropped, never reused.
  void send_pipeline(std::string_view op, const std::vector<Argv>& commands);
  // The same for `count` requests already encoded in RESP by their callers, written in order
  // as one request (the multiplexer's batches, redis/multiplex.hpp).
  void send_encoded(std::string_view op, const std::vector<const std::string*>& requests);
  // The next unread reply of send_pipeline()'s batches.
  Reply next_reply(std::string_view op);

  // Pub/sub side: queue a command without waiting for a reply (the subscription's
  // confirmation arrives as a message).
  void send(std::string_view op, const Argv& argv);
  // Waits up to `timeout` for one reply or pushed message. nullopt on timeout.
  std::optional<Reply> receive(std::string_view op, std::chrono::milliseconds timeout);

  // Every later command must finish by `deadline` (the call's): each blocking socket call is
  // bounded by the time left, and a command started past it fails unsent.
  void set_deadline(a2::detail::SteadyTime deadline) { deadline_ = deadline; }

  bool broken() const { return broken_ || unread_ > 0; }
  // For the pool, on an idle connection: false (and broken) when the server closed it or sent
  // something unasked, seen by a non-blocking poll of the socket; no round trip.
  bool idle_alive();

 private:
  // A new request: fails (unsent) on a broken connection, or one with unread replies of
  // send_pipeline() unless `staged`; empties the output buffer.
  void start(std::string_view op, bool staged = false);
  // Before a blocking socket call: fails past the deadline; else makes sure the socket's
  // timeout ends the call by the deadline (changed only when it would not, or when it is far
  // shorter than the time left: no system call per command).
  void bound_wait(std::string_view op, bool sent);
  void set_socket_timeout(std::string_view op, bool sent, std::chrono::microseconds timeout);
  // Writes the output buffer completely; fails (unsent) otherwise.
  void flush(std::string_view op);
  // flush() of a request whose answer the caller then reads: one round trip, counted.
  void send_request(std::string_view op);
  // `why` empty: hiredis's error text.
  [[noreturn]] void fail(std::string_view op, bool sent, std::string why = {});
  Reply read_one(std::string_view op);

  redisContext* context_ = nullptr;
  bool broken_ = false;
  std::size_t unread_ = 0;  // Replies of send_pipeline() not read yet.
  bool timed_out_ = false;  // The deadline passed: fail() says so.
  std::optional<a2::detail::SteadyTime> deadline_;
  std::chrono::microseconds socket_timeout_{0};  // SO_RCVTIMEO = SO_SNDTIMEO now.
  std::shared_ptr<a2::detail::SpinPacer> spin_;  // Null: the store does not spin.
  std::string out_;                              // The request being built and sent.
  std::unique_ptr<char[]> in_;                   // Read buffer (kReadChunk), made on first use.
};

// The pool of a store's connections (src/common/pool.hpp).
using Pool = a2::detail::Pool<Connection>;

}  // namespace a2::redis::detail
