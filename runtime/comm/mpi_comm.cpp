//===- mpi_comm.cpp - The MPI communication backend of the cpu target -----===//
//
// Part of meshc. Implements rt::Comm (comm.h) on MPI. Every call is issued
// in its nonblocking form (MPI_Iallreduce, MPI_Isend, MPI_Ibarrier, ...);
// a collective's start form returns a ticket for its requests, and a wait
// (at once for the blocking forms) completes them by a polling loop that
// first yields the core between tests (sched_yield: a rank sharing a core
// with its peers leaves them the cpu, a rank alone on its core polls at
// once, and MPI progresses the collective at every test), then, past a few
// milliseconds (a pipeline bubble, a straggler), sleeps between tests, and
// that gives up after the timeout: a rank whose peer died or
// took another path reports the op and the group through rt::fatal, which
// aborts the whole job, instead of hanging. Communicators return their errors
// (MPI_ERRORS_RETURN) so that an MPI failure, too, becomes one line naming the
// op.
//
// Collectives move dense row-major tensors. A gather, scatter or all-to-all
// along an axis that is not the outermost one is the MPI collective on
// contiguous blocks plus a transposition of (outer index, block index) chunks
// before or after it.
//
//===----------------------------------------------------------------------===//
#include "meshc/runtime/comm.h"

#include "meshc/runtime/error.h"

// Only MPI's C interface: the deprecated C++ bindings need libmpi_cxx.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

// A sanitizer build (MESHC_SANITIZE) ignores what MPI_Init allocates and
// checks for leaks before MPI_Finalize: OpenMPI unloads its plugins in both,
// and what they keep would be reported at exit from modules that no longer
// have a name to suppress (test/sanitizers/lsan.supp names the rest).
#if defined(__SANITIZE_ADDRESS__)
#define MESHC_LEAK_CHECK 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MESHC_LEAK_CHECK 1
#endif
#endif
#ifdef MESHC_LEAK_CHECK
#include <sanitizer/lsan_interface.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstring>
#include <ctime>
#include <functional>
#include <csignal>
#include <sched.h>
#include <sstream>
#include <unistd.h>

namespace meshc::rt {

/// One communicator per group of grid axes, with its members' global ranks
/// kept for messages (a timeout names the members it waited for).
struct Comm::Group {
  MPI_Comm comm = MPI_COMM_NULL;
  /// Global ranks in group order (member i has group rank i).
  std::vector<int> members;
  /// This rank's index in `members`.
  int index = 0;
  /// "ranks {0, 1}", ready for messages.
  std::string label;
};

/// A collective in flight: its requests, what completing them leaves to do,
/// and the packing buffers, kept with the slot for its next collective.
struct Comm::Pending {
  std::vector<MPI_Request> requests;
  /// For receives: the bytes each request must bring (empty: no check).
  std::vector<std::size_t> expected;
  std::string what, where;
  /// Runs once the requests complete (unpacking a received block order).
  std::function<void()> finish;
  /// Packing buffers, kept with the slot for its next collective.
  std::vector<unsigned char> sendScratch, recvScratch;
  bool busy = false;
};

namespace {

/// The program's point-to-point channel and the world's collectives: a dup
/// of MPI_COMM_WORLD, so that nothing a library does on the world can match
/// the program's messages.
MPI_Comm worldComm = MPI_COMM_NULL;
/// sendBytes/recvBytes: a second dup, so that output assembly at the end of a
/// run can never match a send of the program.
MPI_Comm bytesComm = MPI_COMM_NULL;
/// Whether this module called MPI_Init_thread (and so must finalize).
bool initialised = false;

/// The fatal handler under MPI: a rank that stops must take the job with it,
/// or its peers would wait for it until their own timeout.
void abortJob() { MPI_Abort(MPI_COMM_WORLD, 1); }

std::string name(const char *what) { return what ? what : "collective"; }

std::string mpiErrorString(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, length);
}

/// Turns an MPI return code into a fatal error naming the op.
void check(int code, const std::string &what, const char *call) {
  if (code != MPI_SUCCESS)
    fatal(what + ": " + call + " failed: " + mpiErrorString(code));
}

std::string formatSeconds(double seconds) {
  std::ostringstream os;
  os << seconds;
  return os.str();
}

/// How long a wait polls with sched_yield before it sleeps between tests:
/// long enough to cover the usual skew between ranks of a step (a sleep
/// there would add its own length to every collective, and MPI does not
/// progress a nonblocking collective while its rank sleeps), short enough
/// that a long wait soon stops taking a core.
constexpr double kYieldSeconds = 0.005;

//===----------------------------------------------------------------------===//
// A rank stopped while it waits
//===----------------------------------------------------------------------===//

/// What a rank is waiting for, read by the SIGTERM handler: the launcher
/// stops the ranks with SIGTERM when a peer died or a host became
/// unreachable, and the op and the peers a rank was still waiting for tell
/// which link or rank the job lost. Set by complete() around its loop.
struct WaitState {
  const std::string *what = nullptr, *where = nullptr;
  timespec since{};
};
volatile sig_atomic_t waiting = 0;
WaitState waitState;
/// "meshc: rank R[ on HOST]: ", made once the rank knows its place.
std::string stopPrefix;
struct sigaction previousTerm {};

/// Appends `text` (or the decimal `value`) to the buffer at `at`; async-
/// signal-safe, as the handler needs.
void appendText(char *buffer, std::size_t &at, std::size_t size,
                const char *text) {
  while (*text && at + 1 < size)
    buffer[at++] = *text++;
}
void appendNumber(char *buffer, std::size_t &at, std::size_t size,
                  long value) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value > 0 && n < 23);
  while (n > 0 && at + 1 < size)
    buffer[at++] = digits[--n];
}

