//===- comm.h - Collectives between the ranks of a device mesh --*- C++ -*-===//
//
// Part of meshc. The communication backend of the cpu target, on MPI. The
// process's rank is its place in the device mesh (the grid), numbered
// row-major as the compiler numbers it; a *group* is the set of ranks that
// differ only in some grid axes (an MPI communicator from MPI_Comm_split,
// like the ncclComm_t a cuda rank holds per group). Generated code opens the
// groups its program uses once at start-up, then calls the collectives in the
// order of the program, which is the same on every rank of a group by
// construction.
//
// Every blocking call waits at most the timeout (default 300 s, set from
// --collective-timeout): past it, or when a peer is gone, the rank reports
// the op, the group and the peers through rt::fatal and the whole job is
// aborted (MPI_Abort), so no rank hangs. No LLVM or MLIR inside.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_RUNTIME_COMM_H
#define MESHC_RUNTIME_COMM_H

#include "meshc/runtime/tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace meshc::rt {

/// Where the tensor collectives of a rank program run when its tensors are
/// not in host memory: the cuda target installs one on NCCL. Comm keeps the
/// world, the grid, the groups and the host transfers (start-up checks,
/// output assembly) on MPI either way, and forwards the tensor collectives
/// here, with the same arguments and the same promises as its start forms:
/// each starts the collective and returns a ticket that wait() completes.
class TensorTransport {
public:
  virtual ~TensorTransport() = default;
  /// Comm::openGroup made group `group` (MPI_Comm_split with this color and
  /// key); called on every rank in the same order.
  virtual void groupOpened(int group, int color, int key, int size) = 0;
  virtual int allReduceSum(int group, const TensorRef &in, const TensorRef &out,
                           const char *what) = 0;
  virtual int allReduceMax(int group, const TensorRef &in, const TensorRef &out,
                           const char *what) = 0;
  virtual int allGather(int group, const TensorRef &in, const TensorRef &out,
                        std::int64_t axis, const char *what) = 0;
  virtual int reduceScatterSum(int group, const TensorRef &in,
                               const TensorRef &out, std::int64_t axis,
                               const char *what) = 0;
  virtual int allToAll(int group, const TensorRef &in, const TensorRef &out,
                       std::int64_t splitAxis, std::int64_t concatAxis,
                       const char *what) = 0;
  virtual int send(int peerRank, const TensorRef &in, const char *what) = 0;
  virtual int recv(int peerRank, const TensorRef &out, const char *what) = 0;
  /// Work enqueued after this call sees the collective of `ticket` done.
  virtual void wait(int ticket) = 0;
};

class Comm {
public:
  /// Initialises MPI (MPI_Init_thread, funneled) and installs a fatal handler
  /// that aborts the job. Works without a launcher too (a singleton world).
  static Comm &init(int *argc, char ***argv);
  /// MPI_Finalize, after a barrier.
  static void finalize();

  int rank() const { return rank_; }
  int size() const { return size_; }
  /// This rank's index among the ranks of its node, and their number (from
  /// MPI_Comm_split_type: any launcher).
  int localRank() const { return localRank_; }
  int localSize() const { return localSize_; }

  /// Sends the tensor collectives (not the host transfers) to `transport`
  /// (nullptr: MPI on host memory). Set before the groups are opened.
  void setTransport(TensorTransport *transport) { transport_ = transport; }
  /// Seconds any blocking call may wait (--collective-timeout).
  double timeout() const { return timeoutSeconds_; }

  /// Sets the grid shape; its product must be the world size (else fatal,
  /// naming both).
  void setGrid(const std::vector<std::int64_t> &shape);
  const std::vector<std::int64_t> &grid() const { return grid_; }
  /// This rank's coordinate along grid axis `axis`.
  std::int64_t coordinate(int axis) const;

  /// Opens the group over grid axes `axes` (listed major to minor: a rank's
  /// index in the group is its row-major index over those axes) and returns
  /// its handle. Collective over the world: every rank opens the same groups
  /// in the same order.
  int openGroup(const std::vector<std::int64_t> &axes);

  /// The global rank of the peer whose coordinates along `axes` are
  /// `coords` and whose other coordinates are this rank's.
  int peer(const std::vector<std::int64_t> &axes,
           const std::vector<std::int64_t> &coords) const;

  /// Seconds any blocking call may wait before the job is aborted.
  void setTimeout(double seconds) { timeoutSeconds_ = seconds; }

