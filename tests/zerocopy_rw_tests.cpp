// Tests of extmem::zerocopy::check_rw: a producer reached through read and
// write functions (as a CUDA tensor is from Python), on two MAP_SHARED
// mappings of one memfd, a private copy, and functions that fail mid-way.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "extmem/core/zerocopy.h"

namespace zc = extmem::zerocopy;

namespace {

constexpr std::size_t kPage = zc::kPageSize;

// One memfd mapped twice with MAP_SHARED: `producer` and `consumer` are two
// views of the same bytes. Unmapped and closed with the object.
class SharedBytes {
 public:
  explicit SharedBytes(std::size_t size) : size_(size) {
    fd_ = ::memfd_create("zerocopy_rw_tests", MFD_CLOEXEC);
    if (fd_ < 0 || ::ftruncate(fd_, static_cast<off_t>(size)) != 0) return;
    producer_ = static_cast<std::byte*>(::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0));
    consumer_ = static_cast<std::byte*>(::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0));
    if (!ok()) return;
    for (std::size_t i = 0; i < size; ++i) producer_[i] = static_cast<std::byte>((i * 131 + i / kPage * 7) & 0xff);
    before_.assign(producer_, producer_ + size);
  }
  SharedBytes(const SharedBytes&) = delete;
  SharedBytes& operator=(const SharedBytes&) = delete;
  ~SharedBytes() {
    if (producer_ != MAP_FAILED) ::munmap(producer_, size_);
    if (consumer_ != MAP_FAILED) ::munmap(consumer_, size_);
    if (fd_ >= 0) ::close(fd_);
  }

  bool ok() const { return fd_ >= 0 && producer_ != MAP_FAILED && consumer_ != MAP_FAILED; }
  std::size_t size() const { return size_; }
  std::byte* producer() const { return producer_; }
  const std::byte* consumer() const { return consumer_; }
  const std::vector<std::byte>& before() const { return before_; }
  // The post-condition: the producer holds the bytes it held before the check.
  bool unchanged() const { return std::equal(before_.begin(), before_.end(), producer_); }

 private:
  std::size_t size_;
  int fd_ = -1;
  std::byte* producer_ = static_cast<std::byte*>(MAP_FAILED);
  std::byte* consumer_ = static_cast<std::byte*>(MAP_FAILED);
  std::vector<std::byte> before_;
};

// Volatile byte copies, as a device copy would be: never elided or merged.
void copy_in(std::byte* to, const std::byte* from, std::size_t n) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (std::size_t i = 0; i < n; ++i) reinterpret_cast<volatile std::byte*>(to)[i] = from[i];
  std::atomic_thread_fence(std::memory_order_seq_cst);
}
void copy_out(std::byte* to, const std::byte* from, std::size_t n) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (std::size_t i = 0; i < n; ++i) to[i] = reinterpret_cast<const volatile std::byte*>(from)[i];
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

// Functions over in-process memory, counting their calls; `fail_*_at` makes
// the k-th call (1-based, 0: never) fail with EIO.
struct Calls {
  std::size_t reads = 0;
  std::size_t writes = 0;
  std::size_t fail_write_at = 0;
};

zc::ReadFn reader(const std::byte* view, std::size_t* calls = nullptr, std::size_t fail_at = 0) {
  return [view, calls, fail_at, n = std::size_t{0}](std::size_t offset,
                                                    std::span<std::byte> out) mutable -> extmem::Result<std::size_t> {
    if (calls != nullptr) ++*calls;
    if (++n == fail_at) return extmem::os_error("read", EIO);
    copy_out(out.data(), view + offset, out.size());
    return out.size();
  };
}

zc::ProducerFns producer_fns(std::byte* view, Calls& calls) {
  zc::ProducerFns fns;
  fns.read = reader(view, &calls.reads);
  fns.write = [view, &calls](std::size_t offset, std::span<const std::byte> in) -> extmem::Status {
    if (++calls.writes == calls.fail_write_at) return extmem::os_error("write", EIO);
    copy_in(view + offset, in.data(), in.size());
    return {};
  };
  fns.address = reinterpret_cast<std::uintptr_t>(view);
  return fns;
}