/// SIGTERM: a rank inside a wait of more than a second says what it was
/// waiting for, then terminates as the signal would have it.
void onTerminate(int signal) {
  if (waiting) {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    const long ms = (now.tv_sec - waitState.since.tv_sec) * 1000 +
                    (now.tv_nsec - waitState.since.tv_nsec) / 1000000;
    const long seconds = ms / 1000;
    if (seconds >= 1) {
      char line[512];
      std::size_t at = 0;
      appendText(line, at, sizeof line, stopPrefix.c_str());
      appendText(line, at, sizeof line, "stopped by the launcher (SIGTERM) after ");
      appendNumber(line, at, sizeof line, seconds);
      appendText(line, at, sizeof line, " s waiting in ");
      appendText(line, at, sizeof line, waitState.what->c_str());
      appendText(line, at, sizeof line, " ");
      appendText(line, at, sizeof line, waitState.where->c_str());
      appendText(line, at, sizeof line,
                 "; unless the job was stopped on purpose, that peer rank, or "
                 "the link to its host, was lost");
      line[at++] = '\n'; // appendText leaves room for it
      ssize_t ignored = ::write(STDERR_FILENO, line, at);
      (void)ignored;
    }
  }
  sigaction(SIGTERM, &previousTerm, nullptr);
  if (previousTerm.sa_handler != SIG_DFL && previousTerm.sa_handler != SIG_IGN &&
      !(previousTerm.sa_flags & SA_SIGINFO))
    previousTerm.sa_handler(signal);
  else
    raise(signal);
}

/// Marks a wait for the handler while it lives.
class WaitMark {
public:
  WaitMark(const std::string &what, const std::string &where) {
    clock_gettime(CLOCK_MONOTONIC, &waitState.since);
    waitState.what = &what;
    waitState.where = &where;
    // The handler runs on this thread: what it reads is written before it
    // sees `waiting` set, and still there until it sees it cleared.
    std::atomic_signal_fence(std::memory_order_seq_cst);
    waiting = 1;
  }
  ~WaitMark() {
    waiting = 0;
    std::atomic_signal_fence(std::memory_order_seq_cst);
  }
  WaitMark(const WaitMark &) = delete;
  WaitMark &operator=(const WaitMark &) = delete;
};

/// Completes `requests`, polling (see the file comment), and aborts the job
/// when that takes longer than `timeout` seconds. `where` names the peers
/// ("over ranks {0, 1}", "to rank 3") for the message.
std::vector<MPI_Status> complete(std::vector<MPI_Request> &requests,
                                 const std::string &what,
                                 const std::string &where, double timeout) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  std::vector<MPI_Status> statuses(requests.size());
  const int count = static_cast<int>(requests.size());
  WaitMark mark(what, where);
  long sleepNs = 50000;
  for (int polls = 0;; ++polls) {
    int done = 0;
    check(MPI_Testall(count, requests.data(), &done, statuses.data()), what,
          "MPI_Testall");
    if (done)
      return statuses;
    // The first polls spin (peers arriving together); then the clock is
    // read every 64 polls only.
    if (polls < 64)
      continue;
    if (polls % 64 != 63) {
      sched_yield();
      continue;
    }
    double elapsed =
        std::chrono::duration<double>(Clock::now() - start).count();
    if (elapsed > timeout)
      fatal(what + " " + where + " did not complete within " +
            formatSeconds(timeout) +
            " s; a peer rank may have died or be stuck");
    if (elapsed < kYieldSeconds) {
      sched_yield();
      continue;
    }
    timespec pause{0, sleepNs};
    nanosleep(&pause, nullptr);
    sleepNs = std::min(sleepNs * 2, 1000000L);
  }
}

