// Fetching another process's fd with pidfd_open(2) + pidfd_getfd(2): the fd
// transport UCX and PyTorch's expandable segments use instead of SCM_RIGHTS.
//
// Facts (man pages pidfd_open(2), pidfd_getfd(2); kernel sources): pidfd_open
// appeared in Linux 5.3 and pidfd_getfd in 5.6 (ENOSYS before). pidfd_getfd
// needs PTRACE_MODE_ATTACH_REALCREDS on the target: the same real uid and gid
// as the target (or CAP_SYS_PTRACE in its user namespace), a dumpable target,
// and, when Yama is active, its /proc/sys/kernel/yama/ptrace_scope rule
// (0: classic rules; 1: only an ancestor of the target, or a process the
// target named with prctl(PR_SET_PTRACER); 2: CAP_SYS_PTRACE only; 3: never).
// A refusal is EPERM. The fd it returns is a duplicate (same open file
// description) with close-on-exec set.
#pragma once

#include <optional>
#include <string>

#include "extmem/core/error.h"
#include "extmem/os/fd.h"

namespace extmem::os {

/// A duplicate of the fd numbered `fd_number` in process `pid`, made in this
/// process: pidfd_open(pid, 0), then pidfd_getfd(pidfd, fd_number, 0). The
/// pidfd is closed before returning, on every path. The caller owns the
/// returned fd (close-on-exec set by the kernel); the target keeps its own.
/// Errors (kind os, code "ENAME (N)" verbatim, detail strerror's text):
/// step "pidfd_open(pid P)": ESRCH (no such process), ENOSYS (kernel < 5.3),
/// EMFILE/ENFILE; step "pidfd_getfd(pid P, fd N)": EPERM (ptrace access mode
/// refused: another uid without CAP_SYS_PTRACE, Yama, a non-dumpable target),
/// EBADF (no fd N in the target), ESRCH (the target exited meanwhile), ENOSYS
/// (kernel < 5.6), EMFILE/ENFILE.
Result<UniqueFd> fetch_fd(int pid, int fd_number);

/// Yama's ptrace_scope (0..3) from /proc/sys/kernel/yama/ptrace_scope, or
/// nullopt when that file cannot be read (Yama not built in or not enabled:
/// then only the classic ptrace rules apply).
std::optional<int> yama_ptrace_scope();

/// One line for a ptrace_scope value: "0 (classic ptrace rules)", "1 (only an
/// ancestor or a PR_SET_PTRACER-named process may fetch)", "2 (CAP_SYS_PTRACE
/// only)", "3 (no process may fetch)", "absent (no Yama: classic ptrace rules)".
std::string describe_ptrace_scope(std::optional<int> scope);

}  // namespace extmem::os
