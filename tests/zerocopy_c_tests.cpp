// Tests of the C interface (extmem/core/zerocopy_c.h), written the way a C
// caller uses it: plain pointers, lengths, callbacks with a user pointer.
#include "extmem/core/zerocopy_c.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr size_t kPage = 4096;

// Two MAP_SHARED mappings of one memfd, released with the fixture.
class ZerocopyCTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fd_ = memfd_create("zerocopy_c_tests", MFD_CLOEXEC);
    ASSERT_GE(fd_, 0);
    ASSERT_EQ(ftruncate(fd_, static_cast<off_t>(kSize)), 0);
    a_ = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    b_ = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    ASSERT_NE(a_, MAP_FAILED);
    ASSERT_NE(b_, MAP_FAILED);
    auto* bytes = static_cast<unsigned char*>(a_);
    for (size_t i = 0; i < kSize; ++i) bytes[i] = static_cast<unsigned char>(i * 37 + i / kPage);
    before_.assign(bytes, bytes + kSize);
  }
  void TearDown() override {
    if (a_ != MAP_FAILED) munmap(a_, kSize);
    if (b_ != MAP_FAILED) munmap(b_, kSize);
    if (fd_ >= 0) close(fd_);
  }
  bool producer_unchanged() const { return std::memcmp(a_, before_.data(), kSize) == 0; }

  static constexpr size_t kSize = 8 * kPage;
  int fd_ = -1;
  void* a_ = MAP_FAILED;
  void* b_ = MAP_FAILED;
  std::vector<unsigned char> before_;
};

struct ReaderState {
  const unsigned char* consumer;
  int calls;
  int fail_at;       // 0: never fail
  int64_t fail_with;  // returned on the failing call
};

int64_t read_consumer(void* user, size_t offset, void* out, size_t len) {
  auto* state = static_cast<ReaderState*>(user);
  if (++state->calls == state->fail_at) return state->fail_with;
  const volatile unsigned char* from = state->consumer + offset;
  auto* to = static_cast<unsigned char*>(out);
  for (size_t i = 0; i < len; ++i) to[i] = from[i];
  return static_cast<int64_t>(len);
}

TEST_F(ZerocopyCTest, DefaultsMatchTheCppOptions) {
  extmem_zc_options options;
  extmem_zc_options_init(&options);
  EXPECT_EQ(options.seed, 0x6578746d656dULL);
  EXPECT_EQ(options.random_offsets, 8u);
  EXPECT_EQ(options.boundary_pages, 2u);
}

// random_offsets / boundary_pages beyond their documented maxima: INVALID_ARGUMENT naming the
// field, nothing probed (not internal_error from reserving that many offsets), at every entry point.
TEST_F(ZerocopyCTest, OptionsBeyondTheMaximaAreInvalidArgument) {
  extmem_zc_options options;
  extmem_zc_options_init(&options);
  options.random_offsets = EXTMEM_ZC_MAX_RANDOM_OFFSETS;
  extmem_zc_result result;
  EXPECT_EQ(extmem_zc_check(a_, kSize, b_, kSize, &options, &result), EXTMEM_ZC_PASS) << result.message;
  for (size_t bad : {EXTMEM_ZC_MAX_RANDOM_OFFSETS + 1, static_cast<size_t>(1000000000), SIZE_MAX}) {
    options.random_offsets = bad;
    EXPECT_EQ(extmem_zc_check(a_, kSize, b_, kSize, &options, &result), EXTMEM_ZC_INVALID_ARGUMENT);
    EXPECT_NE(std::strstr(result.message, "random_offsets"), nullptr) << result.message;
    EXPECT_NE(std::strstr(result.message, "1048576"), nullptr) << result.message;
    ReaderState state{static_cast<const unsigned char*>(b_), 0, 0, 0};
    EXPECT_EQ(extmem_zc_check_fn(a_, kSize, read_consumer, &state, &options, &result), EXTMEM_ZC_INVALID_ARGUMENT);
    EXPECT_EQ(state.calls, 0);
  }
  extmem_zc_options_init(&options);
  options.boundary_pages = EXTMEM_ZC_MAX_BOUNDARY_PAGES + 1;
  EXPECT_EQ(extmem_zc_check(a_, kSize, b_, kSize, &options, &result), EXTMEM_ZC_INVALID_ARGUMENT);
  EXPECT_NE(std::strstr(result.message, "boundary_pages"), nullptr) << result.message;
  options.boundary_pages = SIZE_MAX;
  EXPECT_EQ(extmem_zc_check(a_, kSize, b_, kSize, &options, &result), EXTMEM_ZC_INVALID_ARGUMENT);
  EXPECT_TRUE(producer_unchanged());
}

