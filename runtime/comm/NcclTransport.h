//===- NcclTransport.h - The cuda target's tensor collectives ---*- C++ -*-===//
//
// Part of meshc. Internal to the cuda runtime (built only with the CUDA
// toolkit): the TensorTransport that runs Comm's tensor collectives on NCCL
// (nccl_comm.cpp), and what the cuda target's placement
// (runtime/cuda/device_placement.cpp) needs of it beyond the collectives:
// the watchdog that waits for the device, and the switch that stops it
// recording events while a forward step is captured as a CUDA graph. The
// NCCL types stay inside nccl_comm.cpp, so that the placement needs neither
// nccl.h nor the transport's state.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_RUNTIME_COMM_NCCLTRANSPORT_H
#define MESHC_RUNTIME_COMM_NCCLTRANSPORT_H

#include "meshc/runtime/comm.h"

#include <cuda_runtime.h>

#include <memory>
#include <string>

namespace meshc::rt {

/// Comm's tensor collectives on NCCL, on a communication stream of their own
/// that overlaps the compute stream (see nccl_comm.cpp).
class NcclTransport : public TensorTransport {
public:
  /// While the stream is being recorded as a graph, collectives record no
  /// events (a recorded event cannot be waited for from the host).
  virtual void setRecording(bool recording) = 0;
  /// Records an event after the work just enqueued on `stream`, so that
  /// drain() can name the first collective (or replayed step, `op`) that
  /// does not complete.
  virtual void enqueued(const std::string &op, cudaStream_t stream) = 0;
  /// Waits for everything enqueued on both streams, within the collective
  /// timeout for each collective; a collective past it, or an NCCL error,
  /// aborts the communicators and stops the job naming the op.
  virtual void drain(const std::string &what) = 0;
  /// Destroys the communicators, the streams' events and the buffers (the
  /// destructor does too; calling it first is harmless).
  virtual void release() = 0;
};

/// The world communicator bootstrapped over `comm` (rank 0's ncclUniqueId
/// sent on its host channel) and the communication stream: collective over
/// the world, once the rank's GPU is picked. Install the result with
/// Comm::setTransport before any group is opened.
std::unique_ptr<NcclTransport> makeNcclTransport(Comm &comm);

} // namespace meshc::rt

#endif // MESHC_RUNTIME_COMM_NCCLTRANSPORT_H