/// complete() of one request.
void completeOne(MPI_Request request, const std::string &what,
                 const std::string &where, double timeout) {
  std::vector<MPI_Request> requests{request};
  complete(requests, what, where, timeout);
}

/// The MPI type of a summed element; f16/bf16 have no MPI sum here.
MPI_Datatype sumType(DType dtype, const std::string &what) {
  switch (dtype) {
  case DType::F32:
    return MPI_FLOAT;
  case DType::I64:
    return MPI_INT64_T;
  case DType::I32:
    return MPI_INT32_T;
  case DType::F16:
  case DType::BF16:
  case DType::Bool:
    break;
  }
  fatal(what + ": a sum of " + std::string(safetensorsName(dtype)) +
        " tensors is not supported on the cpu target");
}

/// An MPI type of the element's width, for collectives that only move data
/// (counts stay in elements, so a tensor of up to INT_MAX elements fits).
MPI_Datatype moveType(DType dtype) {
  switch (byteWidth(dtype)) {
  case 1:
    return MPI_UINT8_T;
  case 2:
    return MPI_UINT16_T;
  case 4:
    return MPI_UINT32_T;
  default:
    return MPI_UINT64_T;
  }
}

int countOf(std::int64_t elements, const std::string &what) {
  if (elements > INT_MAX)
    fatal(what + ": " + std::to_string(elements) +
          " elements exceed the MPI count limit");
  return static_cast<int>(elements);
}

std::string shapeString(const TensorRef &t) {
  std::string s = std::string(safetensorsName(t.dtype)) + "[";
  for (int i = 0; i < t.rank; ++i)
    s += (i ? "x" : "") + std::to_string(t.shape[i]);
  return s + "]";
}

std::int64_t product(const TensorRef &t, int begin, int end) {
  std::int64_t n = 1;
  for (int i = begin; i < end; ++i)
    n *= t.shape[i];
  return n;
}

/// Copies a [rows][cols] matrix of `chunk`-byte chunks into its transpose
/// [cols][rows]: packs blocks of an inner axis together, and back.
void transposeChunks(const unsigned char *src, unsigned char *dst,
                     std::int64_t rows, std::int64_t cols, std::size_t chunk) {
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c)
      std::memcpy(dst + (c * rows + r) * chunk, src + (r * cols + c) * chunk,
                  chunk);
}

unsigned char *bytesOf(const TensorRef &t) {
  return static_cast<unsigned char *>(t.data);
}

unsigned char *scratch(std::vector<unsigned char> &buffer, std::size_t bytes) {
  if (buffer.size() < bytes)
    buffer.resize(bytes);
  return buffer.data();
}

/// Point-to-point transfers go in chunks of 1 GiB: MPI counts are ints.
constexpr std::size_t kChunkBytes = std::size_t(1) << 30;

} // namespace

//===----------------------------------------------------------------------===//
// Start-up and the grid
//===----------------------------------------------------------------------===//

