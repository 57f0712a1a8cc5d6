// Typed errors (include/extmem/core/error.h): the kinds callers branch on, the
// native code kept as a number beside its name, the one mapping from an error
// to a row's facts and status, and the one is_failure.
#include <gtest/gtest.h>

#include <cerrno>

#include "extmem/core/error.h"
#include "extmem/core/verdict.h"
#include "extmem/memtools/commands.h"
#include "extmem/memtools/word_access.h"
#include "vulkan/context.h"
#include "vulkan/dispatch.h"
#include "vulkan/image.h"

namespace {

using extmem::CodeSpace;
using extmem::Error;
using extmem::ErrorKind;
using extmem::RouteFacts;
using extmem::RowStatus;

// The names are an interface (a leg's code falls back to them): the new kinds have their own.
TEST(ErrorKinds, NewKindsHaveStableNames) {
  EXPECT_STREQ(extmem::to_string(ErrorKind::peer_closed), "peer_closed");
  EXPECT_STREQ(extmem::to_string(ErrorKind::no_driver), "no_driver");
}

// os_error keeps errno as a number beside its name; is_errno reads the number, not the text.
TEST(ErrorKinds, OsErrorCarriesTheErrnoNumber) {
  const Error e = extmem::os_error("lseek(SEEK_END)", ESPIPE);
  EXPECT_EQ(e.code, "ESPIPE (29)");
  EXPECT_EQ(e.space, CodeSpace::errno_value);
  EXPECT_EQ(e.native, ESPIPE);
  EXPECT_TRUE(e.is_errno(ESPIPE));
  EXPECT_FALSE(e.is_errno(EBADF));
  // The same words without the number are not that errno: nothing is read from the text.
  EXPECT_FALSE((Error{"lseek", ErrorKind::os, "ESPIPE (29)", ""}.is_errno(ESPIPE)));
  // The same number in another space is not an errno either.
  const Error vk = extmem::vk::vk_error("vkAllocateMemory", VK_ERROR_OUT_OF_HOST_MEMORY);
  EXPECT_EQ(vk.native, -1);
  EXPECT_FALSE(vk.is_errno(-1));
}

// The drivers' errors keep their code's value in their own space.
TEST(ErrorKinds, DriverErrorsCarryTheirNativeCode) {
  const Error vk = extmem::vk::vk_error("vkAllocateMemory", VK_ERROR_OUT_OF_DEVICE_MEMORY);
  EXPECT_EQ(vk.code, "VK_ERROR_OUT_OF_DEVICE_MEMORY");
  EXPECT_EQ(vk.space, CodeSpace::vk_result);
  EXPECT_EQ(vk.native, VK_ERROR_OUT_OF_DEVICE_MEMORY);
  EXPECT_EQ(vk.kind, ErrorKind::driver);
}

// A leg shows the code, or the kind's name without one; the split-off kinds read
// as the kinds they were split from, so rows keep their words.
TEST(ErrorKinds, ShownCodeKeepsTheRowsWords) {
  EXPECT_EQ((Error{"mmap", ErrorKind::os, "EPERM (1)", ""}.shown_code()), "EPERM (1)");
  EXPECT_EQ((Error{"compare", ErrorKind::mismatch, "", ""}.shown_code()), "mismatch");
  EXPECT_EQ((Error{"recv frame", ErrorKind::peer_closed, "", "peer closed the socket"}.shown_code()), "protocol");
  EXPECT_EQ((Error{"dlopen(x)", ErrorKind::no_driver, "", ""}.shown_code()), "unsupported");
}

// The one mapping from an error's kind to a row's status: error.h lists the same.
TEST(ErrorKinds, RowStatusOfEveryKind) {
  EXPECT_EQ(extmem::row_status(ErrorKind::no_driver), RowStatus::skip);
  EXPECT_EQ(extmem::row_status(ErrorKind::unsupported), RowStatus::unsupported);
  for (ErrorKind k : {ErrorKind::invalid_argument, ErrorKind::os, ErrorKind::driver, ErrorKind::mismatch,
                      ErrorKind::protocol, ErrorKind::timeout, ErrorKind::peer_closed})
    EXPECT_EQ(extmem::row_status(k), RowStatus::fail) << extmem::to_string(k);
}

// stop_row puts the reason where decide() gives the row that status, with the reason as why.
TEST(ErrorKinds, StopRowDecidesAsRowStatusSays) {
  for (ErrorKind k : {ErrorKind::invalid_argument, ErrorKind::os, ErrorKind::driver, ErrorKind::unsupported,
                      ErrorKind::mismatch, ErrorKind::protocol, ErrorKind::timeout, ErrorKind::peer_closed,
                      ErrorKind::no_driver}) {
    RouteFacts facts;
    extmem::stop_row(facts, k, "server: why");
    const extmem::Verdict v = extmem::decide(facts, {});
    EXPECT_EQ(v.status, extmem::row_status(k)) << extmem::to_string(k);
    EXPECT_EQ(v.why, "server: why") << extmem::to_string(k);
  }
}

TEST(ErrorKinds, IsFailureAndDidNotRun) {
  EXPECT_FALSE(extmem::is_failure(RowStatus::ok));
  EXPECT_TRUE(extmem::is_failure(RowStatus::partial));
  EXPECT_TRUE(extmem::is_failure(RowStatus::fail));
  EXPECT_FALSE(extmem::is_failure(RowStatus::unsupported));
  EXPECT_FALSE(extmem::is_failure(RowStatus::skip));
  EXPECT_FALSE(extmem::did_not_run(RowStatus::ok));
  EXPECT_FALSE(extmem::did_not_run(RowStatus::partial));
  EXPECT_FALSE(extmem::did_not_run(RowStatus::fail));
  EXPECT_TRUE(extmem::did_not_run(RowStatus::unsupported));
  EXPECT_TRUE(extmem::did_not_run(RowStatus::skip));
}

// memtools' own codes: the name in code, the number in native; exit codes come from the number.
TEST(ErrorKinds, WordCodesChooseExitCodesByNumber) {
  namespace mt = extmem::memtools;
  const Error e = mt::word_error("pwrite", ErrorKind::invalid_argument, mt::WordCode::not_writable, "ro");
  EXPECT_EQ(e.code, mt::kCodeNotWritable);
  EXPECT_EQ(mt::word_code(e), mt::WordCode::not_writable);
  EXPECT_EQ(mt::exit_code_for(e), mt::kExitRefused);
  EXPECT_EQ(mt::exit_code_for(mt::word_error("s", ErrorKind::mismatch, mt::WordCode::expect_mismatch, "")),
            mt::kExitExpectMismatch);
  EXPECT_EQ(mt::exit_code_for(mt::word_error("s", ErrorKind::invalid_argument, mt::WordCode::past_end, "")),
            mt::kExitPastEnd);
  EXPECT_EQ(mt::exit_code_for(extmem::os_error("open /proc/1/mem", EACCES)), mt::kExitPermission);
  EXPECT_EQ(mt::exit_code_for(extmem::os_error("open /proc/9/mem", ESRCH)), mt::kExitNoProcess);
  // The same words without the number are not ours: a usage error, as any other code-less one is not.
  EXPECT_EQ(mt::word_code(Error{"pwrite", ErrorKind::invalid_argument, mt::kCodeNotWritable, ""}), std::nullopt);
  EXPECT_EQ(mt::exit_code_for(Error{"select ranges", ErrorKind::invalid_argument, {}, "nothing"}), mt::kExitUsage);
}

// preferred_flags replaces the callers' retry on the text "choose memory type":
// a flag no type has falls back to required_flags alone; a required one still fails.
TEST(ErrorKinds, ImagePreferredFlagsFallBackWithoutText) {
  auto inst = extmem::vk::Instance::create();
  if (!inst) GTEST_SKIP() << "no Vulkan instance";
  auto dev = extmem::vk::Device::create(*inst, 0, {});
  if (!dev) GTEST_SKIP() << "no Vulkan device";
  extmem::vk::ImageRequest req;
  req.shape.width = req.shape.height = 16;
  req.preferred_flags = VK_MEMORY_PROPERTY_PROTECTED_BIT;  // no type of a device without protected memory
  auto img = extmem::vk::create_image(**dev, req);
  ASSERT_TRUE(img) << img.error().message();
  req.preferred_flags = 0;
  req.required_flags = VK_MEMORY_PROPERTY_PROTECTED_BIT;
  auto none = extmem::vk::create_image(**dev, req);
  if (none) GTEST_SKIP() << "this device has protected memory";
  EXPECT_EQ(none.error().kind, ErrorKind::unsupported);
  EXPECT_EQ(none.error().step, "choose memory type");
}

}  // namespace