  // Collectives. `what` names the op in messages (e.g. "shard.all_reduce
  // #3"). Tensors are f32, i64 or i32 (f16 and bf16 through a transport);
  // `in` and `out` never alias.
  //
  // Each blocks until it is done. Its start form returns at once with a
  // ticket, and wait(ticket) completes it: until then `out` must not be
  // read, nor `in` written. Collectives may be in flight together and be
  // waited for in any order; every rank of a group starts the group's
  // collectives in the same order. A wait, like a blocking call, gives up
  // after the timeout.

  /// out = sum over the group of in (same shapes).
  void allReduceSum(int group, const TensorRef &in, const TensorRef &out,
                    const char *what) {
    wait(startAllReduceSum(group, in, out, what));
  }
  int startAllReduceSum(int group, const TensorRef &in, const TensorRef &out,
                        const char *what);
  /// out = the elementwise largest over the group of in (a reduce_max over a
  /// split axis: the range of a dynamic quantization).
  void allReduceMax(int group, const TensorRef &in, const TensorRef &out,
                    const char *what) {
    wait(startAllReduceMax(group, in, out, what));
  }
  int startAllReduceMax(int group, const TensorRef &in, const TensorRef &out,
                        const char *what);
  /// out = the group's `in` concatenated along `axis` in group order.
  void allGather(int group, const TensorRef &in, const TensorRef &out,
                 std::int64_t axis, const char *what) {
    wait(startAllGather(group, in, out, axis, what));
  }
  int startAllGather(int group, const TensorRef &in, const TensorRef &out,
                     std::int64_t axis, const char *what);
  /// out = block (group index) along `axis` of the sum over the group of in.
  void reduceScatterSum(int group, const TensorRef &in, const TensorRef &out,
                        std::int64_t axis, const char *what) {
    wait(startReduceScatterSum(group, in, out, axis, what));
  }
  int startReduceScatterSum(int group, const TensorRef &in,
                            const TensorRef &out, std::int64_t axis,
                            const char *what);
  /// Splits `in` along splitAxis into group-size blocks, sends block j to
  /// group member j, and concatenates the received blocks along concatAxis.
  void allToAll(int group, const TensorRef &in, const TensorRef &out,
                std::int64_t splitAxis, std::int64_t concatAxis,
                const char *what) {
    wait(startAllToAll(group, in, out, splitAxis, concatAxis, what));
  }
  int startAllToAll(int group, const TensorRef &in, const TensorRef &out,
                    std::int64_t splitAxis, std::int64_t concatAxis,
                    const char *what);
  /// Point to point between global ranks.
  void send(int peerRank, const TensorRef &in, const char *what) {
    wait(startSend(peerRank, in, what));
  }
  int startSend(int peerRank, const TensorRef &in, const char *what);
  void recv(int peerRank, const TensorRef &out, const char *what) {
    wait(startRecv(peerRank, out, what));
  }
  int startRecv(int peerRank, const TensorRef &out, const char *what);
  /// Completes the collective of `ticket` (a start form's). Under a
  /// transport, makes the work enqueued after it wait for the collective.
  void wait(int ticket);
  /// Collectives started and not yet waited for.
  int inFlight() const { return inFlight_; }

  /// Raw bytes between global ranks on a channel apart from the program's
  /// (output assembly at the end of a run); `tag` keeps transfers apart.
  void sendBytes(int peerRank, const void *data, std::size_t bytes, int tag,
                 const char *what);
  void recvBytes(int peerRank, void *data, std::size_t bytes, int tag,
                 const char *what);
  /// Every rank of the world reaches this point.
  void barrier(const char *what);
  /// Gathers one 64-bit value from every rank (start-up checks).
  std::vector<std::uint64_t> allGatherWorld(std::uint64_t value,
                                            const char *what);

private:
  Comm() = default;
  int rank_ = 0;
  int size_ = 1;
  int localRank_ = 0;
  int localSize_ = 1;
  TensorTransport *transport_ = nullptr;
  std::vector<std::int64_t> grid_;
  double timeoutSeconds_ = 300;
  struct Group;
  std::vector<Group *> groups_;
  /// A collective in flight on MPI (its requests, its packing buffers and
  /// what is left to do once they complete), kept for reuse once waited.
  struct Pending;
  std::vector<Pending *> pending_;
  std::vector<int> freeTickets_;
  int inFlight_ = 0;
  /// A free Pending slot and its ticket.
  Pending &acquire(int &ticket);
  /// The MPI all_reduce of the sum or (largest) the largest values.
  int startAllReduce(int group, const TensorRef &in, const TensorRef &out,
                     bool largest, const char *what);
  /// Counts a started collective, returning its ticket.
  int started(int ticket) {
    ++inFlight_;
    return ticket;
  }
};

} // namespace meshc::rt

#endif // MESHC_RUNTIME_COMM_H
