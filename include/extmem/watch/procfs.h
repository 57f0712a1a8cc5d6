// What `extmem watch` reads from procfs about one process: /proc/PID/stat,
// /proc/PID/status, /proc/PID/smaps_rollup, the fd directory, the maps file
// (counted, or classified with extmem::os::parse_maps_line) and the children
// lists. Parsers take the file's text and never touch the system, so they can
// be unit-tested and fuzzed; ProcessDir does the reading.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "extmem/core/error.h"
#include "extmem/os/fd.h"

namespace extmem::watch {

/// The fields of /proc/PID/stat (proc(5)) the sampler uses.
struct ProcStat {
  pid_t pid = 0;
  std::string comm;               ///< raw bytes between the parentheses (at most 64; any byte but NUL)
  char state = '?';               ///< R, S, D, Z (zombie), T, t, X, I, ...
  pid_t ppid = 0;
  std::uint64_t flags = 0;        ///< field 9: kernel PF_* flags (PF_FORKNOEXEC = 0x40: forked, not exec'd yet)
  std::uint64_t start_ticks = 0;  ///< field 22: start time after boot, in clock ticks; with pid, the process identity
};

/// PF_FORKNOEXEC in ProcStat::flags: the process has not called exec since it was forked.
inline constexpr std::uint64_t kPfForkNoExec = 0x40;

/// Parses the one line of /proc/PID/stat. The comm may hold spaces and ')' and
/// is delimited by the LAST ')'. Errors (invalid_argument, step "parse
/// /proc/PID/stat"): the detail names the field that was missing or malformed.
Result<ProcStat> parse_stat(std::string_view text);

/// The fields of /proc/PID/status the sampler uses. Every memory figure is in
/// KiB as the kernel prints it ("kB" there means 1024 bytes). A field is empty
/// when its line is absent: a kernel thread or an exiting process has no Vm*
/// lines, and kernels before 4.5 have no Rss* lines.
struct ProcStatus {
  std::optional<pid_t> ppid;               ///< PPid:
  std::optional<std::uint64_t> threads;    ///< Threads:
  std::optional<std::uint64_t> vm_rss_kib;     ///< VmRSS: resident set (anon + file + shmem)
  std::optional<std::uint64_t> vm_hwm_kib;     ///< VmHWM: peak resident set since the process started
  std::optional<std::uint64_t> rss_anon_kib;   ///< RssAnon:
  std::optional<std::uint64_t> rss_file_kib;   ///< RssFile:
  std::optional<std::uint64_t> rss_shmem_kib;  ///< RssShmem: (memfd and other shmem pages count here)
  std::optional<std::uint64_t> vm_swap_kib;    ///< VmSwap:
};

/// Parses the text of /proc/PID/status. Lines it does not use are skipped;
/// a used line whose value is not a number (with " kB" where the kernel prints
/// it) is an error (invalid_argument, step "parse /proc/PID/status", the
/// detail quotes the line), never a silent zero.
Result<ProcStatus> parse_status(std::string_view text);

/// The "Pss:" line of /proc/PID/smaps_rollup, in KiB. Only that line is read:
/// Pss_Anon/Pss_File/Pss_Shmem (kernel 5.3) and Pss_Dirty (6.0) are parts of
/// it, and adding every Pss* line would count the same pages two or three
/// times. Errors (invalid_argument, step "parse smaps_rollup"): no "Pss:" line,
/// or its value is not a number of kB.
Result<std::uint64_t> parse_pss_total(std::string_view text);

/// Number of '\n'-terminated lines in `text` plus one for a final unterminated
/// line; a maps file has one line per mapping, so this is the mapping count.
std::uint64_t count_lines(std::string_view text) noexcept;

/// Whether an Error from ProcessDir means "the process is gone" (ENOENT or
/// ESRCH: it exited, or it exited and was reaped, between listing and reading).
bool is_gone(const Error& e) noexcept;
/// Whether an Error from ProcessDir is a permission refusal (EACCES or EPERM).
bool is_denied(const Error& e) noexcept;

/// One process's /proc directory, opened once: every file read through it
/// belongs to the process that held the pid at open time. If that process
/// exits and the pid is reused, reads fail with ESRCH/ENOENT instead of
/// reading the newcomer. Owns the directory fd; reads go through a buffer the
/// caller lends (so one buffer serves every process of a sample).
class ProcessDir {
 public:
  /// Opens /proc/PID. Errors: os_error("open /proc/PID", errno); ENOENT: no such process.
  static Result<ProcessDir> open(pid_t pid);

  pid_t pid() const noexcept { return pid_; }

  /// Reads the whole of `name` ("stat", "status", "maps", "smaps_rollup",
  /// "task/123/children") into `buf` (resized to the text; its capacity is
  /// kept for the next read). Errors: os_error("open|read /proc/PID/NAME", errno).
  Status read(const char* name, std::string& buf) const;

  /// Number of open fds (entries of /proc/PID/fd). Needs ptrace read access:
  /// EACCES for another user's process. Errors: os_error("open|getdents /proc/PID/fd").
  Result<std::uint64_t> fd_count() const;

  /// Children of every thread of the process, from /proc/PID/task/TID/children
  /// (CONFIG_PROC_CHILDREN). Errors: os_error("open|read /proc/PID/task..."),
  /// ENOENT on a kernel without the children files.
  Result<std::vector<pid_t>> children(std::string& buf) const;

  /// Number of mappings: the line count of /proc/PID/maps, read in large
  /// blocks and never parsed. `buf` is scratch space. 0 means the address
  /// space is already gone (the process is exiting). Errors as read().
  Result<std::uint64_t> mapping_count(std::string& buf) const;

 private:
  ProcessDir(pid_t pid, os::UniqueFd dir) : pid_(pid), dir_(std::move(dir)) {}
  pid_t pid_ = 0;
  os::UniqueFd dir_;
};

/// Whether `pid` shares the address space of `other` (kcmp(2) KCMP_VM): a
/// vfork child before its exec does, and its figures are then its parent's.
/// False when they differ or when kcmp is unavailable or refused.
bool shares_address_space(pid_t pid, pid_t other) noexcept;

/// Every pid under /proc with its parent, from each /proc/PID/stat: the
/// fallback for kernels without /proc/PID/task/TID/children. Processes that
/// vanish while being listed are left out. Errors: os_error("open /proc").
Result<std::vector<std::pair<pid_t, pid_t>>> list_all_processes(std::string& buf);

}  // namespace extmem::watch
