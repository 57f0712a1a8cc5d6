#include "memtools/mapping_guard.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex>

#include <fmt/format.h>

#include "extmem/memtools/word_access.h"

namespace extmem::memtools::detail {
namespace {

// One guarded mapping. `end` is nonzero while the slot is live; the handler
// reads the slots without a lock (atomics only: async-signal-safe).
struct Slot {
  std::atomic<bool> used{false};
  std::atomic<std::uintptr_t> start{0}, end{0};  // [start, end), end rounded up to a page
  std::atomic<bool> faulted{false};
};

constexpr std::size_t kSlots = 64;
std::array<Slot, kSlots> g_slots;
struct sigaction g_previous {};  // the SIGBUS action before ours, for faults outside every guard
std::uintptr_t g_page = 4096;
std::once_flag g_installed;

void on_sigbus(int sig, siginfo_t* info, void* context) {
  const auto at = reinterpret_cast<std::uintptr_t>(info->si_addr);
  for (Slot& s : g_slots) {
    const std::uintptr_t start = s.start.load(), end = s.end.load();
    if (end == 0 || at < start || at >= end) continue;
    s.faulted.store(true);
    // Zero pages from the faulting page to the end of the mapping: the read
    // is repeated and succeeds, and later pages do not fault one by one.
    // syscall() rather than mmap(): no interceptor, nothing but the system call.
    const std::uintptr_t page = at & ~(g_page - 1);
    const long r = ::syscall(SYS_mmap, page, end - page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (r != -1) return;
    break;  // cannot repair it: die as without the guard
  }
  if ((g_previous.sa_flags & SA_SIGINFO) != 0 && g_previous.sa_sigaction != nullptr) {
    g_previous.sa_sigaction(sig, info, context);
    return;
  }
  if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN && g_previous.sa_handler != nullptr) {
    g_previous.sa_handler(sig);
    return;
  }
  // Default action: returning repeats the faulting read, which now kills.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(SIGBUS, &dfl, nullptr);
}

void install() {
  g_page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  struct sigaction sa {};
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGBUS, &sa, &g_previous);
}

std::string stat_size(int fd) {
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0) return "unknown";
  return fmt::format("{}", static_cast<std::uint64_t>(st.st_size));
}

}  // namespace

MappingGuard::MappingGuard(const void* addr, std::size_t size, int fd, std::string path)
    : fd_(fd), size_(size), path_(std::move(path)) {
  std::call_once(g_installed, install);
  for (std::size_t i = 0; i < kSlots; ++i) {
    bool expected = false;
    if (!g_slots[i].used.compare_exchange_strong(expected, true)) continue;
    Slot& s = g_slots[i];
    const auto start = reinterpret_cast<std::uintptr_t>(addr);
    s.faulted.store(false);
    s.start.store(start);
    s.end.store((start + size + g_page - 1) & ~(g_page - 1));
    slot_ = static_cast<int>(i);
    break;
  }
  test_stop_after_map();
}

MappingGuard::~MappingGuard() {
  if (slot_ < 0) return;
  Slot& s = g_slots[static_cast<std::size_t>(slot_)];
  s.end.store(0);
  s.start.store(0);
  s.used.store(false);
}

bool MappingGuard::faulted() const noexcept {
  return slot_ >= 0 && g_slots[static_cast<std::size_t>(slot_)].faulted.load();
}

bool MappingGuard::shrank() const noexcept {
  if (slot_ < 0) return false;
  if (faulted()) return true;
  struct stat st {};
  return ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) < size_;
}

Error MappingGuard::shrank_error() const { return file_shrank(path_, fd_, size_); }

Status MappingGuard::check() const {
  if (shrank()) return shrank_error();
  return {};
}

Error file_shrank(const std::string& path, int fd, std::uint64_t was) {
  return word_error("read " + path, ErrorKind::invalid_argument, WordCode::past_end,
                    fmt::format("{} shrank while it was read: {} bytes now, was {}", path, stat_size(fd), was));
}

void test_stop_after_map() {
  if (std::getenv("EXTMEM_TEST_STOP_AFTER_MAP") != nullptr) ::raise(SIGSTOP);
}

}  // namespace extmem::memtools::detail
