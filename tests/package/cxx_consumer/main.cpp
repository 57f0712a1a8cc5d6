// A C++ program built from an installed extmem (find_package): the zerocopy
// check on two maps of one memfd and on a private copy, and reclaim's
// DeferredReleaseList parking a store until its submission retires. Exit 0
// when every answer is right, 1 otherwise (the reason on stderr).
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <vector>

#include <extmem/core/zerocopy.h>
#include <extmem/reclaim/deferred_list.h>

namespace {

// Submissions retire when the test says so.
class ManualTracker final : public extmem::reclaim::SubmitTracker {
 public:
  extmem::reclaim::SubmitIndex sync_point() const override { return submitted; }
  bool is_complete(extmem::reclaim::SubmitIndex index) override { return index <= completed; }
  extmem::Status flush_and_wait(extmem::reclaim::SubmitIndex index) override {
    completed = index;
    return {};
  }
  extmem::reclaim::SubmitIndex submitted{1}, completed{0};
};

int fail(const char* what) {
  std::fprintf(stderr, "cxx_consumer: %s\n", what);
  return 1;
}

}  // namespace

int main() {
  const std::size_t size = 4 * 4096;
  const int fd = memfd_create("extmem-cxx-consumer", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0) return fail("memfd");
  void* a = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  void* b = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (a == MAP_FAILED || b == MAP_FAILED) return fail("mmap");
  std::memset(a, 0x33, size);
  std::vector<std::byte> copy(size);
  std::memcpy(copy.data(), a, size);
  std::span<std::byte> producer(static_cast<std::byte*>(a), size);
  if (!extmem::zerocopy::passed(extmem::zerocopy::check(producer, {static_cast<const std::byte*>(b), size})))
    return fail("two maps of one memfd did not pass");
  if (extmem::zerocopy::passed(extmem::zerocopy::check(producer, copy))) return fail("a private copy passed");

  ManualTracker tracker;
  std::vector<extmem::reclaim::StoreToken> destroyed;
  {
    extmem::reclaim::DeferredReleaseList list(tracker, [&](extmem::reclaim::StoreToken s, std::uint64_t) {
      destroyed.push_back(s);
    });
    list.store_created();
    auto r = list.release(7, extmem::reclaim::FrameSerial{1}, 4096);
    if (!r || *r) return fail("a store used by submission 1 was not parked");
    tracker.completed = extmem::reclaim::SubmitIndex{1};
    if (list.sweep() != 1 || destroyed.size() != 1 || destroyed[0] != 7) return fail("the retired store was not destroyed");
  }
  std::printf("cxx_consumer: zerocopy alias pass, copy refused; reclaim parked and destroyed store 7\n");
  munmap(a, size);
  munmap(b, size);
  close(fd);
  return 0;
}
