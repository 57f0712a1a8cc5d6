// Test program for `extmem threads --tracers`: a tracer, the thing the tool
// detects (the tool itself never uses ptrace).
//   threads_tracer attach PID wait       PTRACE_ATTACH, wait for the stop, then pause(): PID stays in
//                                        tracing-stop (t) under a sleeping tracer
//   threads_tracer attach PID stop-self  the same, then the tracer stops itself (SIGSTOP): a stopped tracer
//   threads_tracer attach PID vfork      the same, then the tracer vfork()s a child that sleeps: the tracer
//                                        waits for it in uninterruptible sleep (state D); the child dies with
//                                        the tracer (PR_SET_PDEATHSIG)
//   threads_tracer mutual                forks; parent and child PTRACE_SEIZE each other (neither stops)
// Prints "attached PID" or "mutual PARENT CHILD" once done, then waits to be killed.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "attach" && argc > 3) {
    const pid_t pid = static_cast<pid_t>(std::atoi(argv[2]));
    if (::ptrace(PTRACE_ATTACH, pid, nullptr, nullptr) != 0) {
      std::fprintf(stderr, "threads_tracer: PTRACE_ATTACH %d: %s\n", pid, std::strerror(errno));
      return 3;
    }
    int status = 0;
    if (::waitpid(pid, &status, __WALL) != pid) {
      std::fprintf(stderr, "threads_tracer: waitpid: %s\n", std::strerror(errno));
      return 3;
    }
    std::printf("attached %d\n", pid);
    std::fflush(stdout);
    if (std::string(argv[3]) == "stop-self") ::raise(SIGSTOP);
    if (std::string(argv[3]) == "vfork") {
      const pid_t tracer = ::getpid();
      // The vfork child may only make system calls: it shares our memory until it exits.
      if (::vfork() == 0) {
        if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != tracer) ::_exit(3);
        while (true) ::pause();
      }
      return 3;  // not reached while the child lives: it never exits, and dies with us
    }
    while (true) ::pause();
  }
  if (mode == "mutual") {
    int ready[2], go[2];
    if (::pipe(ready) != 0 || ::pipe(go) != 0) return 3;
    const pid_t parent = ::getpid();
    const pid_t child = ::fork();
    if (child < 0) return 3;
    if (child == 0) {
      char c = 0;
      if (::read(go[0], &c, 1) != 1) ::_exit(3);  // the parent has seized us
      if (::ptrace(PTRACE_SEIZE, parent, nullptr, nullptr) != 0) {
        std::fprintf(stderr, "threads_tracer: child PTRACE_SEIZE %d: %s\n", parent, std::strerror(errno));
        ::_exit(3);
      }
      if (::write(ready[1], "x", 1) != 1) ::_exit(3);
      while (true) ::pause();
    }
    if (::ptrace(PTRACE_SEIZE, child, nullptr, nullptr) != 0) {
      std::fprintf(stderr, "threads_tracer: PTRACE_SEIZE %d: %s\n", child, std::strerror(errno));
      ::kill(child, SIGKILL);
      return 3;
    }
    char c = 0;
    if (::write(go[1], "x", 1) != 1 || ::read(ready[0], &c, 1) != 1) {
      ::kill(child, SIGKILL);
      return 3;
    }
    std::printf("mutual %d %d\n", parent, child);
    std::fflush(stdout);
    while (true) ::pause();
  }
  std::fprintf(stderr, "usage: threads_tracer attach PID wait|stop-self|vfork | threads_tracer mutual\n");
  return 2;
}
