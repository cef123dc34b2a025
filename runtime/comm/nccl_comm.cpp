//===- nccl_comm.cpp - The NCCL tensor collectives of the cuda target -----===//
//
// Part of meshc. Implements NcclTransport.h: Comm's tensor collectives (not
// its host transfers, which stay on MPI) on NCCL, on a communication stream
// of its own with a higher priority than the compute stream, so that a
// collective overlaps the kernels enqueued between its start and its wait
// (meshc-lower-schedule-collectives places both). A start records an event on
// the compute stream that the communication stream waits for (the operand is
// written), enqueues the collective and records a second event after it;
// the wait makes the compute stream wait for that one. Both streams take
// their work in program order, so every rank enqueues its NCCL calls in the
// SPMD program's order.
//
// NCCL communicators: one for the world, bootstrapped through MPI (rank 0's
// ncclUniqueId sent to every rank over Comm's host channel), and one per
// communication group, split from it with the color and key Comm gave its
// MPI communicator, so group index = rank in the NCCL group. Every
// communicator is non-blocking (ncclConfig_t::blocking = 0) so that no call
// can hang the host: a call that is still in progress is polled with
// ncclCommGetAsyncError up to the collective timeout. Each collective also
// records a watchdog event after it (its ticket's event is reused once
// waited for); waiting for the device polls those events in order, so a
// collective that does not complete within --collective-timeout (a dead or
// stuck peer) is reported by name, every communicator is aborted and the
// job stops, never hangs.
//
// Gathers and scatters along an axis that is not the outermost one move
// contiguous blocks with NCCL and transpose (outer index, block index)
// chunks before or after it with strided 2-D copies on the communication
// stream.
//
// Compiled into the cuda runtime library only (runtime/cuda/CMakeLists.txt):
// the cpu target's collectives are MPI's own (mpi_comm.cpp).
//
//===----------------------------------------------------------------------===//
#include "runtime/comm/NcclTransport.h"

#include "meshc/runtime/comm.h"
#include "meshc/runtime/error.h"
#include "runtime/cuda/CudaDevice.h"

#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <string>
#include <thread>
#include <vector>

namespace meshc::rt {
namespace {

using Clock = std::chrono::steady_clock;

std::string shapeString(const TensorRef &t) {
  std::vector<std::int64_t> shape(t.shape, t.shape + t.rank);
  return formatShape(shape);
}

std::int64_t product(const TensorRef &t, int begin, int end) {
  std::int64_t n = 1;
  for (int d = begin; d < end; ++d)
    n *= t.shape[d];
  return n;
}

/// The NCCL type of a summed element.
ncclDataType_t sumType(DType dtype, const std::string &what) {
  switch (dtype) {
  case DType::F32:
    return ncclFloat32;
  case DType::F16:
    return ncclFloat16;
  case DType::BF16:
    return ncclBfloat16;
  case DType::I64:
    return ncclInt64;
  case DType::I32:
    return ncclInt32;
  default:
    fatal(what + ": cannot sum tensors of " +
          std::string(safetensorsName(dtype)));
  }
}

/// Copies a [rows][cols] matrix of `chunk`-byte chunks on the device into
/// its transpose [cols][rows], one strided 2-D copy per column.
void transposeChunks(const void *src, void *dst, std::int64_t rows,
                     std::int64_t cols, std::size_t chunk,
                     cudaStream_t stream) {
  for (std::int64_t c = 0; c < cols; ++c)
    cuda::check(cudaMemcpy2DAsync(
                    static_cast<char *>(dst) + c * rows * chunk, chunk,
                    static_cast<const char *>(src) + c * chunk, cols * chunk,
                    chunk, rows, cudaMemcpyDeviceToDevice, stream),
                "transposing collective blocks");
}

class NcclTransportImpl final : public NcclTransport {
public:
  explicit NcclTransportImpl(Comm &comm) : comm_(comm) {}
  ~NcclTransportImpl() override { release(); }