Comm &Comm::init(int *argc, char ***argv) {
  static Comm instance;
  int already = 0;
  MPI_Initialized(&already);
  if (!already) {
    int provided = 0;
#ifdef MESHC_LEAK_CHECK
    __lsan_disable(); // what OpenMPI's plugins keep is not ours
#endif
    int status = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
#ifdef MESHC_LEAK_CHECK
    __lsan_enable();
#endif
    if (status != MPI_SUCCESS)
      fatal("MPI_Init_thread failed");
    initialised = true;
    if (provided < MPI_THREAD_FUNNELED)
      fatal("the MPI library does not provide MPI_THREAD_FUNNELED");
  }
  if (worldComm != MPI_COMM_NULL)
    return instance;
  MPI_Comm_rank(MPI_COMM_WORLD, &instance.rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &instance.size_);
  // Who this rank is, for its messages and for the SIGTERM note.
  auto nameRank = [](const std::string &who) {
    setErrorContext(who);
    stopPrefix = "meshc: " + who + ": ";
  };
  nameRank("rank " + std::to_string(instance.rank_));
  setFatalHandler(abortJob);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  check(MPI_Comm_dup(MPI_COMM_WORLD, &worldComm), "start-up", "MPI_Comm_dup");
  check(MPI_Comm_dup(MPI_COMM_WORLD, &bytesComm), "start-up", "MPI_Comm_dup");
  MPI_Comm_set_errhandler(worldComm, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(bytesComm, MPI_ERRORS_RETURN);
  MPI_Comm node;
  check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED,
                            instance.rank_, MPI_INFO_NULL, &node),
        "start-up", "MPI_Comm_split_type");
  MPI_Comm_rank(node, &instance.localRank_);
  MPI_Comm_size(node, &instance.localSize_);
  MPI_Comm_free(&node);
  // A job over several hosts: a rank's messages name its host too, since
  // what fails there (a missing weight file, a full disk) is the host's.
  if (instance.localSize_ < instance.size_) {
    char host[MPI_MAX_PROCESSOR_NAME] = {};
    int length = 0;
    MPI_Get_processor_name(host, &length);
    nameRank("rank " + std::to_string(instance.rank_) + " on " +
             std::string(host, length));
  }
  struct sigaction onTerm = {};
  onTerm.sa_handler = onTerminate;
  sigemptyset(&onTerm.sa_mask);
  sigaction(SIGTERM, &onTerm, &previousTerm);
  instance.grid_ = {instance.size_};
  return instance;
}

void Comm::finalize() {
  if (worldComm == MPI_COMM_NULL)
    return;
  Comm &comm = init(nullptr, nullptr);
  comm.barrier("finalize");
  // The communicators are released by MPI_Finalize; freeing them one by one
  // would be one more collective without a timeout.
  for (Group *group : comm.groups_)
    delete group;
  comm.groups_.clear();
  for (Pending *pending : comm.pending_)
    delete pending;
  comm.pending_.clear();
  comm.freeTickets_.clear();
  worldComm = bytesComm = MPI_COMM_NULL;
  // MPI_Abort is not allowed after MPI_Finalize.
  setFatalHandler(nullptr);
#ifdef MESHC_LEAK_CHECK
  __lsan_do_leak_check();
#endif
  if (initialised)
    MPI_Finalize();
  initialised = false;
}

void Comm::setGrid(const std::vector<std::int64_t> &shape) {
  std::int64_t total = 1;
  std::string text;
  for (std::int64_t extent : shape) {
    if (extent < 1)
      fatal("grid extent " + std::to_string(extent) + " is not positive");
    total *= extent;
    text += (text.empty() ? "" : "x") + std::to_string(extent);
  }
  if (total != size_)
    fatal("the program was compiled for a mesh of " + std::to_string(total) +
          " ranks (grid " + text + ") but runs on " + std::to_string(size_) +
          " ranks");
  grid_ = shape;
}

std::int64_t Comm::coordinate(int axis) const {
  if (axis < 0 || axis >= static_cast<int>(grid_.size()))
    fatal("grid axis " + std::to_string(axis) + " out of range (grid of " +
          std::to_string(grid_.size()) + " axes)");
  std::int64_t stride = 1;
  for (std::size_t i = axis + 1; i < grid_.size(); ++i)
    stride *= grid_[i];
  return (rank_ / stride) % grid_[axis];
}

int Comm::peer(const std::vector<std::int64_t> &axes,
               const std::vector<std::int64_t> &coords) const {
  if (axes.size() != coords.size())
    fatal("peer: " + std::to_string(axes.size()) + " axes but " +
          std::to_string(coords.size()) + " coordinates");
  std::vector<std::int64_t> mine(grid_.size());
  for (std::size_t i = 0; i < grid_.size(); ++i)
    mine[i] = coordinate(static_cast<int>(i));
  for (std::size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0 || axes[i] >= static_cast<std::int64_t>(grid_.size()))
      fatal("peer: grid axis " + std::to_string(axes[i]) + " out of range");
    if (coords[i] < 0 || coords[i] >= grid_[axes[i]])
      fatal("peer: coordinate " + std::to_string(coords[i]) +
            " out of range along grid axis " + std::to_string(axes[i]) +
            " of extent " + std::to_string(grid_[axes[i]]));
    mine[axes[i]] = coords[i];
  }
  std::int64_t global = 0;
  for (std::size_t i = 0; i < grid_.size(); ++i)
    global = global * grid_[i] + mine[i];
  return static_cast<int>(global);
}

