//===- device_placement.cpp - Tensors on the rank's GPU (cuda target) -----===//
//
// Part of meshc. The cuda target's Placement.h: the arena, the weights and
// the inputs live on the GPU this rank drives (one per rank, picked by the
// node-local rank), kernels are enqueued on its compute stream, and the
// tensor collectives run on NCCL on a second, higher-priority communication
// stream (runtime/comm/nccl_comm.cpp), so that they overlap the kernels
// enqueued between a collective's start and its wait. Waiting for the
// device goes through the transport's watchdog, so that a collective that
// does not complete within --collective-timeout is reported by name and the
// job stops, never hangs.
//
// Repeated forward steps (--repeat) are recorded once as a CUDA graph and
// replayed (unless --no-cuda-graph): kernel launches, copies and NCCL calls
// are captured from the compute stream, which the communication stream
// joins through the events of each start and wait. While recording, the
// watchdog records no events; a replayed step is watched as one, so a
// collective stuck in it is reported as the step, and --no-cuda-graph names
// the collective itself.
//
//===----------------------------------------------------------------------===//
#include "runtime/Placement.h"

#include "meshc/runtime/comm.h"
#include "meshc/runtime/error.h"
#include "runtime/comm/NcclTransport.h"
#include "runtime/cuda/CudaDevice.h"

#include <string>
#include <vector>

namespace meshc::rt::placement {
namespace {

/// Owned, but deliberately not a unique_ptr: a job that stops early (rt::fatal
/// exits) must not tear NCCL down from a static destructor, after the CUDA
/// runtime may have gone; stop() releases it on the normal path.
NcclTransport *transport = nullptr;
std::vector<void *> allocations;
cudaGraphExec_t recorded = nullptr; // the forward step, once recorded

void *keep(void *pointer) {
  allocations.push_back(pointer);
  return pointer;
}

} // namespace

const char *targetName() { return "cuda"; }

void start(Comm &comm) {
  cuda::initDevice(comm.localRank(), comm.localSize());
  transport = makeNcclTransport(comm).release();
  comm.setTransport(transport);
}

void *allocateArena(std::size_t bytes) {
  return keep(cuda::deviceAlloc(bytes, "the activation arena"));
}

const void *placeWeights(const void *mapped, std::size_t bytes) {
  void *placed = keep(cuda::deviceAlloc(bytes, "the weights"));
  cuda::copyToDevice(placed, mapped, bytes);
  return placed;
}

void *placeInput(const void *host, std::size_t bytes) {
  void *placed = keep(cuda::deviceAlloc(bytes, "an input"));
  cuda::copyToDevice(placed, host, bytes);
  return placed;
}

void *allocateBuffer(std::size_t bytes, const char *what) {
  return keep(cuda::deviceAlloc(bytes, what));
}

void upload(void *placed, const void *host, std::size_t bytes) {
  cuda::copyToDevice(placed, host, bytes);
}

void copyPlaced(void *to, const void *from, std::size_t bytes) {
  if (bytes)
    cuda::check(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice,
                                cuda::stream()),
                "copying a KV cache on the GPU");
}

void fetch(void *host, const void *placed, std::size_t bytes) {
  synchronize("fetching an output");
  cuda::copyToHost(host, placed, bytes);
}

void synchronize(const char *what) {
  if (transport)
    transport->drain(what);
  else if (cuda::deviceReady())
    cuda::synchronize(what);
}

bool canRecord() { return true; }

bool record(void (*body)(Program &), Program &program) {
  cudaStream_t stream = cuda::stream();
  cudaError_t status =
      cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
  if (status == cudaSuccess) {
    transport->setRecording(true);
    body(program);
    transport->setRecording(false);
    cudaGraph_t graph = nullptr;
    status = cudaStreamEndCapture(stream, &graph);
    if (status == cudaSuccess)
      status = cudaGraphInstantiate(&recorded, graph, 0);
    if (graph)
      cudaGraphDestroy(graph);
  }
  if (status == cudaSuccess)
    return true;
  cudaGetLastError(); // the failed capture's error is not the next call's
  recorded = nullptr;
  warn(std::string("the forward step could not be recorded as a CUDA graph "
                   "(") +
       cudaGetErrorString(status) + "); running it without one");
  return false;
}

void replay() {
  cuda::check(cudaGraphLaunch(recorded, cuda::stream()),
              "launching the forward step's CUDA graph");
  transport->enqueued("the forward step (a CUDA graph, whose collectives "
                      "are not named one by one: run with --no-cuda-graph "
                      "to name the one that stalls)",
                      cuda::stream());
}

void stop() {
  if (recorded) {
    cudaGraphExecDestroy(recorded);
    recorded = nullptr;
  }
  if (transport) {
    transport->release();
    delete transport;
    transport = nullptr;
  }
  for (void *pointer : allocations)
    cuda::deviceFree(pointer);
  allocations.clear();
  cuda::shutdownDevice();
}

} // namespace meshc::rt::placement
