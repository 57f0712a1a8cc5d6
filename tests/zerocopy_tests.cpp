// Tests of extmem::zerocopy on real mappings: anonymous memory, memfd pages
// mapped twice, MAP_PRIVATE copies, and a memfd mapped in a forked process.
#include "extmem/core/zerocopy.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <limits>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <utility>
#include <vector>

namespace zc = extmem::zerocopy;

namespace {

constexpr std::size_t kPage = zc::kPageSize;

// ---- small owners for the real resources the tests use ----

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(std::exchange(fd_, -1));
  }

 private:
  int fd_ = -1;
};

class Mapping {
 public:
  Mapping() = default;
  Mapping(void* addr, std::size_t size) : addr_(addr), size_(size) {}
  Mapping(Mapping&& other) noexcept
      : addr_(std::exchange(other.addr_, MAP_FAILED)), size_(std::exchange(other.size_, 0)) {}
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() {
    if (addr_ != MAP_FAILED) ::munmap(addr_, size_);
  }
  bool ok() const { return addr_ != MAP_FAILED; }
  std::span<std::byte> bytes() const { return {static_cast<std::byte*>(addr_), size_}; }

 private:
  void* addr_ = MAP_FAILED;
  std::size_t size_ = 0;
};

Fd make_memfd(std::size_t size) {
  Fd fd(::memfd_create("zerocopy_tests", MFD_CLOEXEC));
  if (fd.get() < 0 || ::ftruncate(fd.get(), static_cast<off_t>(size)) != 0) return Fd();
  return fd;
}

Mapping map_fd(const Fd& fd, std::size_t size, int flags) {
  return Mapping(::mmap(nullptr, size, PROT_READ | PROT_WRITE, flags, fd.get(), 0), size);
}

Mapping map_anonymous(std::size_t size) {
  return Mapping(::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), size);
}

// A recognisable, non-constant pattern: neighbouring pages differ.
void fill_pattern(std::span<std::byte> bytes, std::uint8_t salt = 0) {
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    bytes[i] = static_cast<std::byte>((i * 131 + (i / kPage) * 7 + salt) & 0xff);
  }
}

std::vector<std::byte> copy_of(std::span<const std::byte> bytes) { return {bytes.begin(), bytes.end()}; }

// The post-condition every call must keep: the producer holds its original bytes.
::testing::AssertionResult unchanged(std::span<const std::byte> now, const std::vector<std::byte>& before) {
  if (now.size() != before.size()) return ::testing::AssertionFailure() << "size changed";
  const auto diff = std::mismatch(now.begin(), now.end(), before.begin());
  if (diff.first == now.end()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "producer byte " << (diff.first - now.begin()) << " is 0x" << std::hex
                                       << static_cast<int>(*diff.first) << ", was 0x"
                                       << static_cast<int>(*diff.second);
}

// A read function over an in-process consumer view that counts its calls.
struct CountingReader {
  explicit CountingReader(std::span<const std::byte> view) : consumer(view) {}

  std::span<const std::byte> consumer;
  std::size_t calls = 0;
  std::vector<std::size_t> lengths;

  extmem::Result<std::size_t> operator()(std::size_t offset, std::span<std::byte> out) {
    ++calls;
    lengths.push_back(out.size());
    std::atomic_thread_fence(std::memory_order_seq_cst);
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i] = *reinterpret_cast<const volatile std::byte*>(consumer.data() + offset + i);
    }
    return out.size();
  }
};

// ---- a consumer in another process: fd sent with SCM_RIGHTS, reads on request ----

bool send_fd(int sock, int fd) {
  char byte = 'F';
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  cmsg->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
  return ::sendmsg(sock, &msg, MSG_NOSIGNAL) == 1;
}

int receive_fd(int sock) {
  char byte = 0;
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  if (::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1) return -1;
  cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  if (cmsg == nullptr || cmsg->cmsg_type != SCM_RIGHTS) return -1;
  int fd = -1;
  std::memcpy(&fd, CMSG_DATA(cmsg), sizeof(int));
  return fd;
}