int Comm::openGroup(const std::vector<std::int64_t> &axes) {
  const auto numAxes = static_cast<std::int64_t>(grid_.size());
  std::vector<bool> inGroup(grid_.size(), false);
  for (std::int64_t axis : axes) {
    if (axis < 0 || axis >= numAxes)
      fatal("openGroup: grid axis " + std::to_string(axis) +
            " out of range (grid of " + std::to_string(numAxes) + " axes)");
    if (inGroup[axis])
      fatal("openGroup: grid axis " + std::to_string(axis) + " listed twice");
    inGroup[axis] = true;
  }
  // color: row-major index over the other axes; key: row-major index over
  // `axes` in the listed order, which becomes the rank in the group.
  std::int64_t color = 0, key = 0, groupSize = 1;
  for (std::int64_t axis = 0; axis < numAxes; ++axis)
    if (!inGroup[axis])
      color = color * grid_[axis] + coordinate(static_cast<int>(axis));
  for (std::int64_t axis : axes) {
    key = key * grid_[axis] + coordinate(static_cast<int>(axis));
    groupSize *= grid_[axis];
  }

  // MPI_Comm_split blocks with no timeout: meet in a barrier that has one
  // first, so that a rank which died or stalls before this point stops the
  // job instead of hanging it.
  barrier("opening the communication groups");
  auto *group = new Group;
  check(MPI_Comm_split(worldComm, static_cast<int>(color),
                       static_cast<int>(key), &group->comm),
        "openGroup", "MPI_Comm_split");
  MPI_Comm_set_errhandler(group->comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(group->comm, &group->index);
  group->label = "ranks {";
  for (std::int64_t member = 0; member < groupSize; ++member) {
    std::vector<std::int64_t> coords(axes.size());
    std::int64_t rest = member;
    for (std::size_t i = axes.size(); i-- > 0;) {
      coords[i] = rest % grid_[axes[i]];
      rest /= grid_[axes[i]];
    }
    group->members.push_back(peer(axes, coords));
    group->label +=
        (member ? ", " : "") + std::to_string(group->members.back());
  }
  group->label += "}";
  groups_.push_back(group);
  int handle = static_cast<int>(groups_.size()) - 1;
  if (transport_)
    transport_->groupOpened(handle, static_cast<int>(color),
                            static_cast<int>(key), static_cast<int>(groupSize));
  return handle;
}

//===----------------------------------------------------------------------===//
// Collectives over a group
//===----------------------------------------------------------------------===//

namespace {

/// Checks that `in` and `out` have the same dtype, rank and extents except
/// along `axis`, where in.shape[axis] * inScale == out.shape[axis] * outScale
/// (a gather multiplies the extent by the group size, a scatter divides it).
void checkShapes(const std::string &what, const TensorRef &in,
                 const TensorRef &out, std::int64_t axis, std::int64_t inScale,
                 std::int64_t outScale) {
  bool ok = in.rank == out.rank && in.dtype == out.dtype && axis >= 0 &&
            axis < in.rank;
  for (int i = 0; ok && i < in.rank; ++i)
    ok = i == axis ? in.shape[i] * inScale == out.shape[i] * outScale
                   : in.shape[i] == out.shape[i];
  if (!ok)
    fatal(what + ": operand " + shapeString(in) + " and result " +
          shapeString(out) + " do not match along axis " +
          std::to_string(axis) + " for a group of " +
          std::to_string(std::max(inScale, outScale)) + " ranks");
}

} // namespace

//===----------------------------------------------------------------------===//
// Collectives in flight
//===----------------------------------------------------------------------===//

namespace {

/// Posts the sends of `bytes` at `data` to `peerRank` in chunks of at most
/// kChunkBytes (MPI counts are ints); same-tag messages between two ranks
/// arrive in order.
void postSends(MPI_Comm comm, int peerRank, const void *data, std::size_t bytes,
               int tag, const std::string &what,
               std::vector<MPI_Request> &requests) {
  const auto *base = static_cast<const unsigned char *>(data);
  std::size_t offset = 0;
  do {
    std::size_t chunk = std::min(bytes - offset, kChunkBytes);
    requests.emplace_back();
    check(MPI_Isend(base + offset, static_cast<int>(chunk), MPI_BYTE, peerRank,
                    tag, comm, &requests.back()),
          what, "MPI_Isend");
    offset += chunk;
  } while (offset < bytes);
}

/// The receiving side of postSends, recording the bytes each part brings.
void postRecvs(MPI_Comm comm, int peerRank, void *data, std::size_t bytes,
               int tag, const std::string &what,
               std::vector<MPI_Request> &requests,
               std::vector<std::size_t> &expected) {
  auto *base = static_cast<unsigned char *>(data);
  std::size_t offset = 0;
  do {
    std::size_t chunk = std::min(bytes - offset, kChunkBytes);
    requests.emplace_back();
    expected.push_back(chunk);
    check(MPI_Irecv(base + offset, static_cast<int>(chunk), MPI_BYTE, peerRank,
                    tag, comm, &requests.back()),
          what, "MPI_Irecv");
    offset += chunk;
  } while (offset < bytes);
}

/// Fatal when a receive's parts brought other than the bytes expected.
void checkReceived(const std::vector<MPI_Status> &statuses,
                   const std::vector<std::size_t> &expected,
                   const std::string &what, const std::string &where) {
  std::size_t want = 0, got = 0;
  bool ok = true;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    int received = 0;
    MPI_Get_count(&statuses[i], MPI_BYTE, &received);
    ok = ok && static_cast<std::size_t>(received) == expected[i];
    want += expected[i];
    got += static_cast<std::size_t>(std::max(received, 0));
  }
  if (!ok)
    fatal(what + ": expected " + std::to_string(want) + " bytes " + where +
          " but received " + std::to_string(got));
}

void checkPeer(int peerRank, int size, const std::string &what) {
  if (peerRank < 0 || peerRank >= size)
    fatal(what + ": rank " + std::to_string(peerRank) +
          " is not in the world of " + std::to_string(size) + " ranks");
}

} // namespace

