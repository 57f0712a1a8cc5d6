#include "probe/parent/fd_check.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <ostream>

#include <fmt/format.h>

#include "extmem/os/child.h"
#include "extmem/os/fd.h"
#include "extmem/os/ipc.h"
#include "extmem/os/pidfd.h"
#include "probe/worker/fd_fetch_failure.h"

namespace extmem::probe {
namespace {

constexpr int kAnswerTimeoutMs = 5000;

}  // namespace

FdTransportFinding check_fd_transport(const std::string& exe) {
  FdTransportFinding f;
  f.ptrace_scope = os::yama_ptrace_scope();
  auto memfd = os::create_memfd("extmem-fd-check", 4096);
  if (!memfd) {
    f.refused = memfd.error();
    return f;
  }
  auto sockets = os::Channel::pair();
  if (!sockets) {
    f.refused = sockets.error();
    return f;
  }
  // Started like a worker (the same binary, the same credentials), so it is
  // refused or permitted as a worker fetching from another worker would be.
  auto child = os::ChildProcess::spawn(exe, {exe, "probe", "--fd-transport-check"}, {sockets->second.fd()});
  sockets->second.owned_fd().reset();  // ours would hide the child's exit from recv
  if (!child) {
    f.refused = child.error();
    return f;
  }
  os::Channel& ours = sockets->first;
  ours.set_fd_transport(os::FdTransport::pidfd);
  f.attempted = true;
  f.how = fmt::format("a child of the probe (pid={}) fetching a memfd of the probe (pid={}, uid={}) by number", child->pid(),
                      ::getpid(), ::getuid());
  if (auto sent = ours.send(os::MsgType::request, "fd-transport check", memfd->get(), kAnswerTimeoutMs); !sent) {
    f.attempted = false;
    f.refused = sent.error();
  } else if (auto answer = ours.recv(kAnswerTimeoutMs); !answer) {
    f.attempted = false;
    f.refused = answer.error();
  } else {
    struct stat st {};
    unsigned long long dev = 0, ino = 0;
    unsigned uid = 0;
    int pid = 0;
    const bool same = std::sscanf(answer->payload.c_str(), "same %llu %llu uid %u pid %d", &dev, &ino, &uid, &pid) == 4;
    if (same) f.how = fmt::format("a child of the probe (pid={}, uid={}) fetching a memfd of the probe (pid={}, uid={}) by number",
                                  pid, uid, ::getpid(), ::getuid());
    else if (std::sscanf(answer->payload.c_str(), "refused uid %u pid %d", &uid, &pid) == 2)
      f.how = fmt::format("a child of the probe (pid={}, uid={}) fetching a memfd of the probe (pid={}, uid={}) by number", pid,
                          uid, ::getpid(), ::getuid());
    if (ours.log().refused) {
      f.refused = *ours.log().refused;
    } else if (same && ::fstat(memfd->get(), &st) == 0 && st.st_dev == dev && st.st_ino == ino) {
      f.permitted = true;
    } else {
      f.refused = Error{"compare the fetched fd", ErrorKind::mismatch, {},
                        fmt::format("the child's answer \"{}\" does not name the offered memfd", answer->payload)};
    }
  }
  if (!child->wait(2000)) child->kill_and_reap();
  return f;
}

void print_fd_transport(std::ostream& out, const FdTransportFinding& f) {
  std::string verdict;
  if (f.permitted)
    verdict = "pidfd_getfd permitted: " + f.how + " got the same file";
  else if (f.attempted && f.refused && fd_fetch_hit_resource_limit(*f.refused))
    verdict = "pidfd_getfd could not be tried: " + fd_fetch_failure_text(*f.refused) + ", a resource limit, not a refusal (" + f.how +
              "); rows run @pidfd that meet it FAIL";
  else if (f.attempted && f.refused)
    verdict = "pidfd_getfd refused: " + fd_fetch_failure_text(*f.refused) + ", " + f.how + "; rows run @pidfd are UNSUPPORTED";
  else
    verdict = "pidfd_getfd not checked: " + (f.refused ? fd_fetch_failure_text(*f.refused) : std::string("no attempt"));
  out << fmt::format("== phase A: fd transport: {}; Yama ptrace_scope {}; the probe relaxes nothing (no PR_SET_PTRACER)\n",
                     verdict, os::describe_ptrace_scope(f.ptrace_scope));
}

}  // namespace extmem::probe