bool read_exact(int fd, void* data, std::size_t size) {
  auto* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n = ::read(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

bool write_exact(int fd, const void* data, std::size_t size) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

struct ReadRequest {
  std::uint64_t offset;
  std::uint64_t length;
};

// How the child holds the memfd's bytes.
enum class ChildView {
  shared_mapping,  // MAP_SHARED: an alias of the parent's pages
  copy,            // a private buffer copied once at start: a copy
};

// The child's whole life: receive the fd, map it, serve reads until EOF.
// Exit codes: 0 done, 2 no fd, 3 mmap failed, 4 malloc failed.
[[noreturn]] void child_main(int sock, std::size_t size, ChildView view) {
  const int fd = receive_fd(sock);
  if (fd < 0) ::_exit(2);
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) ::_exit(3);
  const auto* source = static_cast<const volatile unsigned char*>(map);
  std::vector<unsigned char> copy;
  if (view == ChildView::copy) {
    copy.assign(static_cast<const unsigned char*>(map), static_cast<const unsigned char*>(map) + size);
    source = copy.data();
  }
  unsigned char reply[256];
  ReadRequest request{};
  while (read_exact(sock, &request, sizeof(request))) {
    std::uint64_t n = 0;
    if (request.offset < size) n = std::min<std::uint64_t>({request.length, size - request.offset, sizeof(reply)});
    std::atomic_thread_fence(std::memory_order_seq_cst);
    for (std::uint64_t i = 0; i < n; ++i) reply[i] = source[request.offset + i];
    if (!write_exact(sock, &n, sizeof(n)) || !write_exact(sock, reply, n)) break;
  }
  ::_exit(0);
}

// The parent's side: a forked child holding the memfd, reached over a socket.
class ChildConsumer {
 public:
  ChildConsumer(const Fd& memfd, std::size_t size, ChildView view) {
    int socks[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, socks) != 0) return;
    Fd parent_end(socks[0]);
    Fd child_end(socks[1]);
    pid_ = ::fork();
    if (pid_ == 0) {
      parent_end.reset();
      child_main(child_end.get(), size, view);
    }
    if (pid_ < 0) return;
    child_end.reset();
    if (!send_fd(parent_end.get(), memfd.get())) return;
    sock_ = std::move(parent_end);
  }
  ChildConsumer(const ChildConsumer&) = delete;
  ChildConsumer& operator=(const ChildConsumer&) = delete;
  ~ChildConsumer() { (void)finish(); }

  bool ok() const { return pid_ > 0 && sock_.get() >= 0; }

  // Closes the socket (the child's loop ends) and returns the child's exit status.
  int finish() {
    sock_.reset();
    if (pid_ <= 0) return -1;
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  // The check_fn read function: one request, one reply, per call.
  zc::ReadFn reader() {
    return [this](std::size_t offset, std::span<std::byte> out) -> extmem::Result<std::size_t> {
      ++calls;
      const ReadRequest request{offset, out.size()};
      if (!write_exact(sock_.get(), &request, sizeof(request))) return extmem::os_error("send read request", errno);
      std::uint64_t n = 0;
      if (!read_exact(sock_.get(), &n, sizeof(n)) || n > out.size() || !read_exact(sock_.get(), out.data(), n)) {
        return extmem::Error{"receive read reply", extmem::ErrorKind::protocol, "", "truncated reply"};
      }
      return static_cast<std::size_t>(n);
    };
  }

  std::size_t calls = 0;

 private:
  pid_t pid_ = -1;
  Fd sock_;
};

// Two MAP_SHARED mappings of one memfd, filled with the pattern.
struct SharedPair {
  explicit SharedPair(std::size_t size)
      : size(size), fd(make_memfd(size)), a(map_fd(fd, size, MAP_SHARED)), b(map_fd(fd, size, MAP_SHARED)) {
    if (ok()) fill_pattern(a.bytes());
  }
  bool ok() const { return fd.get() >= 0 && a.ok() && b.ok(); }
  std::size_t size;
  Fd fd;
  Mapping a;
  Mapping b;
};

// ---- the offsets ----

// Options beyond kMaxRandomOffsets / kMaxBoundaryPages: invalid_options from every check, nothing
// read or written, and probe_offsets allocates nothing (it reserved that many offsets before).
TEST(ZerocopyOptions, BeyondTheMaximaIsInvalidOptions) {
  std::vector<std::byte> a(8192), b(8192);
  zc::Options o;
  o.random_offsets = zc::kMaxRandomOffsets + 1;
  EXPECT_NE(zc::options_problem(o).find("random_offsets 1048577 is beyond the maximum 1048576"), std::string::npos);
  EXPECT_TRUE(zc::probe_offsets(a.data(), a.size(), o).empty());
  const zc::Outcome c = zc::check(a, b, o);
  ASSERT_NE(zc::failure(c), nullptr);
  EXPECT_EQ(zc::failure(c)->errc, zc::Errc::invalid_options);
  EXPECT_EQ(zc::to_error(*zc::failure(c)).kind, extmem::ErrorKind::invalid_argument);
  int reads = 0;
  zc::ReadFn read = [&](std::size_t, std::span<std::byte> out) -> extmem::Result<std::size_t> {
    ++reads;
    return out.size();
  };
  o.random_offsets = std::numeric_limits<std::size_t>::max();
  EXPECT_EQ(zc::failure(zc::check_fn(a, read, o))->errc, zc::Errc::invalid_options);
  zc::ProducerFns fns{read, [](std::size_t, std::span<const std::byte>) -> extmem::Status { return {}; }};
  EXPECT_EQ(zc::failure(zc::check_rw(a.size(), fns, read, o))->errc, zc::Errc::invalid_options);
  EXPECT_EQ(reads, 0);
  o = zc::Options{};
  o.boundary_pages = zc::kMaxBoundaryPages + 1;
  EXPECT_NE(zc::options_problem(o).find("boundary_pages"), std::string::npos);
  EXPECT_EQ(zc::failure(zc::check(a, b, o))->errc, zc::Errc::invalid_options);
  o.boundary_pages = zc::kMaxBoundaryPages;
  EXPECT_TRUE(zc::options_problem(o).empty());
  EXPECT_STREQ(zc::to_string(zc::Errc::invalid_options), "invalid_options");
}

TEST(ZerocopyOffsets, CoverEndsPageBoundariesAndMiddle) {
  const std::size_t size = 16 * kPage;
  const auto* base = reinterpret_cast<const void*>(std::uintptr_t{0x7f0000000000});  // page aligned
  const std::vector<std::size_t> offsets = zc::probe_offsets(base, size);
  for (std::size_t want : {std::size_t{0}, size - 1, size / 2, kPage - 1, kPage, 2 * kPage - 1, 2 * kPage,
                           size - kPage - 1, size - kPage, size - 2 * kPage - 1, size - 2 * kPage}) {
    EXPECT_TRUE(std::binary_search(offsets.begin(), offsets.end(), want)) << "missing offset " << want;
  }
  EXPECT_TRUE(std::is_sorted(offsets.begin(), offsets.end()));
  EXPECT_EQ(std::adjacent_find(offsets.begin(), offsets.end()), offsets.end()) << "duplicates";
  EXPECT_LT(offsets.back(), size);
}

TEST(ZerocopyOffsets, BoundariesFollowTheProducerAddress) {
  // A view starting 100 bytes into a page: its first page boundary is at offset 3996.
  const auto* base = reinterpret_cast<const void*>(std::uintptr_t{0x7f0000000000 + 100});
  const std::vector<std::size_t> offsets = zc::probe_offsets(base, 8 * kPage);
  EXPECT_TRUE(std::binary_search(offsets.begin(), offsets.end(), kPage - 100));
  EXPECT_TRUE(std::binary_search(offsets.begin(), offsets.end(), kPage - 101));
}

TEST(ZerocopyOffsets, CountDoesNotGrowWithSize) {
  const auto* base = reinterpret_cast<const void*>(std::uintptr_t{0x7f0000000000});
  const zc::Options options;
  const std::size_t bound = 3 + 4 * options.boundary_pages + options.random_offsets;
  const std::size_t at_64k = zc::probe_offsets(base, 64 * 1024).size();
  const std::size_t at_1g = zc::probe_offsets(base, std::size_t{1} << 30).size();
  const std::size_t at_1t = zc::probe_offsets(base, std::size_t{1} << 40).size();
  EXPECT_LE(at_64k, bound);
  EXPECT_EQ(at_1g, bound);
  EXPECT_EQ(at_1t, bound);
}

TEST(ZerocopyOffsets, ReproducibleForASeedAndDifferentAcrossSeeds) {
  const auto* base = reinterpret_cast<const void*>(std::uintptr_t{0x7f0000000000});
  const std::size_t size = std::size_t{1} << 30;
  EXPECT_EQ(zc::probe_offsets(base, size), zc::probe_offsets(base, size));
  zc::Options other;
  other.seed = 42;
  EXPECT_NE(zc::probe_offsets(base, size), zc::probe_offsets(base, size, other));
}

TEST(ZerocopyOffsets, TinyViewsProbeEachByteOnce) {
  EXPECT_EQ(zc::probe_offsets(nullptr, 0), std::vector<std::size_t>{});
  const auto* base = reinterpret_cast<const void*>(std::uintptr_t{0x7f0000000000});
  EXPECT_EQ(zc::probe_offsets(base, 1), std::vector<std::size_t>{0});
  const std::vector<std::size_t> three = zc::probe_offsets(base, 3);
  EXPECT_EQ(three, (std::vector<std::size_t>{0, 1, 2}));
}

// ---- aliases: pass ----

TEST(ZerocopyCheck, ViewAndSubViewOfOneBufferPass) {
  Mapping buffer = map_anonymous(16 * kPage);
  ASSERT_TRUE(buffer.ok());
  fill_pattern(buffer.bytes());
  // The producer is a sub-view starting mid-page; the consumer is a longer
  // view of the same buffer starting at the same byte.
  const std::span<std::byte> producer = buffer.bytes().subspan(100, 10 * kPage + 17);
  const std::span<const std::byte> consumer = buffer.bytes().subspan(100);
  const auto before = copy_of(producer);

  const zc::Outcome outcome = zc::check(producer, consumer);
  ASSERT_TRUE(zc::passed(outcome)) << zc::failure(outcome)->message;
  EXPECT_GE(std::get<zc::Pass>(outcome).offsets_probed, 10u);
  EXPECT_TRUE(unchanged(producer, before));
}

TEST(ZerocopyCheck, TwoSharedMappingsOfOneMemfdPass) {
  SharedPair pair(32 * kPage);
  ASSERT_TRUE(pair.ok());
  const auto before = copy_of(pair.a.bytes());
  const zc::Outcome outcome = zc::check(pair.a.bytes(), pair.b.bytes());
  ASSERT_TRUE(zc::passed(outcome)) << zc::failure(outcome)->message;
  EXPECT_EQ(std::get<zc::Pass>(outcome).offsets_probed, zc::probe_offsets(pair.a.bytes().data(), pair.size).size());
  EXPECT_TRUE(unchanged(pair.a.bytes(), before));
}

TEST(ZerocopyCheck, OneGibSharedMemfdPassesProbingOnlyAFewOffsets) {
  // Sparse: only the probed pages ever get memory.
  const std::size_t size = std::size_t{1} << 30;
  Fd fd = make_memfd(size);
  ASSERT_GE(fd.get(), 0);
  Mapping a = map_fd(fd, size, MAP_SHARED);
  Mapping b = map_fd(fd, size, MAP_SHARED);
  ASSERT_TRUE(a.ok() && b.ok());
  const zc::Outcome outcome = zc::check(a.bytes(), b.bytes());
  ASSERT_TRUE(zc::passed(outcome)) << zc::failure(outcome)->message;
  const zc::Options options;
  EXPECT_EQ(std::get<zc::Pass>(outcome).offsets_probed, 3 + 4 * options.boundary_pages + options.random_offsets);
  // The bytes were zero (never written) and are zero again.
  for (std::size_t offset : zc::probe_offsets(a.bytes().data(), size)) EXPECT_EQ(a.bytes()[offset], std::byte{0});
}

TEST(ZerocopyCheckFn, MemfdMappedInAnotherProcessPasses) {
  const std::size_t size = 16 * kPage;
  Fd fd = make_memfd(size);
  ASSERT_GE(fd.get(), 0);
  Mapping producer = map_fd(fd, size, MAP_SHARED);
  ASSERT_TRUE(producer.ok());
  fill_pattern(producer.bytes());
  const auto before = copy_of(producer.bytes());

  ChildConsumer child(fd, size, ChildView::shared_mapping);
  ASSERT_TRUE(child.ok());
  const zc::Outcome outcome = zc::check_fn(producer.bytes(), child.reader());
  ASSERT_TRUE(zc::passed(outcome)) << zc::failure(outcome)->message;
  const std::size_t probed = std::get<zc::Pass>(outcome).offsets_probed;
  EXPECT_GE(child.calls, 2 * probed);
  EXPECT_EQ(child.finish(), 0);
  EXPECT_TRUE(unchanged(producer.bytes(), before));
}

TEST(ZerocopyCheckFn, ReadFnCalledAtLeastTwicePerOffsetForOneByteOnly) {
  SharedPair pair(8 * kPage);
  ASSERT_TRUE(pair.ok());
  CountingReader reader{pair.b.bytes()};
  const zc::Outcome outcome = zc::check_fn(pair.a.bytes(), std::ref(reader));
  ASSERT_TRUE(zc::passed(outcome)) << zc::failure(outcome)->message;
  EXPECT_GE(reader.calls, 2 * std::get<zc::Pass>(outcome).offsets_probed);
  for (std::size_t length : reader.lengths) EXPECT_EQ(length, 1u);
}

TEST(ZerocopyCheckFn, ReadFnThatRecopiesFromTheProducerPasses) {
  // Documented limit: the check proves visibility, not mechanism. A consumer
  // that copies the producer afresh on every read cannot be told from an alias.
  std::vector<std::byte> producer(3 * kPage);
  fill_pattern(producer);
  const zc::ReadFn recopy = [&](std::size_t offset, std::span<std::byte> out) -> extmem::Result<std::size_t> {
    std::vector<std::byte> fresh(producer.begin(), producer.end());  // a whole new copy each time
    std::memcpy(out.data(), fresh.data() + offset, out.size());
    return out.size();
  };
  EXPECT_TRUE(zc::passed(zc::check_fn(producer, recopy)));
}

// ---- copies: fail ----

TEST(ZerocopyCheck, MemcpyCopyFailsNamingOffsetAndValues) {
  Mapping buffer = map_anonymous(8 * kPage);
  Mapping copy = map_anonymous(8 * kPage);
  ASSERT_TRUE(buffer.ok() && copy.ok());
  fill_pattern(buffer.bytes());
  std::memcpy(copy.bytes().data(), buffer.bytes().data(), buffer.bytes().size());
  const auto before = copy_of(buffer.bytes());

  const zc::Outcome outcome = zc::check(buffer.bytes(), copy.bytes());
  const zc::Failure* f = zc::failure(outcome);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->errc, zc::Errc::not_observed);
  EXPECT_EQ(f->offset, 0u);  // the lowest probed offset
  EXPECT_EQ(f->original, static_cast<std::uint8_t>(before[0]));
  EXPECT_EQ(f->seen, f->original);  // the copy still shows the old byte
  EXPECT_EQ(f->written, f->sentinel);
  EXPECT_NE(f->written, f->seen);
  EXPECT_FALSE(f->restore_missed);
  EXPECT_NE(f->message.find("consumer holds a copy or stale snapshot"), std::string::npos) << f->message;
  EXPECT_NE(f->message.find("offset 0"), std::string::npos) << f->message;
  EXPECT_TRUE(unchanged(buffer.bytes(), before));
}