  /// The world communicator, from rank 0's unique id.
  void connect() {
    ncclUniqueId id;
    const char *what = "bootstrapping NCCL";
    if (comm_.rank() == 0) {
      settle(nullptr, ncclGetUniqueId(&id), what);
      for (int r = 1; r < comm_.size(); ++r)
        comm_.sendBytes(r, &id, sizeof(id), kBootstrapTag, what);
    } else {
      comm_.recvBytes(0, &id, sizeof(id), kBootstrapTag, what);
    }
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t status = ncclCommInitRankConfig(&world_, comm_.size(), id,
                                                 comm_.rank(), &config);
    settle(world_, status, what);
    // The communication stream, ahead of the kernels when both are ready.
    int least = 0, greatest = 0;
    cuda::check(cudaDeviceGetStreamPriorityRange(&least, &greatest),
                "cudaDeviceGetStreamPriorityRange");
    cuda::check(
        cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, greatest),
        "creating the communication stream");
    cuda::check(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming),
                "cudaEventCreate");
  }

  void groupOpened(int group, int color, int key, int) override {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclComm_t split = nullptr;
    ncclResult_t status = ncclCommSplit(world_, color, key, &split, &config);
    // A non-blocking split completes on the new communicator.
    settle(split ? split : world_, status,
           "opening communication group #" + std::to_string(group) +
               " (ncclCommSplit)");
    if (static_cast<int>(groups_.size()) <= group)
      groups_.resize(group + 1, nullptr);
    groups_[group] = split;
  }

  int allReduceSum(int group, const TensorRef &in, const TensorRef &out,
                   const char *what) override {
    return allReduce(group, in, out, ncclSum, what);
  }

  int allReduceMax(int group, const TensorRef &in, const TensorRef &out,
                   const char *what) override {
    return allReduce(group, in, out, ncclMax, what);
  }

  int allReduce(int group, const TensorRef &in, const TensorRef &out,
                ncclRedOp_t reduction, const char *what) {
    std::string op = what;
    ncclComm_t c = groupComm(group, op);
    if (in.dtype != out.dtype || in.numElements() != out.numElements())
      fatal(op + ": operand " + shapeString(in) + " and result " +
            shapeString(out) + " differ");
    fork();
    settle(c,
           ncclAllReduce(in.data, out.data, in.numElements(),
                         sumType(in.dtype, op), reduction, c, stream_),
           op);
    return join(op);
  }

  int allGather(int group, const TensorRef &in, const TensorRef &out,
                std::int64_t axis, const char *what) override {
    std::string op = what;
    ncclComm_t c = groupComm(group, op);
    std::int64_t members = groupSize(c);
    const std::int64_t outer = product(in, 0, static_cast<int>(axis));
    const std::size_t chunk =
        product(in, static_cast<int>(axis), in.rank) * byteWidth(in.dtype);
    // Member t's input lands as block t of a [T][in] buffer, transposed
    // into [outer][T][inner] along an inner axis.
    void *gathered =
        outer == 1 ? out.data : scratch(recvScratch_, out.byteSize());
    fork();
    settle(
        c,
        ncclAllGather(in.data, gathered, in.byteSize(), ncclUint8, c, stream_),
        op);
    if (outer != 1)
      transposeChunks(gathered, out.data, members, outer, chunk, stream_);
    return join(op);
  }

  int reduceScatterSum(int group, const TensorRef &in, const TensorRef &out,
                       std::int64_t axis, const char *what) override {
    std::string op = what;
    ncclComm_t c = groupComm(group, op);
    std::int64_t members = groupSize(c);
    const std::int64_t outer = product(in, 0, static_cast<int>(axis));
    const std::size_t chunk =
        product(out, static_cast<int>(axis), out.rank) * byteWidth(out.dtype);
    // Block j must be contiguous: [outer][T][inner] -> [T][outer][inner].
    const void *packed = in.data;
    void *buffer = outer != 1 ? scratch(sendScratch_, in.byteSize()) : nullptr;
    fork();
    if (buffer) {
      transposeChunks(in.data, buffer, outer, members, chunk, stream_);
      packed = buffer;
    }
    settle(c,
           ncclReduceScatter(packed, out.data, out.numElements(),
                             sumType(in.dtype, op), ncclSum, c, stream_),
           op);
    return join(op);
  }