// ---- pass and not_observed ----

TEST(ZerocopyCheckRw, SharedMappingsPassWithTheOffsetsOfTheProducerAddress) {
  SharedBytes bytes(8 * kPage);
  ASSERT_TRUE(bytes.ok());
  Calls calls;
  const zc::Outcome outcome = zc::check_rw(bytes.size(), producer_fns(bytes.producer(), calls), reader(bytes.consumer()));
  ASSERT_TRUE(zc::passed(outcome)) << zc::failure(outcome)->message;
  const std::size_t probed = std::get<zc::Pass>(outcome).offsets_probed;
  EXPECT_EQ(probed, zc::probe_offsets(bytes.producer(), bytes.size()).size());
  EXPECT_EQ(calls.reads, probed);       // one producer read per offset: the original
  EXPECT_EQ(calls.writes, 2 * probed);  // the sentinel and the restore
  EXPECT_TRUE(bytes.unchanged());
}

TEST(ZerocopyCheckRw, AddressZeroPlacesBoundariesEveryPageFromOffsetZero) {
  SharedBytes bytes(8 * kPage);
  ASSERT_TRUE(bytes.ok());
  Calls calls;
  zc::ProducerFns fns = producer_fns(bytes.producer(), calls);
  fns.address = 0;
  std::vector<std::size_t> written;
  const zc::WriteFn inner = fns.write;
  fns.write = [&](std::size_t offset, std::span<const std::byte> in) {
    written.push_back(offset);
    return inner(offset, in);
  };
  ASSERT_TRUE(zc::passed(zc::check_rw(bytes.size(), fns, reader(bytes.consumer()))));
  written.erase(std::unique(written.begin(), written.end()), written.end());
  EXPECT_EQ(written, zc::probe_offsets(nullptr, bytes.size()));
  EXPECT_NE(std::find(written.begin(), written.end(), kPage), written.end());
}

TEST(ZerocopyCheckRw, CopyIsNotObservedAndProducerIsUnchanged) {
  SharedBytes bytes(4 * kPage);
  ASSERT_TRUE(bytes.ok());
  const std::vector<std::byte> copy = bytes.before();
  Calls calls;
  const zc::Outcome outcome = zc::check_rw(bytes.size(), producer_fns(bytes.producer(), calls), reader(copy.data()));
  const zc::Failure* f = zc::failure(outcome);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->errc, zc::Errc::not_observed);
  EXPECT_EQ(f->offset, 0u);
  EXPECT_EQ(f->side, zc::Side::none);
  EXPECT_FALSE(f->restore_failed);
  EXPECT_EQ(f->written, f->sentinel);
  EXPECT_EQ(f->seen, static_cast<std::uint8_t>(bytes.before()[0]));
  EXPECT_NE(f->message.find("consumer holds a copy or stale snapshot"), std::string::npos) << f->message;
  EXPECT_TRUE(bytes.unchanged());
}

TEST(ZerocopyCheckRw, WriteFunctionThatDropsWritesIsNotObserved) {
  SharedBytes bytes(kPage);
  ASSERT_TRUE(bytes.ok());
  zc::ProducerFns fns;
  fns.read = reader(bytes.producer());
  fns.write = [](std::size_t, std::span<const std::byte>) -> extmem::Status { return {}; };
  const zc::Outcome outcome = zc::check_rw(bytes.size(), fns, reader(bytes.consumer()));
  ASSERT_NE(zc::failure(outcome), nullptr);
  EXPECT_EQ(zc::failure(outcome)->errc, zc::Errc::not_observed);
  EXPECT_TRUE(bytes.unchanged());
}

// ---- a failing function, mid-way ----

