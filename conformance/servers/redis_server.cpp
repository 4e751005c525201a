// SPDX-License-Identifier: MIT
#include "servers/redis_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

namespace a2::test {
namespace {
std::atomic<bool> g_shared_started{false};

// True once the server on 127.0.0.1:`port` answers PING with PONG: a persistent server
// accepts connections before it has loaded its data, and answers LOADING meanwhile.
bool answers_ping(int port, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return false;
    timeval tv{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    char reply[64] = {};
    bool pong = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                ::write(fd, "PING\r\n", 6) == 6 && ::read(fd, reply, sizeof reply - 1) > 0 &&
                std::string(reply).rfind("+PONG", 0) == 0;
    ::close(fd);
    if (pong) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}
}  // namespace

RedisServer::RedisServer(bool persistent) : persistent_(persistent) {
  dir_ = make_temp_dir(persistent ? "a2-redis-aof" : "a2-redis");
  // free_port() races with other processes picking ports: retry on a fresh port.
  for (int attempt = 1;; ++attempt) {
    port_ = free_port();
    try {
      start();
      return;
    } catch (const std::exception&) {
      if (attempt == 5) throw;
    }
  }
}

RedisServer::~RedisServer() {
  process_.stop(std::chrono::seconds(5));
  remove_tree(dir_);
}

void RedisServer::start() {
  std::string path = find_program("redis-server", {"/usr/bin", "/usr/local/bin", "/usr/sbin"});
  if (path.empty()) throw std::runtime_error("redis-server is not installed (not on PATH)");
  std::vector<std::string> argv{path, "--port", std::to_string(port_), "--bind", "127.0.0.1",
                                "--dir", dir_, "--save", "", "--daemonize", "no",
                                "--protected-mode", "no",
                                // DEBUG from local connections: the benchmarks read the keyspace's
                                // hash table with DEBUG HTSTATS (bench/redis_keyspace.hpp).
                                "--enable-debug-command", "local"};
  if (persistent_) {
    argv.insert(argv.end(), {"--appendonly", "yes", "--appendfsync", "always"});
  } else {
    argv.insert(argv.end(), {"--appendonly", "no"});
  }
  process_ = Process::spawn(argv, dir_ + "/redis.log");
  if (!wait_for_port(port_, std::chrono::seconds(15)) ||
      !answers_ping(port_, std::chrono::seconds(15)) || !process_.running()) {
    process_.stop(std::chrono::seconds(2));
    throw std::runtime_error("redis-server did not start on port " + std::to_string(port_) + ":\n" +
                             log());
  }
}

std::string RedisServer::log() const { return read_file(dir_ + "/redis.log"); }

void RedisServer::kill() {
  process_.signal(SIGCONT);  // A paused server dies too.
  process_.signal(SIGKILL);
  process_.wait_exit(std::chrono::seconds(10));
}

void RedisServer::pause() { process_.signal(SIGSTOP); }

void RedisServer::resume() { process_.signal(SIGCONT); }

void RedisServer::restart() {
  if (process_.running()) kill();
  // The port was ours; it is free again once the killed process is reaped.
  for (int attempt = 1;; ++attempt) {
    try {
      start();
      return;
    } catch (const std::exception&) {
      if (attempt == 10) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
  }
}

RedisServer& RedisServer::shared() {
  static RedisServer server;  // Started on first use, stopped by the static destructor at exit.
  g_shared_started.store(true);
  return server;
}

bool RedisServer::shared_started() { return g_shared_started.load(); }

void print_shared_redis_log(std::size_t max_bytes) {
  if (!RedisServer::shared_started()) return;
  std::string text = RedisServer::shared().log();
  if (text.size() > max_bytes) text = "...\n" + text.substr(text.size() - max_bytes);
  std::cerr << "---- redis-server log (" << RedisServer::shared().dir() << ") ----\n"
            << text << "---- end of redis-server log ----\n";
}

}  // namespace a2::test
