#include "sim/sweep/Subprocess.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace placesim {

namespace {

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error(what + ": " + std::strerror(errno));
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Runs in the forked child: only async-signal-safe calls until exec.
[[noreturn]] void exec_child(char* const* argv, const char* cwd, pid_t parent, int in, int out, int err) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // the parent died before prctl took effect
  ::dup2(in, 0);
  ::dup2(out, 1);
  ::dup2(err, 2);
  if (cwd[0] != '\0' && ::chdir(cwd) != 0) {
    const char message[] = "cannot enter the sweep's directory\n";
    ssize_t ignored = ::write(2, message, sizeof message - 1);
    (void)ignored;
    ::_exit(127);
  }
  ::execv(argv[0], argv);
  const char message[] = "cannot execute the simulator\n";
  ssize_t ignored = ::write(2, message, sizeof message - 1);
  (void)ignored;
  ::_exit(127);
}

// Reads what is available; closes `fd` at end of file.
void drain(int& fd, std::string& into) {
  char buffer[1 << 15];
  while (fd >= 0) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      into.append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
      close_fd(fd);
    } else if (errno == EAGAIN) {
      return;
    }
  }
}

}  // namespace

ProcessPool::~ProcessPool() {
  for (auto& c : children_) {
    ::kill(c.pid, SIGKILL);
    ::waitpid(c.pid, nullptr, 0);
    close_fd(c.in);
    close_fd(c.out);
    close_fd(c.err);
  }
}

void ProcessPool::start(std::uint64_t id, const std::vector<std::string>& argv, std::string input,
                        const std::string& cwd) {
  // stdin is a socket so that writing to a child that exited early fails with EPIPE instead of raising SIGPIPE.
  int in[2], out[2], err[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0) fail("socketpair");
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) fail("pipe");
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) fail("fork");
  if (pid == 0) exec_child(args.data(), cwd.c_str(), parent, in[1], out[1], err[1]);
  ::close(in[1]);
  ::close(out[1]);
  ::close(err[1]);
  Child c;
  c.id = id;
  c.pid = pid;
  c.in = in[0];
  c.out = out[0];
  c.err = err[0];
  c.input = std::move(input);
  for (int fd : {c.in, c.out, c.err}) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  if (c.input.empty()) close_fd(c.in);
  children_.push_back(std::move(c));
}

void ProcessPool::pump(Child& c, short in_events, short out_events, short err_events) {
  if (c.in >= 0 && in_events) {
    ssize_t n = ::send(c.in, c.input.data() + c.written, c.input.size() - c.written, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) c.written += static_cast<std::size_t>(n);
    if (c.written == c.input.size() || (n < 0 && errno != EAGAIN && errno != EINTR)) close_fd(c.in);
  }
  if (out_events) drain(c.out, c.result.out);
  if (err_events) drain(c.err, c.result.err);
}

std::vector<std::pair<std::uint64_t, ChildResult>> ProcessPool::wait(int timeout_ms) {
  std::vector<pollfd> fds;
  for (const auto& c : children_) {
    fds.push_back({c.in, POLLOUT, 0});  // a negative fd is ignored by poll
    fds.push_back({c.out, POLLIN, 0});
    fds.push_back({c.err, POLLIN, 0});
  }
  if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) fail("poll");
  std::vector<std::pair<std::uint64_t, ChildResult>> ended;
  for (std::size_t k = 0; k < children_.size(); ++k)
    pump(children_[k], fds[3 * k].revents, fds[3 * k + 1].revents, fds[3 * k + 2].revents);
  for (auto it = children_.begin(); it != children_.end();) {
    if (it->out >= 0 || it->err >= 0) {
      ++it;
      continue;
    }
    close_fd(it->in);
    int status = 0;
    while (::waitpid(it->pid, &status, 0) < 0 && errno == EINTR) {
    }
    it->result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    it->result.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    ended.emplace_back(it->id, std::move(it->result));
    it = children_.erase(it);
  }
  return ended;
}

}  // namespace placesim
