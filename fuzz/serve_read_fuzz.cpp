// Fuzzes what extmem probe serve reads from a driving peer (src/probe/serve/serve_read.h):
// the hello, the frames between jobs (jobs, abandons) and the frames while a half
// runs, with and without an fd. The first byte picks the frame type and whether a
// socket rides it, the second the session's state; the rest is the payload.
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>

#include "probe/job_codec.h"
#include "probe/serve/serve_read.h"

namespace probe = extmem::probe;
namespace os = extmem::os;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  os::Frame frame;
  frame.type = static_cast<os::MsgType>(1 + data[0] % 10);
  frame.payload.assign(reinterpret_cast<const char*>(data + 2), size - 2);
  int pair[2] = {-1, -1};
  if ((data[0] & 0x80) != 0 && ::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) == 0) {
    frame.fd.reset(pair[0]);
    ::close(pair[1]);
  }
  switch (data[1] % 3) {
    case 0: {
      auto r = probe::read_hello(frame);
      // An accepted hello re-encodes to one the server accepts again.
      if (const auto* h = std::get_if<probe::Hello>(&r)) {
        os::Frame again;
        again.type = os::MsgType::request;
        again.payload = probe::encode_hello(*h);
        if (!std::holds_alternative<probe::Hello>(probe::read_hello(again))) __builtin_trap();
      }
      break;
    }
    case 1: {
      const auto served = (data[1] & 0x80) != 0 ? probe::Role::client : probe::Role::server;
      auto r = probe::read_between_jobs(frame, served, std::uint64_t{1} << 20);
      // An accepted job is for the served half, within the size, and encodes as a job again.
      if (const auto* in = std::get_if<probe::Incoming>(&r); in != nullptr && in->job) {
        if (in->job->role != served || in->job->layout.size > (1 << 20)) __builtin_trap();
        if (!probe::decode_job(probe::encode_job(*in->job))) __builtin_trap();
      }
      break;
    }
    default:
      (void)probe::read_mid_route(frame);
  }
  return 0;
}
