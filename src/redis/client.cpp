// SPDX-License-Identifier: MIT
#include "redis/client.hpp"

#include <hiredis/hiredis.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>

#include "a2/observe.hpp"
#include "common/spin_wait.hpp"

namespace a2::redis::detail {
namespace {

[[noreturn]] void bad_url(const std::string& url, const std::string& why) {
  throw InvalidArgument("a2 redis open: url '" + url + "' " + why);
}

std::string percent_decode(const std::string& url, const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size() || !std::isxdigit(static_cast<unsigned char>(s[i + 1])) ||
        !std::isxdigit(static_cast<unsigned char>(s[i + 2])))
      bad_url(url, "has a bad percent escape");
    out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
    i += 2;
  }
  return out;
}

int parse_url_number(const std::string& url, const std::string& s, int max, const char* what) {
  if (s.empty() || s.size() > 9) bad_url(url, std::string("has a bad ") + what);
  for (char c : s)
    if (c < '0' || c > '9') bad_url(url, std::string("has a bad ") + what);
  int v = std::stoi(s);
  if (v > max) bad_url(url, std::string("has a bad ") + what);
  return v;
}

timeval to_timeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

// hiredis builds our Reply values directly (its reader's object functions), so a reply is
// allocated once, not as a redisReply tree and then a copy of it. A child is its parent's element
// (the parent's elements are sized when it is created and never reallocated); the root is owned
// by the caller of redisGetReply (adopt()). Nothing here throws into hiredis: a failed allocation
// returns nullptr, which hiredis reports as out of memory.
// The Reply a task fills: a new root, or its slot in the parent array. Throws bad_alloc.
Reply* slot(const redisReadTask* task) {
  if (!task->parent) return new Reply;
  return &static_cast<Reply*>(task->parent->obj)->elements[static_cast<std::size_t>(task->idx)];
}

template <typename Fill>
void* create(const redisReadTask* task, Fill fill) noexcept {
  Reply* r = nullptr;
  try {
    r = slot(task);
    fill(*r);
    return r;
  } catch (...) {
    if (!task->parent) delete r;
    return nullptr;
  }
}

void* create_string(const redisReadTask* task, char* str, std::size_t len) noexcept {
  return create(task, [&](Reply& r) {
    r.type = task->type == REDIS_REPLY_ERROR    ? Reply::Type::error
             : task->type == REDIS_REPLY_STATUS ? Reply::Type::status
                                                : Reply::Type::string;
    r.str = std::string(str, len);  // Constructed, not assigned: no overlap checks.
  });
}

void* create_array(const redisReadTask* task, int elements) noexcept {
  return create(task, [&](Reply& r) {
    r.type = Reply::Type::array;
    r.elements.resize(static_cast<std::size_t>(elements));
  });
}

void* create_integer(const redisReadTask* task, long long value) noexcept {
  return create(task, [&](Reply& r) {
    r.type = Reply::Type::integer;
    r.integer = value;
  });
}

void* create_nil(const redisReadTask* task) noexcept {
  return create(task, [](Reply& r) { r.type = Reply::Type::nil; });
}

// Only roots are freed (hiredis frees a partial reply's root on a protocol error).
void free_reply(void* reply) noexcept { delete static_cast<Reply*>(reply); }

redisReplyObjectFunctions kReplyFunctions = {create_string, create_array, create_integer,
                                             create_nil, free_reply};

Reply adopt(void* raw) {
  std::unique_ptr<Reply> root(static_cast<Reply*>(raw));
  return std::move(*root);
}

}  // namespace