TEST(ZerocopyCheck, StaticConsumerFailsWhateverItsBytes) {
  // No constant consumer passes by coincidence, including one holding the byte
  // a naive sentinel choice would write.
  for (int fill = 0; fill < 256; ++fill) {
    std::vector<std::byte> producer(2 * kPage, std::byte{0x00});
    const std::vector<std::byte> consumer(2 * kPage, static_cast<std::byte>(fill));
    const zc::Outcome outcome = zc::check(producer, consumer);
    const zc::Failure* f = zc::failure(outcome);
    ASSERT_NE(f, nullptr) << "fill " << fill;
    EXPECT_EQ(f->errc, zc::Errc::not_observed);
    EXPECT_EQ(f->seen, fill);
    // The sentinel differs from the original and from what the consumer showed,
    // so the sentinel step alone fails; the restore step is not needed here.
    EXPECT_FALSE(f->restore_missed) << "fill " << fill;
    EXPECT_NE(f->sentinel, 0x00);
    EXPECT_NE(f->sentinel, fill);
    EXPECT_TRUE(unchanged(producer, std::vector<std::byte>(2 * kPage, std::byte{0x00})));
  }
}

TEST(ZerocopyCheck, WrittenPrivateMappingFailsCopyOnWrite) {
  // On Linux a MAP_PRIVATE page that was never written still maps the file's
  // page, so it shows writes made through a MAP_SHARED mapping (see the next
  // test). Writing through it makes the kernel give it a private copy (copy on
  // write); from then on it is a copy. Touch every page so every probed offset
  // lands on a private copy, as it does once a program writes its buffer.
  const std::size_t size = 16 * kPage;
  Fd fd = make_memfd(size);
  ASSERT_GE(fd.get(), 0);
  Mapping shared = map_fd(fd, size, MAP_SHARED);
  Mapping priv = map_fd(fd, size, MAP_PRIVATE);
  ASSERT_TRUE(shared.ok() && priv.ok());
  fill_pattern(shared.bytes());
  for (std::size_t page = 0; page < size; page += kPage) {
    auto* p = reinterpret_cast<volatile std::uint8_t*>(priv.bytes().data() + page);
    *p = *p;  // same value, but a write: the page is now private
  }
  const auto before = copy_of(shared.bytes());

  const zc::Outcome outcome = zc::check(shared.bytes(), priv.bytes());
  const zc::Failure* f = zc::failure(outcome);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->errc, zc::Errc::not_observed);
  EXPECT_EQ(f->offset, 0u);
  EXPECT_EQ(f->seen, f->original);
  EXPECT_TRUE(unchanged(shared.bytes(), before));
}

