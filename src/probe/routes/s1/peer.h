// What the S1 routes share (docs/probe.md, "S1"): the producer/consumer
// conversation over the peer socket (hold, release, drain, done; each request
// answered within a bound), the seeds of the data, the proof's bounds, and how
// a proof outcome becomes the "order" leg and the row's detail.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "extmem/core/verdict.h"
#include "extmem/os/fd.h"
#include "probe/routes/s1/codec.h"
#include "probe/sync_proof.h"
#include "probe/worker/child_context.h"
#include "probe/worker/route_util.h"
#include "probe/routes.h"

namespace extmem::probe::s1 {

/// Test-only (EXTMEM_TEST_FAULT): the Vulkan producer answers a release without signalling.
inline constexpr FaultDef kNoSignalFault{"nosignal", Role::server, "release",
                                         "the producer answers without signalling: the row must FAIL at the wait "
                                         "for the consumer's copy after the signal (a timeout within its bounds)"};
/// Test-only: the Vulkan consumer submits its copy without the semaphore wait.
inline constexpr FaultDef kNoWaitFault{"nowait", Role::client, "consumer submits",
                                       "the copy is submitted without the semaphore wait: the row must FAIL at "
                                       "the check that the consumer's copy has not landed (landed-before-signal)"};

/// The pattern in the shared region before the producer's GPU write: a copy
/// that ran early holds this, never the producer's data.
inline constexpr std::uint64_t kStaleSeed = 0x5331'5354'414c'4500ull;
/// The producer's data, written into the region by its GPU (or GL, or CUDA) after release.
inline constexpr std::uint64_t kProducerSeed = 0x5331'5052'4f44'0000ull;

/// How long the consumer waits for one reply of the producer, in ms: every
/// socket wait of the S1 routes is bounded.
inline constexpr int kReplyTimeoutMs = 10'000;

/// A consumer's copy of region E (`copy`: kRegionSize bytes) checked against
/// the producer's data (kProducerSeed): what OrderingSubject::check_copy returns.
sync::CopyCheck check_producer_copy(const void* copy);

/// Asks the producer (the peer) to release its held signal: OrderingSubject::release
/// for consumers in this process. Errors: ask()'s.
Status release_producer(const ChildContext& ctx);

/// The proof's bounds: the hold rule's defaults (sync::HoldRule), 5 s for the copy to land.
sync::ProofConfig proof_config();

/// prove_ordering's StepSink: `user` is the ChildContext; reports each step to the parent.
void step_sink(void* user, std::string_view step);

/// Sends `req` to the producer and waits at most kReplyTimeoutMs for its frame;
/// the fd that came with it (if any) goes to `*fd` when `fd` is set. Errors:
/// the channel's (timeout, peer closed), step "producer's reply to \"OP\": ...";
/// protocol for a frame that is not a reply.
Result<os::Frame> exchange(const ChildContext& ctx, const Request& req, os::UniqueFd* fd);
/// The same for a request of another family that is answered as an S1 producer
/// answers (cuda/handover_codec.h): `payload` is the encoded request, `op` its op.
Result<os::Frame> exchange(const ChildContext& ctx, std::string_view op, const std::string& payload, os::UniqueFd* fd);

/// `req`'s reply, typed (s1/codec.h). Errors: exchange()'s; the producer's
/// refusal with its step, code and text (kind unsupported when the producer
/// found the capability not advertised, "server: ..." in the detail, else
/// driver); protocol for a reply decode_reply refuses.
template <class Req>
Result<typename Req::Reply> ask(const ChildContext& ctx, const Req& req, os::UniqueFd* fd = nullptr) {
  auto frame = exchange(ctx, Request{req}, fd);
  if (!frame) return std::move(frame).error();
  auto r = decode_reply<typename Req::Reply>(frame->payload);
  if (r || r.error().kind != ErrorKind::protocol) return r;
  Error e = r.error();
  e.step = std::string("producer's reply to \"") + op_of(Request{req}) + "\": " + e.step;
  return e;
}

/// An error reply's Error for a site failure: kind unsupported when `site` says
/// so, its text in the detail.
Error site_error(const Error& e, const SiteFailure& site);

/// The "order" leg from a proof: attempted; write_ok when the wait held (the
/// copy had not landed and the no-signal control timed out); read_ok when the
/// copy then held exactly the producer's data; the failing step and code otherwise.
/// The calibrated hold, when there was one, joins `facts.sync_holds` under the leg's name.
void record_proof(const sync::ProofOutcome& o, Leg& order, RouteFacts& facts);

/// "order=ordered control=VK_TIMEOUT held=20ms(ungated 412us x20, floor 20ms) counter=1"
/// or the failure, for the row's detail; "held=notrun" when the calibration failed,
/// and "over-ceiling(wanted Nms)" when the hold was capped.
std::string proof_detail(const sync::ProofOutcome& o, bool timeline, std::uint64_t last_counter);

}  // namespace extmem::probe::s1