Endpoint parse_url(const std::string& url) {
  Endpoint e;
  constexpr std::string_view kUnix = "unix://";
  constexpr std::string_view kRedis = "redis://";
  std::string_view u = url;
  if (u.substr(0, kUnix.size()) == kUnix) {
    std::string rest(u.substr(kUnix.size()));
    auto q = rest.find('?');
    if (q != std::string::npos) {
      std::string query = rest.substr(q + 1);
      rest = rest.substr(0, q);
      if (query.rfind("db=", 0) != 0) bad_url(url, "has an unknown query");
      e.db = parse_url_number(url, query.substr(3), 1 << 20, "database number");
    }
    if (rest.empty() || rest[0] != '/') bad_url(url, "needs an absolute socket path");
    e.unix_path = percent_decode(url, rest);
    return e;
  }
  if (u.substr(0, kRedis.size()) != kRedis) bad_url(url, "must start with redis:// or unix://");
  std::string rest(u.substr(kRedis.size()));
  std::string path;
  auto slash = rest.find('/');
  if (slash != std::string::npos) {
    path = rest.substr(slash + 1);
    rest = rest.substr(0, slash);
  }
  auto at = rest.rfind('@');
  if (at != std::string::npos) {
    std::string userinfo = rest.substr(0, at);
    rest = rest.substr(at + 1);
    auto colon = userinfo.find(':');
    if (colon == std::string::npos) {
      e.password = percent_decode(url, userinfo);
    } else {
      e.user = percent_decode(url, userinfo.substr(0, colon));
      e.password = percent_decode(url, userinfo.substr(colon + 1));
    }
  }
  std::string port;
  if (!rest.empty() && rest[0] == '[') {
    auto close = rest.find(']');
    if (close == std::string::npos) bad_url(url, "has an unclosed '['");
    e.host = rest.substr(1, close - 1);
    std::string after = rest.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') bad_url(url, "has text after the host");
      port = after.substr(1);
      if (port.empty()) bad_url(url, "has an empty port");
    }
  } else {
    auto colon = rest.find(':');
    if (colon != std::string::npos) {
      port = rest.substr(colon + 1);
      rest = rest.substr(0, colon);
      if (port.empty()) bad_url(url, "has an empty port");
    }
    e.host = rest;
  }
  if (e.host.empty()) bad_url(url, "has no host");
  if (!port.empty()) {
    e.port = parse_url_number(url, port, 65535, "port");
    if (e.port == 0) bad_url(url, "has a bad port");
  }
  if (!path.empty()) e.db = parse_url_number(url, path, 1 << 20, "database number");
  return e;
}

// ── Connection ─────────────────────────────────────────────────────────────────────────────

Connection::Connection(const Endpoint& endpoint, std::chrono::milliseconds connect_timeout,
                       std::chrono::milliseconds command_timeout,
                       std::shared_ptr<a2::detail::SpinPacer> spin)
    : spin_(std::move(spin)) {
  const std::string where = endpoint.unix_path.empty()
                                ? endpoint.host + ":" + std::to_string(endpoint.port)
                                : endpoint.unix_path;
  context_ =
      endpoint.unix_path.empty()
          ? redisConnectWithTimeout(endpoint.host.c_str(), endpoint.port,
                                    to_timeval(connect_timeout))
          : redisConnectUnixWithTimeout(endpoint.unix_path.c_str(), to_timeval(connect_timeout));
  if (!context_) throw Unavailable("a2 redis connect to " + where + ": out of memory");
  if (context_->err) {
    std::string why = context_->errstr;
    redisFree(context_);
    context_ = nullptr;
    throw Unavailable("a2 redis connect to " + where + ": " + why);
  }
  context_->reader->fn = &kReplyFunctions;
  if (redisSetTimeout(context_, to_timeval(command_timeout)) != REDIS_OK) {
    redisFree(context_);
    context_ = nullptr;
    throw Unavailable("a2 redis connect to " + where + ": cannot set the command timeout");
  }
  socket_timeout_ = command_timeout;
  auto check = [&](const Reply& r, const char* what) {
    if (r.is_error())
      throw Unavailable("a2 redis connect to " + where + ": " + what + ": " + r.str);
  };
  try {
    if (!endpoint.password.empty()) {
      Argv auth{"AUTH"};
      if (!endpoint.user.empty()) auth.push_back(endpoint.user);
      auth.push_back(endpoint.password);
      check(command("connect", auth), "AUTH");
    }
    if (endpoint.db != 0)
      check(command("connect", {"SELECT", std::to_string(endpoint.db)}), "SELECT");
  } catch (...) {
    redisFree(context_);
    context_ = nullptr;
    throw;
  }
}

Connection::~Connection() {
  if (context_) redisFree(context_);
}