Comm::Pending &Comm::acquire(int &ticket) {
  if (freeTickets_.empty()) {
    freeTickets_.push_back(static_cast<int>(pending_.size()));
    pending_.push_back(new Pending);
  }
  ticket = freeTickets_.back();
  freeTickets_.pop_back();
  Pending &p = *pending_[ticket];
  p.requests.clear();
  p.expected.clear();
  p.finish = nullptr;
  p.busy = true;
  return p;
}

void Comm::wait(int ticket) {
  if (transport_) {
    --inFlight_;
    return transport_->wait(ticket);
  }
  if (ticket < 0 || ticket >= static_cast<int>(pending_.size()) ||
      !pending_[ticket]->busy)
    fatal("waiting for collective ticket " + std::to_string(ticket) +
          ", which is not in flight");
  Pending &p = *pending_[ticket];
  checkReceived(complete(p.requests, p.what, p.where, timeoutSeconds_),
                p.expected, p.what, p.where);
  if (p.finish)
    p.finish();
  p.busy = false;
  p.finish = nullptr;
  freeTickets_.push_back(ticket);
  --inFlight_;
}

int Comm::startAllReduceSum(int group, const TensorRef &in,
                            const TensorRef &out, const char *what) {
  if (transport_)
    return started(transport_->allReduceSum(group, in, out, what));
  return startAllReduce(group, in, out, /*largest=*/false, what);
}

int Comm::startAllReduceMax(int group, const TensorRef &in,
                            const TensorRef &out, const char *what) {
  if (transport_)
    return started(transport_->allReduceMax(group, in, out, what));
  return startAllReduce(group, in, out, /*largest=*/true, what);
}

int Comm::startAllReduce(int group, const TensorRef &in, const TensorRef &out,
                         bool largest, const char *what) {
  std::string op = name(what);
  if (group < 0 || group >= static_cast<int>(groups_.size()))
    fatal(op + ": no group #" + std::to_string(group));
  Group &g = *groups_[group];
  if (in.dtype != out.dtype || in.numElements() != out.numElements())
    fatal(op + ": operand " + shapeString(in) + " and result " +
          shapeString(out) + " differ");
  MPI_Datatype type = sumType(in.dtype, op);
  int ticket = 0;
  Pending &p = acquire(ticket);
  p.what = op;
  p.where = "over " + g.label;
  p.requests.emplace_back();
  check(MPI_Iallreduce(in.data, out.data, countOf(in.numElements(), op), type,
                       largest ? MPI_MAX : MPI_SUM, g.comm,
                       &p.requests.back()),
        op, "MPI_Iallreduce");
  return started(ticket);
}