  int allToAll(int group, const TensorRef &in, const TensorRef &out,
               std::int64_t splitAxis, std::int64_t concatAxis,
               const char *what) override {
    std::string op = what;
    ncclComm_t c = groupComm(group, op);
    std::int64_t members = groupSize(c);
    TensorRef block = in;
    if (in.rank != out.rank || splitAxis < 0 || splitAxis >= in.rank ||
        concatAxis < 0 || concatAxis >= in.rank ||
        in.shape[splitAxis] % members != 0)
      fatal(op + ": operand " + shapeString(in) + " and result " +
            shapeString(out) + " do not match an all-to-all over " +
            std::to_string(members) + " ranks");
    block.shape[splitAxis] /= members;
    const std::size_t width = byteWidth(in.dtype);
    const std::int64_t splitOuter = product(in, 0, static_cast<int>(splitAxis));
    const std::int64_t concatOuter =
        product(block, 0, static_cast<int>(concatAxis));
    const char *sendBuffer = static_cast<const char *>(in.data);
    void *packed =
        splitOuter != 1 ? scratch(sendScratch_, in.byteSize()) : nullptr;
    char *recvBuffer = static_cast<char *>(
        concatOuter == 1 ? out.data : scratch(recvScratch_, out.byteSize()));
    fork();
    if (packed) {
      transposeChunks(in.data, packed, splitOuter, members,
                      product(block, static_cast<int>(splitAxis), block.rank) *
                          width,
                      stream_);
      sendBuffer = static_cast<const char *>(packed);
    }
    const std::size_t blockBytes = block.byteSize();
    settle(c, ncclGroupStart(), op);
    for (std::int64_t peer = 0; peer < members; ++peer) {
      settle(c,
             ncclSend(sendBuffer + peer * blockBytes, blockBytes, ncclUint8,
                      static_cast<int>(peer), c, stream_),
             op);
      settle(c,
             ncclRecv(recvBuffer + peer * blockBytes, blockBytes, ncclUint8,
                      static_cast<int>(peer), c, stream_),
             op);
    }
    settle(c, ncclGroupEnd(), op);
    if (concatOuter != 1)
      transposeChunks(recvBuffer, out.data, members, concatOuter,
                      product(block, static_cast<int>(concatAxis), block.rank) *
                          width,
                      stream_);
    return join(op);
  }

  int send(int peerRank, const TensorRef &in, const char *what) override {
    std::string op = what;
    checkPeer(peerRank, op);
    fork();
    settle(
        world_,
        ncclSend(in.data, in.byteSize(), ncclUint8, peerRank, world_, stream_),
        op);
    return join(op);
  }

  int recv(int peerRank, const TensorRef &out, const char *what) override {
    std::string op = what;
    checkPeer(peerRank, op);
    fork();
    settle(world_,
           ncclRecv(out.data, out.byteSize(), ncclUint8, peerRank, world_,
                    stream_),
           op);
    return join(op);
  }

  void wait(int ticket) override {
    if (ticket < 0 || ticket >= static_cast<int>(done_.size()) ||
        !busy_[ticket])
      fatal("waiting for collective ticket " + std::to_string(ticket) +
            ", which is not in flight");
    cuda::check(cudaStreamWaitEvent(cuda::stream(), done_[ticket], 0),
                "waiting for a collective (cudaStreamWaitEvent)");
    busy_[ticket] = false;
    freeTickets_.push_back(ticket);
  }

  /// While the stream is being recorded as a graph, collectives record no
  /// events (a recorded event cannot be waited for from the host).
  void setRecording(bool recording) override { recording_ = recording; }

