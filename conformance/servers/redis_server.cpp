// SPDX-License-Identifier: MIT
#include "servers/redis_server.hpp"

#include <signal.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace a2::test {
namespace {
std::atomic<bool> g_shared_started{false};
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
  std::vector<std::string> argv{
      path,     "--port", std::to_string(port_), "--bind", "127.0.0.1",        "--dir", dir_,
      "--save", "",       "--daemonize",         "no",     "--protected-mode", "no"};
  if (persistent_) {
    argv.insert(argv.end(), {"--appendonly", "yes", "--appendfsync", "always"});
  } else {
    argv.insert(argv.end(), {"--appendonly", "no"});
  }
  process_ = Process::spawn(argv, dir_ + "/redis.log");
  if (!wait_for_port(port_, std::chrono::seconds(15)) || !process_.running()) {
    process_.stop(std::chrono::seconds(2));
    throw std::runtime_error("redis-server did not start on port " + std::to_string(port_) + ":\n" +
                             log());
  }
}

std::string RedisServer::log() const { return read_file(dir_ + "/redis.log"); }

void RedisServer::kill() {
  process_.signal(SIGKILL);
  process_.wait_exit(std::chrono::seconds(10));
}

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
