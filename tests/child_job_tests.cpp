// A fresh route half (`extmem probe --child`) takes its parameters only from
// the job message on its report socket (include/extmem/probe/worker.h): a
// malformed job, a job for another half, or no job at all is a usage exit (2)
// before any driver loads, never a crash or a half run with guessed parameters.
#include <gtest/gtest.h>

#include <string>

#include "extmem/os/child.h"
#include "extmem/os/ipc.h"
#include "probe/job_codec.h"

namespace {

using extmem::os::Channel;
using extmem::os::ChildProcess;
using extmem::os::MsgType;
using extmem::probe::HalfParams;

constexpr const char* kRow = "T3-memfd-cross-process";

// Starts the server half of kRow with fresh sockets, sends `job` unless it is
// empty (then closes the report socket), and returns how the child ended.
extmem::os::ExitInfo run_with_job(const std::string& job, const std::string& role_label = "server") {
  auto peer = Channel::pair();
  auto report = Channel::pair();
  EXPECT_TRUE(peer && report);
  auto child = ChildProcess::spawn(EXTMEM_BINARY,
                                   {EXTMEM_BINARY, "probe", std::string("--child=") + kRow, "--role=" + role_label},
                                   {peer->second.fd(), report->second.fd()});
  EXPECT_TRUE(child.ok()) << child.error().message();
  if (!child) return {};
  peer->second.owned_fd().reset();
  report->second.owned_fd().reset();
  if (job.empty()) report->first.owned_fd().reset();
  else EXPECT_TRUE(report->first.send(MsgType::job, job).ok());
  auto info = child->wait(20000);
  EXPECT_TRUE(info.ok());
  return info ? *info : child->kill_and_reap();
}

HalfParams server_half() {
  HalfParams p;
  p.row = kRow;
  return p;
}

TEST(FreshChildJob, MalformedJobIsAUsageExit) {
  const auto end = run_with_job(R"({"row": "T3-memfd-cross-process", "role": "server"})");
  EXPECT_TRUE(end.exited);
  EXPECT_EQ(end.code, 2);
}

TEST(FreshChildJob, JobForTheOtherHalfIsAUsageExit) {
  const auto end = run_with_job(extmem::probe::encode_job(server_half()), "client");
  EXPECT_TRUE(end.exited);
  EXPECT_EQ(end.code, 2);
}

TEST(FreshChildJob, NoJobIsAUsageExit) {
  const auto end = run_with_job("");
  EXPECT_TRUE(end.exited);
  EXPECT_EQ(end.code, 2);
}

}  // namespace