int Comm::startAllGather(int group, const TensorRef &in, const TensorRef &out,
                         std::int64_t axis, const char *what) {
  if (transport_)
    return started(transport_->allGather(group, in, out, axis, what));
  std::string op = name(what);
  if (group < 0 || group >= static_cast<int>(groups_.size()))
    fatal(op + ": no group #" + std::to_string(group));
  Group &g = *groups_[group];
  const auto members = static_cast<std::int64_t>(g.members.size());
  checkShapes(op, in, out, axis, members, 1);
  const std::int64_t outer = product(in, 0, static_cast<int>(axis));
  const std::size_t inBytes = in.byteSize();
  const std::size_t chunk =
      product(in, static_cast<int>(axis), in.rank) * byteWidth(in.dtype);
  int ticket = 0;
  Pending &p = acquire(ticket);
  p.what = op;
  p.where = "over " + g.label;
  // Member t's input lands as block t of a [T][in] buffer; along an inner
  // axis that buffer is then transposed into [outer][T][inner].
  unsigned char *gathered =
      outer == 1 ? bytesOf(out) : scratch(p.recvScratch, members * inBytes);
  MPI_Datatype type = moveType(in.dtype);
  int count = countOf(in.numElements(), op);
  p.requests.emplace_back();
  check(MPI_Iallgather(in.data, count, type, gathered, count, type, g.comm,
                       &p.requests.back()),
        op, "MPI_Iallgather");
  if (outer != 1) {
    unsigned char *result = bytesOf(out);
    p.finish = [gathered, result, members, outer, chunk] {
      transposeChunks(gathered, result, members, outer, chunk);
    };
  }
  return started(ticket);
}

int Comm::startReduceScatterSum(int group, const TensorRef &in,
                                const TensorRef &out, std::int64_t axis,
                                const char *what) {
  if (transport_)
    return started(transport_->reduceScatterSum(group, in, out, axis, what));
  std::string op = name(what);
  if (group < 0 || group >= static_cast<int>(groups_.size()))
    fatal(op + ": no group #" + std::to_string(group));
  Group &g = *groups_[group];
  const auto members = static_cast<std::int64_t>(g.members.size());
  checkShapes(op, in, out, axis, 1, members);
  MPI_Datatype type = sumType(in.dtype, op);
  const std::int64_t outer = product(in, 0, static_cast<int>(axis));
  const std::size_t chunk =
      product(out, static_cast<int>(axis), out.rank) * byteWidth(out.dtype);
  int ticket = 0;
  Pending &p = acquire(ticket);
  p.what = op;
  p.where = "over " + g.label;
  // Block j (slice j along `axis`, out's shape) must be contiguous for
  // MPI_Reduce_scatter_block: [outer][T][inner] becomes [T][outer][inner].
  const unsigned char *packed = bytesOf(in);
  if (outer != 1) {
    unsigned char *buffer = scratch(p.sendScratch, in.byteSize());
    transposeChunks(bytesOf(in), buffer, outer, members, chunk);
    packed = buffer;
  }
  p.requests.emplace_back();
  check(MPI_Ireduce_scatter_block(packed, out.data,
                                  countOf(out.numElements(), op), type, MPI_SUM,
                                  g.comm, &p.requests.back()),
        op, "MPI_Ireduce_scatter_block");
  return started(ticket);
}