  /// Records an event after the work just enqueued on `stream`, so that a
  /// wait can name the first collective (or replayed step) that does not
  /// complete.
  void enqueued(const std::string &op, cudaStream_t stream) override {
    if (recording_)
      return;
    Pending p;
    cuda::check(cudaEventCreateWithFlags(&p.event, cudaEventDisableTiming),
                "cudaEventCreate");
    cuda::check(cudaEventRecord(p.event, stream), "cudaEventRecord");
    p.what = op;
    pending_.push_back(std::move(p));
    // Completed collectives leave the list as it grows.
    while (pending_.size() > 256 &&
           cudaEventQuery(pending_.front().event) == cudaSuccess) {
      cudaEventDestroy(pending_.front().event);
      pending_.pop_front();
    }
  }

  /// Waits for everything enqueued on both streams, within the collective
  /// timeout for each collective; a collective past it, or an NCCL error,
  /// aborts the communicators and stops the job naming the op.
  void drain(const std::string &what) override {
    while (!pending_.empty()) {
      Pending &p = pending_.front();
      Clock::time_point start = Clock::now();
      for (auto sleep = std::chrono::microseconds(20);;) {
        cudaError_t status = cudaEventQuery(p.event);
        if (status == cudaSuccess)
          break;
        if (status != cudaErrorNotReady)
          cuda::check(status, p.what.c_str());
        checkAsyncErrors(p.what);
        double waited =
            std::chrono::duration<double>(Clock::now() - start).count();
        if (waited > comm_.timeout())
          abortAll(p.what + " did not complete within " +
                   std::to_string(static_cast<int>(comm_.timeout())) +
                   " s (--collective-timeout): a peer rank is dead, stuck or "
                   "took another path");
        std::this_thread::sleep_for(sleep);
        sleep = std::min(sleep * 2, std::chrono::microseconds(10000));
      }
      cudaEventDestroy(p.event);
      pending_.pop_front();
    }
    // Every collective's event is past: the communication stream is idle.
    if (stream_)
      cuda::check(cudaStreamSynchronize(stream_), what.c_str());
    cuda::synchronize(what.c_str());
  }

  void release() override {
    for (Pending &p : pending_)
      cudaEventDestroy(p.event);
    pending_.clear();
    for (cudaEvent_t e : done_)
      cudaEventDestroy(e);
    done_.clear();
    busy_.clear();
    freeTickets_.clear();
    if (fork_)
      cudaEventDestroy(fork_);
    fork_ = nullptr;
    if (stream_)
      cudaStreamDestroy(stream_);
    stream_ = nullptr;
    for (ncclComm_t c : groups_)
      if (c)
        ncclCommDestroy(c);
    groups_.clear();
    if (world_)
      ncclCommDestroy(world_);
    world_ = nullptr;
    cuda::deviceFree(sendScratch_.data);
    cuda::deviceFree(recvScratch_.data);
    sendScratch_ = recvScratch_ = Scratch();
  }

private:
  struct Pending {
    cudaEvent_t event;
    std::string what;
  };
  struct Scratch {
    void *data = nullptr;
    std::size_t bytes = 0;
  };
  /// Apart from Comm's output-assembly tags (small positive numbers).
  static constexpr int kBootstrapTag = 1 << 20;

  /// The start of a collective: the communication stream waits for the work
  /// enqueued so far on the compute stream (which wrote the operand).
  void fork() {
    cuda::check(cudaEventRecord(fork_, cuda::stream()), "cudaEventRecord");
    cuda::check(cudaStreamWaitEvent(stream_, fork_, 0),
                "starting a collective (cudaStreamWaitEvent)");
  }

