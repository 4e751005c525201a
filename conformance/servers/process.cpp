// SPDX-License-Identifier: MIT
#include "servers/process.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <thread>

namespace a2::test {

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("free_port: socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    throw std::runtime_error("free_port: bind failed");
  }
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

static bool lookup_user(const std::string& user, uid_t& uid, gid_t& gid) {
  passwd* pw = ::getpwnam(user.c_str());
  if (!pw) return false;
  uid = pw->pw_uid;
  gid = pw->pw_gid;
  return true;
}

std::string make_temp_dir(const std::string& prefix, const std::optional<std::string>& owner_user) {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/" + prefix + "-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data())) throw std::runtime_error("make_temp_dir: mkdtemp failed for " + tmpl);
  std::string dir(buf.data());
  if (owner_user && ::geteuid() == 0) {
    uid_t uid;
    gid_t gid;
    if (!lookup_user(*owner_user, uid, gid))
      throw std::runtime_error("make_temp_dir: no user " + *owner_user);
    if (::chown(dir.c_str(), uid, gid) != 0)
      throw std::runtime_error("make_temp_dir: chown failed");
  }
  return dir;
}

void remove_tree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

std::string find_program(const std::string& name, const std::vector<std::string>& extra_dirs) {
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    for (std::string d; std::getline(ss, d, ':');)
      if (!d.empty()) dirs.push_back(d);
  }
  dirs.insert(dirs.end(), extra_dirs.begin(), extra_dirs.end());
  for (const auto& d : dirs) {
    std::string candidate = d + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool wait_for_port(int port, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    ::close(fd);
    if (ok) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

Process Process::spawn(const std::vector<std::string>& argv, const std::string& log_path,
                       const std::optional<std::string>& run_as_user) {
  if (argv.empty()) throw std::runtime_error("Process::spawn: empty argv");
  uid_t uid = 0;
  gid_t gid = 0;
  bool switch_user = run_as_user && ::geteuid() == 0;
  if (switch_user && !lookup_user(*run_as_user, uid, gid))
    throw std::runtime_error("Process::spawn: no user " + *run_as_user);
  int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) throw std::runtime_error("Process::spawn: cannot open " + log_path);
  if (switch_user && ::fchown(log_fd, uid, gid) != 0) {
    ::close(log_fd);
    throw std::runtime_error("Process::spawn: cannot chown " + log_path);
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log_fd);
    throw std::runtime_error("Process::spawn: fork failed");
  }
  if (pid == 0) {
    // Child: only async-signal-safe calls from here on.
    ::setpgid(0, 0);  // Own process group: a terminal's Ctrl-C does not hit the server first.
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    if (switch_user) {
      if (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0) ::_exit(126);
    }
    // A test process that dies without running its destructors (a crash, SIGKILL, a closed
    // pipe) must not leave its servers behind. Set after the user switch, which clears it.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(125);  // The parent is already gone.
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(log_fd);
  Process p;
  p.pid_ = pid;
  return p;
}

Process::Process(Process&& other) noexcept : pid_(other.pid_) { other.pid_ = -1; }

Process& Process::operator=(Process&& other) noexcept {
  if (this != &other) {
    stop();
    pid_ = other.pid_;
    other.pid_ = -1;
  }
  return *this;
}

Process::~Process() { stop(); }

bool Process::running() {
  if (pid_ <= 0) return false;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_ || r < 0) {
    pid_ = -1;
    return false;
  }
  return true;
}

void Process::signal(int sig) {
  if (pid_ > 0) ::kill(pid_, sig);
}

bool Process::wait_exit(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (running()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

void Process::stop(std::chrono::milliseconds grace) {
  if (!running()) return;
  signal(SIGTERM);
  signal(SIGCONT);  // A stopped process acts on SIGTERM only once continued.
  if (!wait_exit(grace)) {
    signal(SIGKILL);
    wait_exit(std::chrono::seconds(5));
  }
}

bool set_cpus(pid_t pid, const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (cpus.empty()) {
    const long n = ::sysconf(_SC_NPROCESSORS_CONF);
    for (long cpu = 0; cpu < n && cpu < CPU_SETSIZE; ++cpu) CPU_SET(static_cast<int>(cpu), &set);
  }
  for (int cpu : cpus) CPU_SET(cpu, &set);
  bool all = true;
  std::error_code ec;
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    const auto tid = static_cast<pid_t>(std::stol(task.path().filename().string()));
    all = ::sched_setaffinity(tid, sizeof set, &set) == 0 && all;
  }
  return all && !ec;
}

int run(const std::vector<std::string>& argv, const std::string& log_path,
        const std::optional<std::string>& run_as_user) {
  Process p = Process::spawn(argv, log_path, run_as_user);
  pid_t pid = p.pid();
  int status = 0;
  ::waitpid(pid, &status, 0);
  // Already reaped: keep the destructor from signalling a reused pid.
  Process released = std::move(p);
  (void)released;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace a2::test
