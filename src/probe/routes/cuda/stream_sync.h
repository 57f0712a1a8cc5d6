// What the CUDA consumers of the ordering proofs share (probe/sync_proof.h):
// a bounded wait on a stream, the copy-out of region E with its marker after
// the wait, and the observation of both. Used by S1-cuda-semaphore (an
// external semaphore wait) and T1-cuda-ipc's ipcevent leg (an interprocess
// event wait); docs/probe.md, "S1" and "T1-cuda-ipc".
#pragma once

#include <chrono>

#include "cuda/api.h"
#include "extmem/core/error.h"
#include "probe/sync_proof.h"

namespace extmem::probe::cuda_sync {

/// Polls cuStreamQuery(`stream`) every millisecond for at most `bound` (CUDA
/// has no bounded stream wait): signalled on CUDA_SUCCESS, timed_out (code
/// "CUDA_ERROR_NOT_READY") when the bound passes. Errors: any other CUresult
/// of cuStreamQuery, verbatim.
Result<sync::Waited> poll_stream(const cuda::Api& api, CUstream stream, std::chrono::milliseconds bound);

/// Queues on `stream` the copies of the consumer's proof: kRegionSize bytes of
/// region E at device address `region` into pinned `host` (offset 0), then the
/// 4-byte marker at `marker` into `host` + kRegionSize. `host` must hold
/// kRegionSize + 4 bytes and stay valid until the stream has drained. Errors:
/// the failing cuMemcpyDtoHAsync, verbatim.
Status copy_out_with_marker(const cuda::Api& api, CUstream stream, void* host, CUdeviceptr region,
                            CUdeviceptr marker);

/// Whether the queued copies have run (cuStreamQuery) and whether the marker
/// (s1::kMarker) is in `host` + kRegionSize. No counter: CUDA reads none for
/// events or external semaphores. Errors: cuStreamQuery other than
/// CUDA_SUCCESS / CUDA_ERROR_NOT_READY.
Result<sync::Observation> observe(const cuda::Api& api, CUstream stream, const void* host);

}  // namespace extmem::probe::cuda_sync