TEST(ZerocopyCheck, PrivateMappingAsProducerFails) {
  // Writing through a MAP_PRIVATE producer copies the page on the first write,
  // so a MAP_SHARED consumer never sees the sentinel.
  const std::size_t size = 4 * kPage;
  Fd fd = make_memfd(size);
  ASSERT_GE(fd.get(), 0);
  Mapping shared = map_fd(fd, size, MAP_SHARED);
  Mapping priv = map_fd(fd, size, MAP_PRIVATE);
  ASSERT_TRUE(shared.ok() && priv.ok());
  fill_pattern(shared.bytes());
  const auto before = copy_of(priv.bytes());

  const zc::Outcome outcome = zc::check(priv.bytes(), shared.bytes());
  const zc::Failure* f = zc::failure(outcome);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->errc, zc::Errc::not_observed);
  EXPECT_TRUE(unchanged(priv.bytes(), before));
}

TEST(ZerocopyCheck, UntouchedPrivateMappingStillSeesSharedWrites) {
  // Characterises the Linux behaviour the test above works around: until it is
  // written, a MAP_PRIVATE mapping of a memfd shares the file's pages, so the
  // check passes. This is why a private mapping must be written to fail.
  const std::size_t size = 4 * kPage;
  Fd fd = make_memfd(size);
  ASSERT_GE(fd.get(), 0);
  Mapping shared = map_fd(fd, size, MAP_SHARED);
  Mapping priv = map_fd(fd, size, MAP_PRIVATE);
  ASSERT_TRUE(shared.ok() && priv.ok());
  fill_pattern(shared.bytes());
  EXPECT_TRUE(zc::passed(zc::check(shared.bytes(), priv.bytes())));
}

