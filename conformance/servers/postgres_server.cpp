// SPDX-License-Identifier: MIT
#include "servers/postgres_server.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace a2::test {
namespace {

constexpr const char* kUser = "a2test";

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

// The directory of initdb/postgres (find_postgres_program).
std::string find_bindir() {
  std::string postgres = find_postgres_program("postgres");
  if (postgres.empty())
    throw std::runtime_error("PostgresServer: no postgres binaries (install postgresql)");
  return std::filesystem::path(postgres).parent_path().string();
}

std::atomic<PostgresServer*> g_shared{nullptr};

}  // namespace

std::string find_postgres_program(const std::string& name) {
  std::error_code ec;
  auto in = [&](const std::string& dir) {
    return !dir.empty() && std::filesystem::exists(dir + "/" + name, ec) ? dir + "/" + name
                                                                         : std::string();
  };
  std::string pg_config = find_program("pg_config");
  if (!pg_config.empty()) {
    std::string scratch = make_temp_dir("a2-pg-config-");
    std::string out = scratch + "/pg_config.out";
    std::string dir = run({pg_config, "--bindir"}, out) == 0 ? trim(read_file(out)) : "";
    remove_tree(scratch);
    if (auto found = in(dir); !found.empty()) return found;
  }
  std::vector<std::string> dirs;
  for (const auto& entry : std::filesystem::directory_iterator("/usr/lib/postgresql", ec))
    if (std::filesystem::exists(entry.path() / "bin" / name, ec))
      dirs.push_back((entry.path() / "bin").string());
  std::sort(dirs.begin(), dirs.end(), [](const std::string& a, const std::string& b) {
    return std::stoi(std::filesystem::path(a).parent_path().filename().string()) >
           std::stoi(std::filesystem::path(b).parent_path().filename().string());
  });
  if (!dirs.empty()) return dirs.front() + "/" + name;
  return find_program(name);
}

PostgresServer::PostgresServer(std::vector<std::string> settings) : settings_(std::move(settings)) {
  if (::geteuid() == 0) user_ = kUser;
  dir_ = make_temp_dir("a2-postgres", user_);
  data_dir_ = dir_ + "/data";
  log_path_ = dir_ + "/postgres.log";
  bindir_ = find_bindir();
  std::string initdb_log = dir_ + "/initdb.log";
  int status = run({bindir_ + "/initdb", "-D", data_dir_, "-U", "postgres", "--auth=trust", "-E",
                    "UTF8", "--locale=C", "--no-sync"},
                   initdb_log, user_);
  if (status != 0) {
    std::string log = read_file(initdb_log);
    remove_tree(dir_);
    throw std::runtime_error("PostgresServer: initdb failed (status " + std::to_string(status) +
                             "):\n" + log);
  }
  port_ = free_port();
  try {
    start();
  } catch (...) {
    remove_tree(dir_);
    throw;
  }
}

PostgresServer::~PostgresServer() {
  if (g_shared.load() == this) g_shared.store(nullptr);
  try {
    stop();
  } catch (...) {
  }
  remove_tree(dir_);
}

std::string PostgresServer::connection() const {
  return "host=" + dir_ + " port=" + std::to_string(port_) + " user=postgres dbname=postgres";
}

std::string PostgresServer::log() const { return read_file(log_path_); }

void PostgresServer::start() {
  if (running()) return;
  std::vector<std::string> argv = {bindir_ + "/postgres",
                                   "-D",
                                   data_dir_,
                                   "-p",
                                   std::to_string(port_),
                                   "-k",
                                   dir_,
                                   "-c",
                                   "listen_addresses=127.0.0.1",
                                   "-c",
                                   "fsync=off",
                                   "-c",
                                   "synchronous_commit=off",
                                   "-c",
                                   "full_page_writes=off",
                                   "-c",
                                   "max_connections=200",
                                   "-c",
                                   "shared_buffers=64MB"};
  for (const auto& s : settings_) {
    argv.push_back("-c");
    argv.push_back(s);
  }
  process_ = Process::spawn(argv, log_path_, user_);
  // Ready when pg_isready says so (accepting TCP alone is not enough: during startup and
  // recovery the server answers "the database system is starting up").
  std::string isready = bindir_ + "/pg_isready";
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (!process_.running())
      throw std::runtime_error("PostgresServer: postgres exited during startup:\n" + log());
    if (run({isready, "-q", "-h", dir_, "-p", std::to_string(port_), "-U", "postgres"},
            dir_ + "/pg_isready.log") == 0)
      return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  process_.stop();
  throw std::runtime_error("PostgresServer: postgres did not become ready:\n" + log());
}

void PostgresServer::stop() {
  if (!process_.running()) return;
  resume();                 // A paused server shuts down too.
  process_.signal(SIGINT);  // Fast shutdown.
  if (!process_.wait_exit(std::chrono::seconds(30))) process_.stop(std::chrono::seconds(1));
}

void PostgresServer::stop_immediate() {
  if (!process_.running()) return;
  resume();
  process_.signal(SIGQUIT);  // Immediate shutdown.
  if (!process_.wait_exit(std::chrono::seconds(30))) process_.stop(std::chrono::seconds(1));
}

bool PostgresServer::running() { return process_.running(); }

namespace {
// The pids whose parent is `parent` (from /proc/<pid>/stat).
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = read_file("/proc/" + name + "/stat");
    // "pid (comm) state ppid ...": comm may hold spaces, so parse after the last ')'.
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 1));
    std::string state;
    long ppid = 0;
    if (rest >> state >> ppid && ppid == parent) out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}
}  // namespace

// Backends make themselves process group leaders (setsid), so each is signalled on its own.
void PostgresServer::pause() {
  const pid_t postmaster = process_.pid();
  if (postmaster <= 0) return;
  process_.signal(SIGSTOP);  // First: it forks no new backend meanwhile.
  for (pid_t child : children_of(postmaster)) ::kill(child, SIGSTOP);
}

void PostgresServer::resume() {
  const pid_t postmaster = process_.pid();
  if (postmaster <= 0) return;
  for (pid_t child : children_of(postmaster)) ::kill(child, SIGCONT);
  process_.signal(SIGCONT);
}

bool PostgresServer::set_cpus(const std::vector<int>& cpus) {
  const pid_t postmaster = process_.pid();
  if (postmaster <= 0) return false;
  // The postmaster first: what it forks from now on inherits the set.
  bool all = a2::test::set_cpus(postmaster, cpus);
  for (pid_t child : children_of(postmaster)) all = a2::test::set_cpus(child, cpus) && all;
  return all;
}

PostgresServer& PostgresServer::shared() {
  static PostgresServer server;
  g_shared.store(&server);
  return server;
}

PostgresServer* PostgresServer::shared_if_started() { return g_shared.load(); }

}  // namespace a2::test
