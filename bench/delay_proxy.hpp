// SPDX-License-Identifier: MIT
#pragma once

// A TCP proxy on 127.0.0.1 that hands each reply of the server to its client `delay` after it
// came: a server that far away, for the benchmark's rows of a store whose replies come later
// than its spin_wait (bench/spin_section.hpp). Requests go through at once. Each accepted client
// gets a connection of its own to the server (`upstream()` opens it) and two threads that pump
// bytes, so a store's pool and write connections work through it as they would directly.
// Thread-safe; the destructor closes every connection and joins the threads.

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace a2::bench {

// A TCP connection to host:port (the proxy's upstream), or -1.
inline int connect_tcp(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return -1;
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd >= 0 && ::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd >= 0) {
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  return fd;
}

// A connection to the unix socket at `path` (the proxy's upstream), or -1.
inline int connect_unix(const std::string& path) {
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path) return -1;
  addr.sun_family = AF_UNIX;
  path.copy(addr.sun_path, path.size());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

class DelayProxy {
 public:
  DelayProxy(std::function<int()> upstream, std::chrono::microseconds delay)
      : upstream_(std::move(upstream)), delay_(delay) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        ::listen(listen_fd_, 64) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      throw std::runtime_error("delay proxy: cannot listen");
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~DelayProxy() {
    stopping_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    ::close(listen_fd_);
    acceptor_.join();
    const std::lock_guard<std::mutex> lock(mutex_);
    for (const int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    for (auto& t : pumps_) t.join();
    for (const int fd : fds_) ::close(fd);
  }
  DelayProxy(const DelayProxy&) = delete;
  DelayProxy& operator=(const DelayProxy&) = delete;

  int port() const { return port_; }

 private:
  void accept_loop() {
    for (;;) {
      const int client = ::accept(listen_fd_, nullptr, nullptr);
      if (client < 0) return;  // Closed by the destructor.
      const int one = 1;
      ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      const int server = upstream_();
      const std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_ || server < 0) {
        ::close(client);
        if (server >= 0) ::close(server);
        if (stopping_) return;
        continue;
      }
      fds_.push_back(client);
      fds_.push_back(server);
      pumps_.emplace_back([this, client, server] { pump(client, server, {}); });
      pumps_.emplace_back([this, client, server] { pump(server, client, delay_); });
    }
  }

  // Copies what `from` sends to `to`, each read `delay` after it came, until either side ends.
  static void pump(int from, int to, std::chrono::microseconds delay) {
    std::vector<char> buffer(1 << 16);
    for (;;) {
      const ssize_t n = ::recv(from, buffer.data(), buffer.size(), 0);
      if (n <= 0) break;
      if (delay.count() > 0) std::this_thread::sleep_until(std::chrono::steady_clock::now() + delay);
      for (ssize_t sent = 0; sent < n;) {
        const ssize_t k = ::send(to, buffer.data() + sent, static_cast<std::size_t>(n - sent),
                                 MSG_NOSIGNAL);
        if (k <= 0) return;
        sent += k;
      }
    }
    ::shutdown(to, SHUT_WR);
  }

  std::function<int()> upstream_;
  std::chrono::microseconds delay_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  std::mutex mutex_;
  std::vector<int> fds_;
  std::vector<std::thread> pumps_;
};

}  // namespace a2::bench