TEST(ZerocopyCheck, ConsumerShiftedByOnePageFailsAndProducerIsUnchanged) {
  // The consumer aliases the same memory, one page further on: offset i of the
  // consumer is offset i + 4096 of the producer.
  Mapping buffer = map_anonymous(12 * kPage);
  ASSERT_TRUE(buffer.ok());
  fill_pattern(buffer.bytes());
  const std::span<std::byte> producer = buffer.bytes().first(8 * kPage);
  const std::span<const std::byte> consumer = buffer.bytes().subspan(kPage, 8 * kPage);
  const auto whole_before = copy_of(buffer.bytes());

  const zc::Outcome outcome = zc::check(producer, consumer);
  const zc::Failure* f = zc::failure(outcome);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->errc, zc::Errc::not_observed);
  EXPECT_EQ(f->offset, 0u);
  EXPECT_EQ(f->seen, static_cast<std::uint8_t>(whole_before[kPage]));  // the byte one page on
  EXPECT_TRUE(unchanged(buffer.bytes(), whole_before));
}

TEST(ZerocopyCheckFn, CopyHeldByAnotherProcessFails) {
  // Negative control for MemfdMappedInAnotherProcessPasses: the child copies
  // the memfd's bytes once and serves reads from its copy.
  const std::size_t size = 8 * kPage;
  Fd fd = make_memfd(size);
  ASSERT_GE(fd.get(), 0);
  Mapping producer = map_fd(fd, size, MAP_SHARED);
  ASSERT_TRUE(producer.ok());
  fill_pattern(producer.bytes());
  const auto before = copy_of(producer.bytes());

  ChildConsumer child(fd, size, ChildView::copy);
  ASSERT_TRUE(child.ok());
  const zc::Outcome outcome = zc::check_fn(producer.bytes(), child.reader());
  const zc::Failure* f = zc::failure(outcome);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->errc, zc::Errc::not_observed);
  EXPECT_EQ(f->offset, 0u);
  EXPECT_EQ(f->seen, static_cast<std::uint8_t>(before[0]));
  EXPECT_EQ(child.finish(), 0);
  EXPECT_TRUE(unchanged(producer.bytes(), before));
}