TEST_F(ZerocopyCTest, TwoSharedMappingsPass) {
  extmem_zc_result result;
  EXPECT_EQ(extmem_zc_check(a_, kSize, b_, kSize, nullptr, &result), EXTMEM_ZC_PASS);
  EXPECT_EQ(result.status, EXTMEM_ZC_PASS);
  EXPECT_GT(result.offsets_probed, 10u);
  EXPECT_STREQ(result.message, "");
  EXPECT_TRUE(producer_unchanged());
}

TEST_F(ZerocopyCTest, NullResultIsAllowed) {
  EXPECT_EQ(extmem_zc_check(a_, kSize, b_, kSize, nullptr, nullptr), EXTMEM_ZC_PASS);
}

TEST_F(ZerocopyCTest, CopyFailsNamingOffsetAndValues) {
  std::vector<unsigned char> copy(static_cast<unsigned char*>(a_), static_cast<unsigned char*>(a_) + kSize);
  extmem_zc_options options;
  extmem_zc_options_init(&options);
  extmem_zc_result result;
  EXPECT_EQ(extmem_zc_check(a_, kSize, copy.data(), copy.size(), &options, &result), EXTMEM_ZC_NOT_OBSERVED);
  EXPECT_EQ(result.offset, 0u);
  EXPECT_EQ(result.original, before_[0]);
  EXPECT_EQ(result.seen, before_[0]);
  EXPECT_EQ(result.written, result.sentinel);
  EXPECT_NE(result.written, result.seen);
  EXPECT_EQ(result.restore_missed, 0);
  EXPECT_NE(std::string(result.message).find("consumer holds a copy or stale snapshot"), std::string::npos);
  EXPECT_TRUE(producer_unchanged());
}

TEST_F(ZerocopyCTest, ErrorKinds) {
  extmem_zc_result result;
  EXPECT_EQ(extmem_zc_check(a_, 0, b_, kSize, nullptr, &result), EXTMEM_ZC_EMPTY_PRODUCER);
  EXPECT_EQ(extmem_zc_check(a_, kSize, b_, kSize - 1, nullptr, &result), EXTMEM_ZC_CONSUMER_TOO_SHORT);
  EXPECT_EQ(result.status, EXTMEM_ZC_CONSUMER_TOO_SHORT);
  EXPECT_NE(result.message[0], '\0');
  EXPECT_EQ(extmem_zc_check(nullptr, kSize, b_, kSize, nullptr, &result), EXTMEM_ZC_INVALID_ARGUMENT);
  EXPECT_EQ(extmem_zc_check(a_, kSize, nullptr, kSize, nullptr, &result), EXTMEM_ZC_INVALID_ARGUMENT);
  EXPECT_EQ(extmem_zc_check_fn(a_, kSize, nullptr, nullptr, nullptr, &result), EXTMEM_ZC_INVALID_ARGUMENT);
  EXPECT_TRUE(producer_unchanged());
}

TEST_F(ZerocopyCTest, CheckFnPassesThroughASharedMapping) {
  ReaderState state{static_cast<const unsigned char*>(b_), 0, 0, 0};
  extmem_zc_result result;
  EXPECT_EQ(extmem_zc_check_fn(a_, kSize, read_consumer, &state, nullptr, &result), EXTMEM_ZC_PASS);
  EXPECT_GE(static_cast<size_t>(state.calls), 2 * result.offsets_probed);
  EXPECT_TRUE(producer_unchanged());
}

TEST_F(ZerocopyCTest, CheckFnOnACopyFails) {
  std::vector<unsigned char> copy(before_);
  ReaderState state{copy.data(), 0, 0, 0};
  extmem_zc_result result;
  EXPECT_EQ(extmem_zc_check_fn(a_, kSize, read_consumer, &state, nullptr, &result), EXTMEM_ZC_NOT_OBSERVED);
  EXPECT_EQ(result.offset, 0u);
  EXPECT_TRUE(producer_unchanged());
}

TEST_F(ZerocopyCTest, FailingReadFunctionReportsItsErrno) {
  ReaderState state{static_cast<const unsigned char*>(b_), 0, 2, -EIO};  // fails right after the first sentinel
  extmem_zc_result result;
  EXPECT_EQ(extmem_zc_check_fn(a_, kSize, read_consumer, &state, nullptr, &result), EXTMEM_ZC_READ_FAILED);
  EXPECT_EQ(result.read_errno, EIO);
  EXPECT_NE(std::string(result.message).find("EIO"), std::string::npos) << result.message;
  EXPECT_TRUE(producer_unchanged());
}

TEST_F(ZerocopyCTest, ShortReadFunction) {
  ReaderState state{static_cast<const unsigned char*>(b_), 0, 2, 0};  // 0 bytes on the second call
  extmem_zc_result result;
  EXPECT_EQ(extmem_zc_check_fn(a_, kSize, read_consumer, &state, nullptr, &result), EXTMEM_ZC_SHORT_READ);
  EXPECT_TRUE(producer_unchanged());
}

