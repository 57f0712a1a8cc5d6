// Fuzzes what extmem probe serve reads from a driving peer (src/probe/serve/serve_read.h):
// the hello, the frames between jobs (jobs, abandons) on a session that carries
// fds and on one that does not (tcp:), the frames while a half runs, and a route
// connection's route hello, with and without an fd. The first byte picks the frame
// type and whether a socket rides it, the second the session's state and kind; the
// rest is the payload.
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>

#include "probe/job_codec.h"
#include "probe/routes.h"
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
  switch (data[1] % 4) {
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
      const bool carries_fds = (data[1] & 0x40) == 0;
      auto r = probe::read_between_jobs(frame, served, std::uint64_t{1} << 20, carries_fds);
      // An accepted job is for the served half, within the size, and encodes as a job again;
      // without fds, its row passes none.
      if (const auto* in = std::get_if<probe::Incoming>(&r); in != nullptr && in->job) {
        if (in->job->role != served || in->job->layout.size > (1 << 20)) __builtin_trap();
        if (!probe::decode_job(probe::encode_job(*in->job))) __builtin_trap();
        if (!carries_fds && probe::find_route(in->job->row)->passes_fds) __builtin_trap();
      }
      break;
    }
    case 2: {
      // Accepted only when it names exactly this session.
      const std::string run_id = "0123456789abcdef", token = "00112233445566778899aabbccddeeff";
      if (!probe::read_route_hello(frame, run_id, token)) {
        auto hello = probe::decode_route_hello(frame.payload);
        if (!hello || hello->run_id != run_id || hello->token != token) __builtin_trap();
      }
      break;
    }
    default:
      (void)probe::read_mid_route(frame);
  }
  return 0;
}