int Comm::startAllToAll(int group, const TensorRef &in, const TensorRef &out,
                        std::int64_t splitAxis, std::int64_t concatAxis,
                        const char *what) {
  if (transport_)
    return started(
        transport_->allToAll(group, in, out, splitAxis, concatAxis, what));
  std::string op = name(what);
  if (group < 0 || group >= static_cast<int>(groups_.size()))
    fatal(op + ": no group #" + std::to_string(group));
  Group &g = *groups_[group];
  const auto members = static_cast<std::int64_t>(g.members.size());
  // The block every member sends to every other: in with splitAxis divided
  // by the group size; out is that block with concatAxis multiplied by it.
  TensorRef block = in;
  bool ok = in.rank == out.rank && in.dtype == out.dtype && splitAxis >= 0 &&
            splitAxis < in.rank && concatAxis >= 0 && concatAxis < in.rank &&
            in.shape[splitAxis] % members == 0;
  if (ok) {
    block.shape[splitAxis] /= members;
    for (int i = 0; ok && i < in.rank; ++i)
      ok = out.shape[i] ==
           (i == concatAxis ? block.shape[i] * members : block.shape[i]);
  }
  if (!ok)
    fatal(op + ": operand " + shapeString(in) + " and result " +
          shapeString(out) + " do not match a split along axis " +
          std::to_string(splitAxis) + " and a concatenation along axis " +
          std::to_string(concatAxis) + " over a group of " +
          std::to_string(members) + " ranks");
  const std::int64_t splitOuter = product(in, 0, static_cast<int>(splitAxis));
  const std::int64_t concatOuter =
      product(block, 0, static_cast<int>(concatAxis));
  int ticket = 0;
  Pending &p = acquire(ticket);
  p.what = op;
  p.where = "over " + g.label;

  // Send side: [outer][T][inner] packed into [T][outer][inner].
  const unsigned char *sendBuffer = bytesOf(in);
  if (splitOuter != 1) {
    unsigned char *buffer = scratch(p.sendScratch, in.byteSize());
    transposeChunks(bytesOf(in), buffer, splitOuter, members,
                    product(block, static_cast<int>(splitAxis), block.rank) *
                        byteWidth(in.dtype));
    sendBuffer = buffer;
  }
  // Receive side: [T][outer][inner] unpacked into [outer][T][inner].
  unsigned char *recvBuffer =
      concatOuter == 1 ? bytesOf(out) : scratch(p.recvScratch, out.byteSize());
  MPI_Datatype type = moveType(in.dtype);
  int count = countOf(block.numElements(), op);
  p.requests.emplace_back();
  check(MPI_Ialltoall(sendBuffer, count, type, recvBuffer, count, type, g.comm,
                      &p.requests.back()),
        op, "MPI_Ialltoall");
  if (concatOuter != 1) {
    unsigned char *result = bytesOf(out);
    const std::size_t chunk =
        product(block, static_cast<int>(concatAxis), block.rank) *
        byteWidth(in.dtype);
    p.finish = [recvBuffer, result, members, concatOuter, chunk] {
      transposeChunks(recvBuffer, result, members, concatOuter, chunk);
    };
  }
  return started(ticket);
}

//===----------------------------------------------------------------------===//
// Point to point and the world
//===----------------------------------------------------------------------===//

int Comm::startSend(int peerRank, const TensorRef &in, const char *what) {
  if (transport_)
    return started(transport_->send(peerRank, in, what));
  std::string op = name(what);
  checkPeer(peerRank, size_, op);
  int ticket = 0;
  Pending &p = acquire(ticket);
  p.what = op;
  p.where = "to rank " + std::to_string(peerRank);
  postSends(worldComm, peerRank, in.data, in.byteSize(), 0, op, p.requests);
  return started(ticket);
}

int Comm::startRecv(int peerRank, const TensorRef &out, const char *what) {
  if (transport_)
    return started(transport_->recv(peerRank, out, what));
  std::string op = name(what);
  checkPeer(peerRank, size_, op);
  int ticket = 0;
  Pending &p = acquire(ticket);
  p.what = op;
  p.where = "from rank " + std::to_string(peerRank);
  postRecvs(worldComm, peerRank, out.data, out.byteSize(), 0, op, p.requests,
            p.expected);
  return started(ticket);
}

void Comm::sendBytes(int peerRank, const void *data, std::size_t bytes, int tag,
                     const char *what) {
  std::string op = name(what);
  checkPeer(peerRank, size_, op);
  std::vector<MPI_Request> requests;
  postSends(bytesComm, peerRank, data, bytes, tag, op, requests);
  complete(requests, op, "to rank " + std::to_string(peerRank),
           timeoutSeconds_);
}

void Comm::recvBytes(int peerRank, void *data, std::size_t bytes, int tag,
                     const char *what) {
  std::string op = name(what);
  checkPeer(peerRank, size_, op);
  std::vector<MPI_Request> requests;
  std::vector<std::size_t> expected;
  postRecvs(bytesComm, peerRank, data, bytes, tag, op, requests, expected);
  std::string where = "from rank " + std::to_string(peerRank);
  checkReceived(complete(requests, op, where, timeoutSeconds_), expected, op,
                where);
}

void Comm::barrier(const char *what) {
  std::string op = name(what);
  MPI_Request request;
  check(MPI_Ibarrier(worldComm, &request), op, "MPI_Ibarrier");
  completeOne(request, op, "over all " + std::to_string(size_) + " ranks",
              timeoutSeconds_);
}

std::vector<std::uint64_t> Comm::allGatherWorld(std::uint64_t value,
                                                const char *what) {
  std::string op = name(what);
  std::vector<std::uint64_t> values(size_);
  MPI_Request request;
  check(MPI_Iallgather(&value, 1, MPI_UINT64_T, values.data(), 1, MPI_UINT64_T,
                       worldComm, &request),
        op, "MPI_Iallgather");
  completeOne(request, op, "over all " + std::to_string(size_) + " ranks",
              timeoutSeconds_);
  return values;
}

} // namespace meshc::rt