  /// The end of a collective's enqueueing: an event after it on the
  /// communication stream, which wait(ticket) makes the compute stream
  /// wait for.
  int join(const std::string &op) {
    if (freeTickets_.empty()) {
      cudaEvent_t event = nullptr;
      cuda::check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
                  "cudaEventCreate");
      freeTickets_.push_back(static_cast<int>(done_.size()));
      done_.push_back(event);
      busy_.push_back(false);
    }
    int ticket = freeTickets_.back();
    freeTickets_.pop_back();
    cuda::check(cudaEventRecord(done_[ticket], stream_), "cudaEventRecord");
    busy_[ticket] = true;
    enqueued(op, stream_);
    return ticket;
  }

  ncclComm_t groupComm(int group, const std::string &op) {
    if (group < 0 || group >= static_cast<int>(groups_.size()) ||
        !groups_[group])
      fatal(op + ": no group #" + std::to_string(group));
    return groups_[group];
  }

  std::int64_t groupSize(ncclComm_t c) {
    int count = 0;
    settle(c, ncclCommCount(c, &count), "ncclCommCount");
    return count;
  }

  void checkPeer(int peerRank, const std::string &op) {
    if (peerRank < 0 || peerRank >= comm_.size() || peerRank == comm_.rank())
      fatal(op + ": no peer rank " + std::to_string(peerRank));
  }

  /// Grows `s` to `bytes` (buffers are reused in stream order).
  void *scratch(Scratch &s, std::size_t bytes) {
    if (s.bytes < bytes) {
      if (recording_)
        fatal("a collective buffer must grow while the forward step is "
              "recorded as a CUDA graph (run with --no-cuda-graph)");
      // The stream may still read the old buffer.
      drain("growing a collective buffer");
      cuda::deviceFree(s.data);
      s.data = cuda::deviceAlloc(bytes, "a collective buffer");
      s.bytes = bytes;
    }
    return s.data;
  }

  /// Completes a non-blocking NCCL call: polls while it is in progress, up
  /// to the timeout; an error stops the job naming `what`.
  void settle(ncclComm_t c, ncclResult_t status, const std::string &what) {
    Clock::time_point start = Clock::now();
    while (status == ncclInProgress && c) {
      if (std::chrono::duration<double>(Clock::now() - start).count() >
          comm_.timeout())
        abortAll(what + " did not complete within " +
                 std::to_string(static_cast<int>(comm_.timeout())) +
                 " s (--collective-timeout)");
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      ncclCommGetAsyncError(c, &status);
    }
    if (status != ncclSuccess && status != ncclInProgress)
      abortAll(what + ": NCCL error: " + ncclGetErrorString(status) +
               (c ? std::string(" (") + ncclGetLastError(c) + ")" : ""));
  }

  void checkAsyncErrors(const std::string &what) {
    for (ncclComm_t c : groups_) {
      ncclResult_t status = ncclSuccess;
      if (c && ncclCommGetAsyncError(c, &status) == ncclSuccess &&
          status != ncclSuccess && status != ncclInProgress)
        abortAll(what + ": NCCL error: " + ncclGetErrorString(status));
    }
  }

  [[noreturn]] void abortAll(const std::string &message) {
    for (ncclComm_t c : groups_)
      if (c)
        ncclCommAbort(c);
    groups_.clear();
    if (world_)
      ncclCommAbort(world_);
    world_ = nullptr;
    fatal(message);
  }

  Comm &comm_;
  ncclComm_t world_ = nullptr;
  std::vector<ncclComm_t> groups_;
  std::deque<Pending> pending_;
  Scratch sendScratch_, recvScratch_;
  bool recording_ = false;
  /// The communication stream, and the event each start records on the
  /// compute stream for it.
  cudaStream_t stream_ = nullptr;
  cudaEvent_t fork_ = nullptr;
  /// Per ticket: the event after its collective, and whether it is in
  /// flight; free tickets are reused.
  std::vector<cudaEvent_t> done_;
  std::vector<bool> busy_;
  std::vector<int> freeTickets_;
};

} // namespace

std::unique_ptr<NcclTransport> makeNcclTransport(Comm &comm) {
  auto transport = std::make_unique<NcclTransportImpl>(comm);
  transport->connect();
  return transport;
}

} // namespace meshc::rt
