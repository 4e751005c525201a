// SPDX-License-Identifier: MIT
#pragma once

// A plain hiredis connection of the benchmarks for INFO, SCRIPT LOAD, SCAN and MONITOR (not the
// store's), and the server counters read from INFO (redis_bench, worker_bench).

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace a2::bench {

struct Endpoint {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string password;
};

// redis://[:password@]host[:port][/db] (the database number is ignored: INFO is server-wide).
inline Endpoint parse_url(const std::string& url) {
  const std::string scheme = "redis://";
  if (url.rfind(scheme, 0) != 0) throw std::runtime_error("--url must be redis://host:port");
  std::string rest = url.substr(scheme.size());
  Endpoint e;
  if (auto at = rest.rfind('@'); at != std::string::npos) {
    std::string auth = rest.substr(0, at);
    e.password = auth.substr(auth.find(':') == std::string::npos ? 0 : auth.find(':') + 1);
    rest = rest.substr(at + 1);
  }
  if (auto slash = rest.find('/'); slash != std::string::npos) rest = rest.substr(0, slash);
  if (auto colon = rest.rfind(':'); colon != std::string::npos) {
    e.port = std::stoi(rest.substr(colon + 1));
    rest = rest.substr(0, colon);
  }
  if (!rest.empty()) e.host = rest;
  return e;
}

class Admin {
 public:
  explicit Admin(const Endpoint& e) {
    ctx_ = redisConnect(e.host.c_str(), e.port);
    if (ctx_ == nullptr || ctx_->err)
      throw std::runtime_error("cannot connect to redis at " + e.host + ":" +
                               std::to_string(e.port));
    if (!e.password.empty()) command({"AUTH", e.password});
  }
  ~Admin() {
    if (ctx_ != nullptr) redisFree(ctx_);
  }
  Admin(const Admin&) = delete;
  Admin& operator=(const Admin&) = delete;

  // Sends a command and returns its reply as text (status, bulk string, or integer).
  std::string command(const std::vector<std::string>& args) {
    send(args);
    return read_reply();
  }
  void send(const std::vector<std::string>& args) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lens;
    for (const auto& a : args) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    if (redisAppendCommandArgv(ctx_, static_cast<int>(args.size()), argv.data(), lens.data()) !=
        REDIS_OK)
      throw std::runtime_error("redis: cannot send " + args.front());
  }
  std::string read_reply() {
    void* raw = nullptr;
    if (redisGetReply(ctx_, &raw) != REDIS_OK || raw == nullptr)
      throw std::runtime_error(std::string("redis: connection error: ") + ctx_->errstr);
    auto* r = static_cast<redisReply*>(raw);
    std::string out;
    bool error = r->type == REDIS_REPLY_ERROR;
    if (r->type == REDIS_REPLY_INTEGER)
      out = std::to_string(r->integer);
    else if (r->str != nullptr)
      out.assign(r->str, r->len);
    freeReplyObject(r);
    if (error) throw std::runtime_error("redis error: " + out);
    return out;
  }
  // The value of server setting `name` (CONFIG GET's reply is a name-value pair).
  std::string config_get(const std::string& name) {
    send({"CONFIG", "GET", name});
    void* raw = nullptr;
    if (redisGetReply(ctx_, &raw) != REDIS_OK || raw == nullptr)
      throw std::runtime_error(std::string("redis: connection error: ") + ctx_->errstr);
    auto* r = static_cast<redisReply*>(raw);
    std::string out;
    const bool pair = r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
                      r->element[1]->type == REDIS_REPLY_STRING;
    if (pair) out.assign(r->element[1]->str, r->element[1]->len);
    freeReplyObject(r);
    if (!pair) throw std::runtime_error("redis: CONFIG GET " + name + " gave no value");
    return out;
  }
  // Deletes every key matching `pattern` (scan()), 1000 per DEL.
  void delete_matching(const std::string& pattern) {
    const std::vector<std::string> keys = scan(pattern);
    for (std::size_t at = 0; at < keys.size(); at += 1000) {
      std::vector<std::string> del{"DEL"};
      del.insert(del.end(), keys.begin() + static_cast<std::ptrdiff_t>(at),
                 keys.begin() + static_cast<std::ptrdiff_t>(std::min(at + 1000, keys.size())));
      command(del);
    }
  }
  // Every key matching `pattern`, by SCAN (never KEYS, which blocks a shared server).
  std::vector<std::string> scan(const std::string& pattern) {
    std::vector<std::string> keys;
    std::string cursor = "0";
    do {
      send({"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"});
      void* raw = nullptr;
      if (redisGetReply(ctx_, &raw) != REDIS_OK || raw == nullptr)
        throw std::runtime_error(std::string("redis: connection error: ") + ctx_->errstr);
      auto* r = static_cast<redisReply*>(raw);
      if (r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
        freeReplyObject(r);
        throw std::runtime_error("redis: unexpected SCAN reply");
      }
      cursor.assign(r->element[0]->str, r->element[0]->len);
      for (std::size_t i = 0; i < r->element[1]->elements; ++i)
        keys.emplace_back(r->element[1]->element[i]->str, r->element[1]->element[i]->len);
      freeReplyObject(r);
    } while (cursor != "0");
    return keys;
  }
  void set_timeout(std::chrono::milliseconds t) {
    timeval tv{static_cast<time_t>(t.count() / 1000),
               static_cast<suseconds_t>((t.count() % 1000) * 1000)};
    redisSetTimeout(ctx_, tv);
  }

 private:
  redisContext* ctx_ = nullptr;
};

// Server counters (one `INFO stats commandstats` per snapshot):
//   round_trips  total_reads_processed: read events on client sockets, one per request of a
//                client that waits for each reply (a pipelined batch read at once counts once).
//                total_commands_processed is no help: Redis 7 counts the commands run inside
//                scripts there too.
//   net_in       total_net_input_bytes
//   all_calls    every command executed, redis.call() inside scripts included (INFO itself not)
//   evalsha, eval, script_load   calls of those commands
//   evalsha_usec  server time spent in EVALSHA (the script and its redis.calls)
//   cmd:<name>, usec:<name>   calls of each command and the server time spent in it
inline std::map<std::string, double> snapshot(Admin& admin) {
  std::string text = admin.command({"INFO", "stats", "commandstats"});
  std::map<std::string, double> c{{"round_trips", 0}, {"net_in", 0}, {"all_calls", 0},
                                  {"evalsha", 0},     {"eval", 0},   {"script_load", 0},
                                  {"evalsha_usec", 0}};
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    std::string value = line.substr(colon + 1);
    if (key == "total_reads_processed") c["round_trips"] = std::stod(value);
    if (key == "total_net_input_bytes") c["net_in"] = std::stod(value);
    if (key.rfind("cmdstat_", 0) == 0) {
      auto calls_at = value.find("calls=");
      double calls = std::stod(value.substr(calls_at + 6));
      std::string name = key.substr(8);
      if (name == "info") continue;  // Our own snapshots.
      c["all_calls"] += calls;
      c["cmd:" + name] = calls;
      c["usec:" + name] = std::stod(value.substr(value.find("usec=") + 5));
      if (name == "evalsha") {
        c["evalsha"] = calls;
        c["evalsha_usec"] = std::stod(value.substr(value.find("usec=") + 5));
      }
      if (name == "eval") c["eval"] = calls;
      if (name == "script|load") c["script_load"] = calls;
    }
  }
  return c;
}

}  // namespace a2::bench