TEST(ZerocopyCheckRw, WriteFailingMidwayIsWriteFailedAndProducerRestored) {
  // Fail each sentinel write in turn (odd calls: the restores are the even
  // ones); the restore that follows puts the original back.
  SharedBytes bytes(8 * kPage);
  ASSERT_TRUE(bytes.ok());
  const std::size_t probed = zc::probe_offsets(bytes.producer(), bytes.size()).size();
  for (std::size_t fail_at = 1; fail_at <= 2 * probed; fail_at += 2) {
    Calls calls;
    calls.fail_write_at = fail_at;
    const zc::Outcome outcome =
        zc::check_rw(bytes.size(), producer_fns(bytes.producer(), calls), reader(bytes.consumer()));
    const zc::Failure* f = zc::failure(outcome);
    ASSERT_NE(f, nullptr) << "fail_at " << fail_at;
    EXPECT_EQ(f->errc, zc::Errc::write_failed);
    EXPECT_EQ(f->side, zc::Side::producer);
    EXPECT_FALSE(f->restore_failed);
    EXPECT_EQ(f->read_error.code, extmem::errno_code(EIO));
    EXPECT_EQ(zc::to_error(*f).code, extmem::errno_code(EIO));
    EXPECT_EQ(calls.writes, fail_at + 1) << "the failed write is followed by its restore";
    EXPECT_TRUE(bytes.unchanged()) << "fail_at " << fail_at;
  }
}

TEST(ZerocopyCheckRw, FailedRestoreIsReportedWithTheOffsetAndOriginal) {
  SharedBytes bytes(4 * kPage);
  ASSERT_TRUE(bytes.ok());
  Calls calls;
  calls.fail_write_at = 2;  // the restore of the first offset
  const zc::Outcome outcome =
      zc::check_rw(bytes.size(), producer_fns(bytes.producer(), calls), reader(bytes.consumer()));
  const zc::Failure* f = zc::failure(outcome);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->errc, zc::Errc::write_failed);
  EXPECT_TRUE(f->restore_failed);
  EXPECT_EQ(f->offset, 0u);
  EXPECT_EQ(f->original, static_cast<std::uint8_t>(bytes.before()[0]));
  EXPECT_EQ(static_cast<std::uint8_t>(bytes.producer()[0]), f->sentinel) << "the sentinel is still there";
  EXPECT_NE(f->message.find("may still hold"), std::string::npos) << f->message;
  EXPECT_EQ(calls.writes, 2u) << "nothing more is written after a failed restore";
}

TEST(ZerocopyCheckRw, ConsumerReadFailingMidwayLeavesProducerRestored) {
  SharedBytes bytes(8 * kPage);
  ASSERT_TRUE(bytes.ok());
  const std::size_t probed = zc::probe_offsets(bytes.producer(), bytes.size()).size();
  for (std::size_t fail_at = 1; fail_at <= 3 * probed; ++fail_at) {
    Calls calls;
    const zc::Outcome outcome =
        zc::check_rw(bytes.size(), producer_fns(bytes.producer(), calls), reader(bytes.consumer(), nullptr, fail_at));
    const zc::Failure* f = zc::failure(outcome);
    ASSERT_NE(f, nullptr) << "fail_at " << fail_at;
    EXPECT_EQ(f->errc, zc::Errc::read_failed);
    EXPECT_EQ(f->side, zc::Side::consumer);
    EXPECT_FALSE(f->restore_failed);
    EXPECT_TRUE(bytes.unchanged()) << "fail_at " << fail_at;
  }
}

TEST(ZerocopyCheckRw, ConsumerFailureThenFailedRestoreKeepsTheFirstError) {
  SharedBytes bytes(4 * kPage);
  ASSERT_TRUE(bytes.ok());
  Calls calls;
  calls.fail_write_at = 2;  // the restore after the failing read below
  const zc::Outcome outcome =
      zc::check_rw(bytes.size(), producer_fns(bytes.producer(), calls), reader(bytes.consumer(), nullptr, 2));
  const zc::Failure* f = zc::failure(outcome);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->errc, zc::Errc::read_failed);
  EXPECT_EQ(f->side, zc::Side::consumer);
  EXPECT_TRUE(f->restore_failed);
  EXPECT_NE(f->message.find("restoring the original"), std::string::npos) << f->message;
}