TEST(ZerocopyCheckFn, LazySnapshotIsCaughtByTheRestoreCheck) {
  // The consumer reads live bytes on its first call, snapshots everything on
  // its second (which falls after the first sentinel write) and serves that
  // snapshot from then on: it shows the sentinel, then misses the restore.
  SharedPair pair(4 * kPage);
  ASSERT_TRUE(pair.ok());
  const auto before = copy_of(pair.a.bytes());
  std::size_t calls = 0;
  std::vector<std::byte> snapshot;
  const zc::ReadFn lazy = [&](std::size_t offset, std::span<std::byte> out) -> extmem::Result<std::size_t> {
    if (++calls == 2) snapshot = copy_of(pair.b.bytes());
    const std::span<const std::byte> from = snapshot.empty() ? pair.b.bytes() : std::span<const std::byte>(snapshot);
    std::memcpy(out.data(), from.data() + offset, out.size());
    return out.size();
  };
  const zc::Outcome outcome = zc::check_fn(pair.a.bytes(), lazy);
  const zc::Failure* f = zc::failure(outcome);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->errc, zc::Errc::not_observed);
  EXPECT_TRUE(f->restore_missed);
  EXPECT_EQ(f->offset, 0u);
  EXPECT_EQ(f->seen, f->sentinel);
  EXPECT_EQ(f->written, f->original);
  EXPECT_NE(f->message.find("consumer holds a copy or stale snapshot"), std::string::npos) << f->message;
  EXPECT_TRUE(unchanged(pair.a.bytes(), before));
}