TEST_F(ZerocopyCTest, StatusNames) {
  EXPECT_STREQ(extmem_zc_status_name(EXTMEM_ZC_PASS), "pass");
  EXPECT_STREQ(extmem_zc_status_name(EXTMEM_ZC_EMPTY_PRODUCER), "empty_producer");
  EXPECT_STREQ(extmem_zc_status_name(EXTMEM_ZC_CONSUMER_TOO_SHORT), "consumer_too_short");
  EXPECT_STREQ(extmem_zc_status_name(EXTMEM_ZC_SHORT_READ), "short_read");
  EXPECT_STREQ(extmem_zc_status_name(EXTMEM_ZC_READ_FAILED), "read_failed");
  EXPECT_STREQ(extmem_zc_status_name(EXTMEM_ZC_NOT_OBSERVED), "not_observed");
  EXPECT_STREQ(extmem_zc_status_name(EXTMEM_ZC_WRITE_FAILED), "write_failed");
  EXPECT_STREQ(extmem_zc_status_name(EXTMEM_ZC_INVALID_ARGUMENT), "invalid_argument");
  EXPECT_STREQ(extmem_zc_status_name(EXTMEM_ZC_INTERNAL_ERROR), "internal_error");
  EXPECT_STREQ(extmem_zc_status_name(static_cast<extmem_zc_status>(99)), "unknown");
}

// ---- extmem_zc_check_rw: the producer behind functions too, one user pointer ----

struct RwState {
  unsigned char* producer;
  const unsigned char* consumer;
  int writes;
  int write_fail_at;  // 0: never fail
  int consumer_reads;
  int consumer_fail_at;
  int producer_fail;  // 1: the producer's read function fails
};

int64_t rw_read_producer(void* user, size_t offset, void* out, size_t len) {
  auto* state = static_cast<RwState*>(user);
  if (state->producer_fail) return -ENODEV;
  std::memcpy(out, state->producer + offset, len);
  return static_cast<int64_t>(len);
}

int rw_write_producer(void* user, size_t offset, const void* in, size_t len) {
  auto* state = static_cast<RwState*>(user);
  if (++state->writes == state->write_fail_at) return -EIO;
  volatile unsigned char* to = state->producer + offset;
  const auto* from = static_cast<const unsigned char*>(in);
  for (size_t i = 0; i < len; ++i) to[i] = from[i];
  return 0;
}

int64_t rw_read_consumer(void* user, size_t offset, void* out, size_t len) {
  auto* state = static_cast<RwState*>(user);
  if (++state->consumer_reads == state->consumer_fail_at) return -ETIMEDOUT;
  const volatile unsigned char* from = state->consumer + offset;
  auto* to = static_cast<unsigned char*>(out);
  for (size_t i = 0; i < len; ++i) to[i] = from[i];
  return static_cast<int64_t>(len);
}

TEST_F(ZerocopyCTest, CheckRwPassesThroughASharedMapping) {
  RwState state{static_cast<unsigned char*>(a_), static_cast<const unsigned char*>(b_), 0, 0, 0, 0, 0};
  extmem_zc_rw_result result;
  EXPECT_EQ(extmem_zc_check_rw(kSize, reinterpret_cast<uintptr_t>(a_), rw_read_producer, rw_write_producer,
                               rw_read_consumer, &state, nullptr, &result),
            EXTMEM_ZC_PASS);
  EXPECT_EQ(result.base.status, EXTMEM_ZC_PASS);
  EXPECT_GT(result.base.offsets_probed, 10u);
  EXPECT_EQ(static_cast<size_t>(state.writes), 2 * result.base.offsets_probed);
  EXPECT_EQ(result.failed_side, EXTMEM_ZC_SIDE_NONE);
  EXPECT_TRUE(producer_unchanged());
}

TEST_F(ZerocopyCTest, CheckRwOnACopyIsNotObserved) {
  std::vector<unsigned char> copy(before_);
  RwState state{static_cast<unsigned char*>(a_), copy.data(), 0, 0, 0, 0, 0};
  extmem_zc_rw_result result;
  EXPECT_EQ(extmem_zc_check_rw(kSize, 0, rw_read_producer, rw_write_producer, rw_read_consumer, &state, nullptr,
                               &result),
            EXTMEM_ZC_NOT_OBSERVED);
  EXPECT_EQ(result.base.offset, 0u);
  EXPECT_EQ(result.base.seen, before_[0]);
  EXPECT_EQ(result.base.written, result.base.sentinel);
  EXPECT_EQ(result.restore_failed, 0);
  EXPECT_NE(std::string(result.base.message).find("consumer holds a copy"), std::string::npos);
  EXPECT_TRUE(producer_unchanged());
}