void Connection::fail(std::string_view op, bool sent, std::string why) {
  broken_ = true;
  if (why.empty()) why = context_ ? std::string(context_->errstr) : std::string("not connected");
  if (timed_out_) why = "timed out";
  if (why.empty()) why = "connection failed";
  std::string message = "a2 redis " + std::string(op) + ": " + why;
  if (sent) message += " (outcome unknown: the command was sent before the connection failed)";
  throw Unavailable(message, sent);
}

// ── Resp ───────────────────────────────────────────────────────────────────────────────────

namespace {

// The line "<kind><n>\r\n" that starts an array (kind '*') or a bulk string ('$'); its length.
std::size_t header_line(char (&line)[24], char kind, std::size_t n) {
  line[0] = kind;
  char* end = std::to_chars(line + 1, line + sizeof line - 2, n).ptr;
  *end++ = '\r';
  *end++ = '\n';
  return static_cast<std::size_t>(end - line);
}

}  // namespace

void Resp::header(char kind, std::size_t n) {
  char line[24];
  out_.append(line, header_line(line, kind, n));
}

void Resp::insert_header(std::size_t at) {
  char line[24];
  out_.insert(at, line, header_line(line, '$', out_.size() - at));
}

void Resp::command(std::size_t argc) { header('*', argc); }

char* Resp::bulk(std::size_t n) {
  char line[24];
  const std::size_t head = header_line(line, '$', n);
  const std::size_t at = out_.size();
  out_.resize(at + head + n + 2);  // One resize: no append per piece.
  char* p = out_.data() + at;
  std::memcpy(p, line, head);
  p[head + n] = '\r';
  p[head + n + 1] = '\n';
  return p + head;
}

void Resp::arg(std::string_view a) {
  char* at = bulk(a.size());
  if (!a.empty()) std::memcpy(at, a.data(), a.size());
}

void Resp::arg(std::int64_t v) {
  char digits[24];
  auto end = std::to_chars(digits, digits + sizeof digits, v).ptr;
  arg(std::string_view(digits, static_cast<std::size_t>(end - digits)));
}

// ── Requests ───────────────────────────────────────────────────────────────────────────────

namespace {

// Bytes read per system call; a request buffer that grew beyond kKeepOut is released after use.
constexpr std::size_t kReadChunk = 64 * 1024;
constexpr std::size_t kKeepOut = 256 * 1024;

void put(Resp& r, const Argv& argv) {
  r.command(argv.size());
  for (const auto& a : argv) r.arg(a);
}

}  // namespace

void Connection::start(std::string_view op, bool staged) {
  if (broken_ || !context_ || (unread_ > 0 && !staged)) fail(op, false);
  out_.clear();
}