// ---- errors ----

TEST(ZerocopyErrors, ConsumerShorterThanProducer) {
  Mapping buffer = map_anonymous(4 * kPage);
  ASSERT_TRUE(buffer.ok());
  fill_pattern(buffer.bytes());
  const auto before = copy_of(buffer.bytes());
  const zc::Outcome outcome = zc::check(buffer.bytes(), buffer.bytes().first(4 * kPage - 1));
  const zc::Failure* f = zc::failure(outcome);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->errc, zc::Errc::consumer_too_short);
  EXPECT_FALSE(f->message.empty());
  EXPECT_TRUE(unchanged(buffer.bytes(), before));
}

TEST(ZerocopyErrors, EmptyProducer) {
  Mapping buffer = map_anonymous(kPage);
  ASSERT_TRUE(buffer.ok());
  const zc::Outcome a = zc::check({}, buffer.bytes());
  ASSERT_NE(zc::failure(a), nullptr);
  EXPECT_EQ(zc::failure(a)->errc, zc::Errc::empty_producer);

  CountingReader reader{buffer.bytes()};
  const zc::Outcome b = zc::check_fn(buffer.bytes().first(0), std::ref(reader));
  ASSERT_NE(zc::failure(b), nullptr);
  EXPECT_EQ(zc::failure(b)->errc, zc::Errc::empty_producer);
  EXPECT_EQ(reader.calls, 0u);
}

TEST(ZerocopyErrors, FailingReadFnErrorIsCarriedUnchanged) {
  SharedPair pair(4 * kPage);
  ASSERT_TRUE(pair.ok());
  const auto before = copy_of(pair.a.bytes());
  const extmem::Error error{"vkWaitForFences", extmem::ErrorKind::driver, "VK_ERROR_DEVICE_LOST", "fence 3"};
  const zc::ReadFn failing = [&](std::size_t, std::span<std::byte>) -> extmem::Result<std::size_t> { return error; };
  const zc::Outcome outcome = zc::check_fn(pair.a.bytes(), failing);
  const zc::Failure* f = zc::failure(outcome);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->errc, zc::Errc::read_failed);
  EXPECT_EQ(f->read_error.step, error.step);
  EXPECT_EQ(f->read_error.kind, error.kind);
  EXPECT_EQ(f->read_error.code, error.code);
  EXPECT_EQ(f->read_error.detail, error.detail);
  EXPECT_NE(f->message.find("VK_ERROR_DEVICE_LOST"), std::string::npos) << f->message;
  EXPECT_EQ(zc::to_error(*f).code, "VK_ERROR_DEVICE_LOST");
  EXPECT_TRUE(unchanged(pair.a.bytes(), before));
}

TEST(ZerocopyErrors, ReadFnFailingMidwayLeavesProducerRestored) {
  // Fail on the k-th call for every k a passing run makes: some of those fall
  // right after a sentinel write, before its restore.
  SharedPair pair(8 * kPage);
  ASSERT_TRUE(pair.ok());
  const auto before = copy_of(pair.a.bytes());
  CountingReader counter{pair.b.bytes()};
  ASSERT_TRUE(zc::passed(zc::check_fn(pair.a.bytes(), std::ref(counter))));
  ASSERT_GT(counter.calls, 3u);

  for (std::size_t fail_at = 1; fail_at <= counter.calls; ++fail_at) {
    std::size_t calls = 0;
    std::size_t failing_offset = 0;
    CountingReader live{pair.b.bytes()};
    const zc::ReadFn flaky = [&](std::size_t offset, std::span<std::byte> out) -> extmem::Result<std::size_t> {
      if (++calls == fail_at) {
        failing_offset = offset;
        return extmem::os_error("read", EIO);
      }
      return live(offset, out);
    };
    const zc::Outcome outcome = zc::check_fn(pair.a.bytes(), flaky);
    const zc::Failure* f = zc::failure(outcome);
    ASSERT_NE(f, nullptr) << "fail_at " << fail_at;
    EXPECT_EQ(f->errc, zc::Errc::read_failed);
    EXPECT_EQ(f->offset, failing_offset);
    EXPECT_EQ(f->read_error.code, extmem::errno_code(EIO));
    EXPECT_TRUE(unchanged(pair.a.bytes(), before)) << "fail_at " << fail_at;
  }
}