TEST(ZerocopyCheckRw, ProducerReadFailingWritesNothing) {
  SharedBytes bytes(4 * kPage);
  ASSERT_TRUE(bytes.ok());
  Calls calls;
  zc::ProducerFns fns = producer_fns(bytes.producer(), calls);
  fns.read = reader(bytes.producer(), nullptr, 1);
  const zc::Outcome outcome = zc::check_rw(bytes.size(), fns, reader(bytes.consumer()));
  const zc::Failure* f = zc::failure(outcome);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->errc, zc::Errc::read_failed);
  EXPECT_EQ(f->side, zc::Side::producer);
  EXPECT_NE(f->message.find("the producer's read function"), std::string::npos) << f->message;
  EXPECT_EQ(calls.writes, 0u);
  EXPECT_TRUE(bytes.unchanged());
}

TEST(ZerocopyCheckRw, ThrowingWriteFunctionIsWriteFailedAndProducerRestored) {
  SharedBytes bytes(4 * kPage);
  ASSERT_TRUE(bytes.ok());
  Calls calls;
  zc::ProducerFns fns = producer_fns(bytes.producer(), calls);
  const zc::WriteFn inner = fns.write;
  std::size_t n = 0;
  fns.write = [&](std::size_t offset, std::span<const std::byte> in) -> extmem::Status {
    if (++n == 3) {  // the second offset's sentinel, after it landed
      (void)inner(offset, in);
      throw std::runtime_error("device lost");
    }
    return inner(offset, in);
  };
  const zc::Outcome outcome = zc::check_rw(bytes.size(), fns, reader(bytes.consumer()));
  const zc::Failure* f = zc::failure(outcome);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->errc, zc::Errc::write_failed);
  EXPECT_EQ(f->read_error.detail, "device lost");
  EXPECT_TRUE(bytes.unchanged()) << "the sentinel that landed before the throw was restored";
}

// ---- arguments ----

TEST(ZerocopyCheckRw, EmptyViewAndEmptyFunctions) {
  SharedBytes bytes(kPage);
  ASSERT_TRUE(bytes.ok());
  Calls calls;
  const zc::ProducerFns fns = producer_fns(bytes.producer(), calls);

  const zc::Outcome empty = zc::check_rw(0, fns, reader(bytes.consumer()));
  ASSERT_NE(zc::failure(empty), nullptr);
  EXPECT_EQ(zc::failure(empty)->errc, zc::Errc::empty_producer);

  const zc::Outcome no_consumer = zc::check_rw(bytes.size(), fns, zc::ReadFn{});
  ASSERT_NE(zc::failure(no_consumer), nullptr);
  EXPECT_EQ(zc::failure(no_consumer)->errc, zc::Errc::read_failed);
  EXPECT_EQ(zc::failure(no_consumer)->side, zc::Side::consumer);

  zc::ProducerFns no_read = fns;
  no_read.read = nullptr;
  const zc::Outcome a = zc::check_rw(bytes.size(), no_read, reader(bytes.consumer()));
  ASSERT_NE(zc::failure(a), nullptr);
  EXPECT_EQ(zc::failure(a)->errc, zc::Errc::read_failed);
  EXPECT_EQ(zc::failure(a)->side, zc::Side::producer);

  zc::ProducerFns no_write = fns;
  no_write.write = nullptr;
  const zc::Outcome b = zc::check_rw(bytes.size(), no_write, reader(bytes.consumer()));
  ASSERT_NE(zc::failure(b), nullptr);
  EXPECT_EQ(zc::failure(b)->errc, zc::Errc::write_failed);

  EXPECT_EQ(calls.reads + calls.writes, 0u);
  EXPECT_TRUE(bytes.unchanged());
  EXPECT_STREQ(zc::to_string(zc::Errc::write_failed), "write_failed");
}

}  // namespace