void Connection::set_socket_timeout(std::string_view op, bool sent,
                                    std::chrono::microseconds timeout) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000000);
  tv.tv_usec = static_cast<suseconds_t>(timeout.count() % 1000000);
  if (::setsockopt(context_->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
      ::setsockopt(context_->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0)
    fail(op, sent, std::string("cannot set the socket timeout: ") + std::strerror(errno));
  socket_timeout_ = timeout;
}

void Connection::bound_wait(std::string_view op, bool sent) {
  if (!deadline_) return;
  const auto left = std::chrono::duration_cast<std::chrono::microseconds>(
      *deadline_ - std::chrono::steady_clock::now());
  if (left.count() <= 0) {
    timed_out_ = true;
    fail(op, sent);
  }
  // A socket call blocks at most socket_timeout_: within the time left, it ends by the deadline.
  // Lowered to three quarters of the time left, the timeout stays valid for the next calls of a
  // store (each has its whole command_timeout) without being set again; a wait it ends early
  // comes back here with the time still left.
  if (socket_timeout_ <= left && socket_timeout_ * 2 >= left) return;
  set_socket_timeout(op, sent, std::max(left * 3 / 4, std::chrono::microseconds(1)));
}

void Connection::flush(std::string_view op) {
  std::size_t done = 0;
  while (done < out_.size()) {
    bound_wait(op, false);
    const ssize_t n = ::send(context_->fd, out_.data() + done, out_.size() - done, MSG_NOSIGNAL);
    if (n >= 0) {
      done += static_cast<std::size_t>(n);
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      // The socket timeout passed: the deadline's check above decides. Without a deadline (a
      // connection's own AUTH/SELECT) the socket timeout is the limit.
      if (!deadline_) {
        timed_out_ = true;
        fail(op, false);
      }
    } else if (errno != EINTR) {
      fail(op, false, std::strerror(errno));
    }
  }
  if (out_.capacity() > kKeepOut) out_ = std::string();
}

void Connection::send_request(std::string_view op) {
  flush(op);
  ++a2::detail::t_round_trips;  // The one place a store call's round trip starts (observe.hpp).
}

Reply Connection::read_one(std::string_view op) {
  for (;;) {
    void* raw = nullptr;
    if (redisGetReplyFromReader(context_, &raw) != REDIS_OK) fail(op, true);
    if (raw) return adopt(raw);
    // A call's wait (the connection's own AUTH/SELECT have no deadline) may poll first; the
    // socket timeout is bounded after it, by the time then left.
    if (deadline_ && spin_) a2::detail::spin_until_readable(context_->fd, *spin_, *deadline_);
    bound_wait(op, true);
    if (!in_) in_ = std::make_unique<char[]>(kReadChunk);
    const ssize_t n = ::recv(context_->fd, in_.get(), kReadChunk, 0);
    if (n > 0) {
      if (redisReaderFeed(context_->reader, in_.get(), static_cast<std::size_t>(n)) != REDIS_OK)
        fail(op, true, "out of memory");
    } else if (n == 0) {
      fail(op, true, "the server closed the connection");
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!deadline_) {  // As in flush().
        timed_out_ = true;
        fail(op, true);
      }
    } else if (errno != EINTR) {
      fail(op, true, std::strerror(errno));
    }
  }
}

bool Connection::idle_alive() {
  if (broken_ || !context_) return false;
  pollfd pfd{context_->fd, POLLIN, 0};
  int rc;
  do rc = ::poll(&pfd, 1, 0);
  while (rc < 0 && errno == EINTR);
  // Readable on an idle connection: end of file, a reset, or data nobody asked for.
  if (rc != 0) broken_ = true;
  return !broken_;
}

Reply Connection::command(std::string_view op, const Argv& argv) {
  return command_with(op, [&](Resp& r) { put(r, argv); });
}

std::vector<Reply> Connection::pipeline(std::string_view op, const std::vector<Argv>& commands) {
  return pipeline_with(op, commands.size(), [&](Resp& r) {
    for (const auto& c : commands) put(r, c);
  });
}

void Connection::send_pipeline(std::string_view op, const std::vector<Argv>& commands) {
  start(op, true);
  Resp resp(out_);
  for (const auto& c : commands) put(resp, c);
  send_request(op);
  unread_ += commands.size();
}

void Connection::send_encoded(std::string_view op,
                              const std::vector<const std::string*>& requests) {
  start(op, true);
  for (const std::string* r : requests) out_ += *r;
  send_request(op);
  unread_ += requests.size();
}

Reply Connection::next_reply(std::string_view op) {
  if (unread_ == 0) fail(op, true, "no reply is expected");
  Reply r = read_one(op);
  --unread_;
  return r;
}

void Connection::send(std::string_view op, const Argv& argv) {
  start(op);
  Resp resp(out_);
  put(resp, argv);
  flush(op);
}

std::optional<Reply> Connection::receive(std::string_view op, std::chrono::milliseconds timeout) {
  if (broken_ || !context_) fail(op, false);
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    void* raw = nullptr;
    if (redisGetReplyFromReader(context_, &raw) != REDIS_OK) fail(op, true);
    if (raw) return adopt(raw);
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd pfd{context_->fd, POLLIN, 0};
    int rc = ::poll(&pfd, 1, static_cast<int>(left.count()));
    if (rc < 0) {
      if (errno == EINTR) continue;
      fail(op, true);
    }
    if (rc == 0) return std::nullopt;
    if (redisBufferRead(context_) != REDIS_OK) fail(op, true);
  }
}

}  // namespace a2::redis::detail