TEST_F(ZerocopyCTest, CheckRwWriteFailingMidwayReportsItsErrnoAndRestores) {
  RwState state{static_cast<unsigned char*>(a_), static_cast<const unsigned char*>(b_), 0, 5, 0, 0, 0};
  extmem_zc_rw_result result;
  EXPECT_EQ(extmem_zc_check_rw(kSize, 0, rw_read_producer, rw_write_producer, rw_read_consumer, &state, nullptr,
                               &result),
            EXTMEM_ZC_WRITE_FAILED);  // the third offset's sentinel
  EXPECT_EQ(result.failed_side, EXTMEM_ZC_SIDE_PRODUCER);
  EXPECT_EQ(result.write_errno, EIO);
  EXPECT_EQ(result.restore_failed, 0);
  EXPECT_NE(std::string(result.base.message).find("EIO"), std::string::npos) << result.base.message;
  EXPECT_TRUE(producer_unchanged());
}

TEST_F(ZerocopyCTest, CheckRwFailedRestoreIsReported) {
  RwState state{static_cast<unsigned char*>(a_), static_cast<const unsigned char*>(b_), 0, 2, 0, 0, 0};
  extmem_zc_rw_result result;
  EXPECT_EQ(extmem_zc_check_rw(kSize, 0, rw_read_producer, rw_write_producer, rw_read_consumer, &state, nullptr,
                               &result),
            EXTMEM_ZC_WRITE_FAILED);
  EXPECT_EQ(result.restore_failed, 1);
  EXPECT_EQ(result.base.offset, 0u);
  EXPECT_EQ(result.base.original, before_[0]);
  EXPECT_EQ(static_cast<unsigned char*>(a_)[0], result.base.sentinel);
}

TEST_F(ZerocopyCTest, CheckRwReadErrnoComesFromTheFailingSide) {
  RwState consumer_fails{static_cast<unsigned char*>(a_), static_cast<const unsigned char*>(b_), 0, 0, 0, 2, 0};
  extmem_zc_rw_result result;
  EXPECT_EQ(extmem_zc_check_rw(kSize, 0, rw_read_producer, rw_write_producer, rw_read_consumer, &consumer_fails,
                               nullptr, &result),
            EXTMEM_ZC_READ_FAILED);
  EXPECT_EQ(result.failed_side, EXTMEM_ZC_SIDE_CONSUMER);
  EXPECT_EQ(result.base.read_errno, ETIMEDOUT);
  EXPECT_TRUE(producer_unchanged());

  RwState producer_fails{static_cast<unsigned char*>(a_), static_cast<const unsigned char*>(b_), 0, 0, 0, 0, 1};
  EXPECT_EQ(extmem_zc_check_rw(kSize, 0, rw_read_producer, rw_write_producer, rw_read_consumer, &producer_fails,
                               nullptr, &result),
            EXTMEM_ZC_READ_FAILED);
  EXPECT_EQ(result.failed_side, EXTMEM_ZC_SIDE_PRODUCER);
  EXPECT_EQ(result.base.read_errno, ENODEV);
  EXPECT_EQ(producer_fails.writes, 0);
}

TEST_F(ZerocopyCTest, CheckRwArguments) {
  RwState state{static_cast<unsigned char*>(a_), static_cast<const unsigned char*>(b_), 0, 0, 0, 0, 0};
  extmem_zc_rw_result result;
  EXPECT_EQ(extmem_zc_check_rw(0, 0, rw_read_producer, rw_write_producer, rw_read_consumer, &state, nullptr, &result),
            EXTMEM_ZC_EMPTY_PRODUCER);
  EXPECT_EQ(extmem_zc_check_rw(kSize, 0, nullptr, rw_write_producer, rw_read_consumer, &state, nullptr, &result),
            EXTMEM_ZC_INVALID_ARGUMENT);
  EXPECT_EQ(extmem_zc_check_rw(kSize, 0, rw_read_producer, nullptr, rw_read_consumer, &state, nullptr, &result),
            EXTMEM_ZC_INVALID_ARGUMENT);
  EXPECT_EQ(extmem_zc_check_rw(kSize, 0, rw_read_producer, rw_write_producer, nullptr, &state, nullptr, &result),
            EXTMEM_ZC_INVALID_ARGUMENT);
  EXPECT_NE(result.base.message[0], '\0');
  EXPECT_EQ(extmem_zc_check_rw(kSize, 0, rw_read_producer, rw_write_producer, rw_read_consumer, &state, nullptr,
                               nullptr),
            EXTMEM_ZC_PASS);
  EXPECT_GT(state.writes, 0);
  EXPECT_TRUE(producer_unchanged());
}

}  // namespace