TEST(ZerocopyErrors, ThrowingReadFnIsReadFailedAndProducerRestored) {
  SharedPair pair(4 * kPage);
  ASSERT_TRUE(pair.ok());
  const auto before = copy_of(pair.a.bytes());
  std::size_t calls = 0;
  CountingReader live{pair.b.bytes()};
  const zc::ReadFn throwing = [&](std::size_t offset, std::span<std::byte> out) -> extmem::Result<std::size_t> {
    if (++calls == 2) throw std::runtime_error("boom");  // right after the first sentinel
    return live(offset, out);
  };
  const zc::Outcome outcome = zc::check_fn(pair.a.bytes(), throwing);
  const zc::Failure* f = zc::failure(outcome);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->errc, zc::Errc::read_failed);
  EXPECT_EQ(f->read_error.detail, "boom");
  EXPECT_TRUE(unchanged(pair.a.bytes(), before));
}

TEST(ZerocopyErrors, EmptyReadFnIsReadFailed) {
  SharedPair pair(kPage);
  ASSERT_TRUE(pair.ok());
  const zc::Outcome outcome = zc::check_fn(pair.a.bytes(), zc::ReadFn{});
  ASSERT_NE(zc::failure(outcome), nullptr);
  EXPECT_EQ(zc::failure(outcome)->errc, zc::Errc::read_failed);
  EXPECT_EQ(zc::failure(outcome)->read_error.kind, extmem::ErrorKind::invalid_argument);
}

TEST(ZerocopyErrors, ReadFnReturningTooFewBytesIsShortRead) {
  SharedPair pair(4 * kPage);
  ASSERT_TRUE(pair.ok());
  const auto before = copy_of(pair.a.bytes());
  std::size_t calls = 0;
  CountingReader live{pair.b.bytes()};
  const zc::ReadFn short_reader = [&](std::size_t offset, std::span<std::byte> out) -> extmem::Result<std::size_t> {
    if (++calls == 2) return std::size_t{0};  // after the first sentinel write
    return live(offset, out);
  };
  const zc::Outcome outcome = zc::check_fn(pair.a.bytes(), short_reader);
  const zc::Failure* f = zc::failure(outcome);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->errc, zc::Errc::short_read);
  EXPECT_EQ(f->offset, 0u);
  EXPECT_EQ(zc::to_error(*f).kind, extmem::ErrorKind::protocol);
  EXPECT_TRUE(unchanged(pair.a.bytes(), before));
}

TEST(ZerocopyErrors, ReadFnClaimingMoreBytesThanAskedIsShortRead) {
  SharedPair pair(kPage);
  ASSERT_TRUE(pair.ok());
  const zc::ReadFn liar = [](std::size_t, std::span<std::byte> out) -> extmem::Result<std::size_t> {
    return out.size() + 1;
  };
  const zc::Outcome outcome = zc::check_fn(pair.a.bytes(), liar);
  ASSERT_NE(zc::failure(outcome), nullptr);
  EXPECT_EQ(zc::failure(outcome)->errc, zc::Errc::short_read);
}

TEST(ZerocopyErrors, NamesAndConversionToError) {
  EXPECT_STREQ(zc::to_string(zc::Errc::empty_producer), "empty_producer");
  EXPECT_STREQ(zc::to_string(zc::Errc::consumer_too_short), "consumer_too_short");
  EXPECT_STREQ(zc::to_string(zc::Errc::short_read), "short_read");
  EXPECT_STREQ(zc::to_string(zc::Errc::read_failed), "read_failed");
  EXPECT_STREQ(zc::to_string(zc::Errc::not_observed), "not_observed");

  zc::Failure f{};
  f.errc = zc::Errc::not_observed;
  f.message = "offset 0: ...";
  const extmem::Error e = zc::to_error(f);
  EXPECT_EQ(e.kind, extmem::ErrorKind::mismatch);
  EXPECT_EQ(e.code, "not_observed");
  EXPECT_EQ(e.detail, f.message);
  f.errc = zc::Errc::consumer_too_short;
  EXPECT_EQ(zc::to_error(f).kind, extmem::ErrorKind::invalid_argument);
}

}  // namespace
