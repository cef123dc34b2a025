//===- CommTest.cpp - The MPI backend under several ranks -----------------===//
//
// Part of meshc. Runs as 4 ranks under mpirun (see CMakeLists.txt): every rank
// runs every test, in the same order, because each test is a sequence of
// collectives; expected values are computed from rank-dependent fills. Only
// rank 0 prints gtest's report; the other ranks print their failures alone,
// and the exit code is non-zero on every rank when any rank failed.
//
// `--hang-test`: rank 1 skips an all-reduce that the others enter, with a
// timeout of 1 s; the job must end within seconds, non-zero, with a message
// containing "did not complete within" (a ctest entry of its own, since it
// aborts the job).
//
//===----------------------------------------------------------------------===//
#include "meshc/runtime/comm.h"
#include "meshc/runtime/error.h"

#include <gtest/gtest.h>
// Only MPI's C interface: the deprecated C++ bindings need libmpi_cxx.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <unistd.h>

using namespace meshc::rt;

namespace {

Comm *theComm = nullptr;
Comm &comm() { return *theComm; }

/// A short timeout, so that a test that desynchronises the ranks aborts the
/// job quickly instead of after the default 300 s.
constexpr double kTestTimeout = 60;

/// A dense tensor owning its elements, viewed as a TensorRef.
template <typename T> struct Buffer {
  std::vector<T> values;
  TensorRef ref;
  Buffer(DType dtype, std::vector<std::int64_t> shape) {
    ref.dtype = dtype;
    ref.rank = static_cast<int>(shape.size());
    std::int64_t n = 1;
    for (int i = 0; i < ref.rank; ++i)
      n *= ref.shape[i] = shape[i];
    values.assign(n, T(-1));
    ref.data = values.data();
  }
};

/// A fill that tells every rank's element apart: rank * 1000 + flat index.
template <typename T> void fillRank(Buffer<T> &b, int rank) {
  for (std::size_t i = 0; i < b.values.size(); ++i)
    b.values[i] = static_cast<T>(rank * 1000 + static_cast<int>(i));
}

/// The global ranks of a group in group order, learnt through the group
/// itself: an all-gather of each member's rank.
std::vector<std::int64_t> membersOf(int group, int groupSize) {
  Buffer<std::int64_t> in(DType::I64, {1}), out(DType::I64, {groupSize});
  in.values[0] = comm().rank();
  comm().allGather(group, in.ref, out.ref, 0, "members");
  return out.values;
}

/// Makes rt::fatal throw instead of aborting the job, and captures what it
/// prints (stderr) so that a test can check the message; the destructor
/// restores stderr and a job-aborting handler.
class FatalThrows {
public:
  FatalThrows() {
    std::fflush(stderr);
    savedStderr_ = dup(STDERR_FILENO);
    capture_ = std::tmpfile();
    dup2(fileno(capture_), STDERR_FILENO);
    setFatalHandler([] { throw std::runtime_error("fatal"); });
  }
  ~FatalThrows() {
    setFatalHandler([] { MPI_Abort(MPI_COMM_WORLD, 1); });
    std::fflush(stderr);
    dup2(savedStderr_, STDERR_FILENO);
    close(savedStderr_);
    std::fclose(capture_);
  }
  /// Everything printed to stderr since the last call.
  std::string messages() {
    std::fflush(stderr);
    std::string text;
    std::rewind(capture_);
    for (int c; (c = std::fgetc(capture_)) != EOF;)
      text += static_cast<char>(c);
    std::fclose(capture_);
    capture_ = std::tmpfile();
    dup2(fileno(capture_), STDERR_FILENO);
    return text;
  }

private:
  int savedStderr_;
  std::FILE *capture_;
};

class CommTest : public ::testing::Test {
protected:
  void SetUp() override {
    comm().setTimeout(kTestTimeout);
    ASSERT_EQ(comm().size(), 4) << "run under mpirun -np 4";
  }
};

TEST_F(CommTest, GridCoordinates) {
  comm().setGrid({2, 2});
  EXPECT_EQ(comm().coordinate(0), comm().rank() / 2);
  EXPECT_EQ(comm().coordinate(1), comm().rank() % 2);
  comm().setGrid({4});
  EXPECT_EQ(comm().coordinate(0), comm().rank());
  comm().setGrid({1, 2, 2});
  EXPECT_EQ(comm().coordinate(0), 0);
  EXPECT_EQ(comm().coordinate(2), comm().rank() % 2);
}

TEST_F(CommTest, SetGridRejectsAWrongWorld) {
  FatalThrows throws;
  EXPECT_THROW(comm().setGrid({3}), std::runtime_error);
  EXPECT_EQ(throws.messages(),
            "meshc: rank " + std::to_string(comm().rank()) +
                ": error: the program was compiled for a mesh of 3 ranks "
                "(grid 3) but runs on 4 ranks\n");
  EXPECT_THROW(comm().setGrid({2, 4}), std::runtime_error);
  EXPECT_NE(throws.messages().find("8 ranks (grid 2x4) but runs on 4"),
            std::string::npos);
}

TEST_F(CommTest, Peer) {
  comm().setGrid({2, 2});
  int a = comm().rank() / 2, b = comm().rank() % 2;
  EXPECT_EQ(comm().peer({1}, {1 - b}), a * 2 + (1 - b));
  EXPECT_EQ(comm().peer({0}, {1 - a}), (1 - a) * 2 + b);
  EXPECT_EQ(comm().peer({0, 1}, {1, 0}), 2);
  EXPECT_EQ(comm().peer({1, 0}, {1, 0}), 1);
  EXPECT_EQ(comm().peer({}, {}), comm().rank());
}

TEST_F(CommTest, GroupOrder) {
  comm().setGrid({2, 2});
  std::int64_t a = comm().rank() / 2, b = comm().rank() % 2;
  int g0 = comm().openGroup({0});
  int g1 = comm().openGroup({1});
  int g01 = comm().openGroup({0, 1});
  int g10 = comm().openGroup({1, 0});
  int none = comm().openGroup({});
  EXPECT_EQ(membersOf(g0, 2), (std::vector<std::int64_t>{b, 2 + b}));
  EXPECT_EQ(membersOf(g1, 2), (std::vector<std::int64_t>{2 * a, 2 * a + 1}));
  EXPECT_EQ(membersOf(g01, 4), (std::vector<std::int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(membersOf(g10, 4), (std::vector<std::int64_t>{0, 2, 1, 3}));
  EXPECT_EQ(membersOf(none, 1), (std::vector<std::int64_t>{comm().rank()}));
}

TEST_F(CommTest, AllReduceSumF32) {
  comm().setGrid({4});
  int world = comm().openGroup({0});
  Buffer<float> in(DType::F32, {5}), out(DType::F32, {5});
  fillRank(in, comm().rank());
  comm().allReduceSum(world, in.ref, out.ref, "all_reduce f32");
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(out.values[i], 6000.0f + 4 * i);

  // Over the minor axis of a 2x2 grid: the pair {2a, 2a+1}.
  comm().setGrid({2, 2});
  int pairs = comm().openGroup({1});
  Buffer<float> in2(DType::F32, {2, 3}), out2(DType::F32, {2, 3});
  fillRank(in2, comm().rank());
  comm().allReduceSum(pairs, in2.ref, out2.ref, "all_reduce pairs");
  int a = comm().rank() / 2;
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(out2.values[i], (2 * a + 2 * a + 1) * 1000.0f + 2 * i);
}

// The largest over the group, element by element (a reduce_max over a split
// axis: a dynamic quantization's range), of a scalar and a vector whose
// largest element lies on different ranks.
TEST_F(CommTest, AllReduceMaxF32) {
  comm().setGrid({2, 2});
  int world = comm().openGroup({0, 1});
  Buffer<float> in(DType::F32, {}), out(DType::F32, {});
  in.values[0] = comm().rank() == 2 ? 7.5f : -1.0f * comm().rank();
  comm().allReduceMax(world, in.ref, out.ref, "all_reduce max scalar");
  EXPECT_EQ(out.values[0], 7.5f);

  // Over the major axis: the pair {b, 2 + b}; element i largest on the rank
  // whose row is i % 2.
  int column = comm().openGroup({0});
  Buffer<float> in2(DType::F32, {4}), out2(DType::F32, {4});
  int row = comm().rank() / 2, b = comm().rank() % 2;
  for (int i = 0; i < 4; ++i)
    in2.values[i] = (i % 2 == row ? 100.0f : -100.0f) + i + 10 * b;
  const int ticket =
      comm().startAllReduceMax(column, in2.ref, out2.ref, "all_reduce max");
  comm().wait(ticket);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(out2.values[i], 100.0f + i + 10 * b);
}

TEST_F(CommTest, AllReduceSumIntegers) {
  comm().setGrid({4});
  int world = comm().openGroup({0});
  Buffer<std::int64_t> in(DType::I64, {3}), out(DType::I64, {3});
  for (int i = 0; i < 3; ++i)
    in.values[i] = (std::int64_t(1) << 40) * (comm().rank() + 1) + i;
  comm().allReduceSum(world, in.ref, out.ref, "all_reduce i64");
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(out.values[i], (std::int64_t(1) << 40) * 10 + 4 * i);

  Buffer<std::int32_t> in32(DType::I32, {}), out32(DType::I32, {});
  in32.values[0] = -comm().rank();
  comm().allReduceSum(world, in32.ref, out32.ref, "all_reduce i32 scalar");
  EXPECT_EQ(out32.values[0], -6);

  // A group of one is the identity.
  int self = comm().openGroup({});
  comm().allReduceSum(self, in.ref, out.ref, "all_reduce self");
  EXPECT_EQ(out.values, in.values);
}

TEST_F(CommTest, AllReduceSumRejects) {
  comm().setGrid({4});
  int world = comm().openGroup({0});
  FatalThrows throws;
  Buffer<std::uint16_t> half(DType::F16, {4}), halfOut(DType::F16, {4});
  EXPECT_THROW(comm().allReduceSum(world, half.ref, halfOut.ref, "f16"),
               std::runtime_error);
  EXPECT_NE(throws.messages().find("not supported on the cpu target"),
            std::string::npos);
  Buffer<float> in(DType::F32, {4}), out(DType::F32, {5});
  EXPECT_THROW(comm().allReduceSum(world, in.ref, out.ref, "shapes"),
               std::runtime_error);
  EXPECT_NE(throws.messages().find("shapes: operand F32[4] and result F32[5]"),
            std::string::npos);
  Buffer<float> big(DType::F32, {4, 3}), gathered(DType::F32, {4, 6});
  EXPECT_THROW(comm().allGather(world, big.ref, gathered.ref, 1, "gather"),
               std::runtime_error);
  EXPECT_NE(throws.messages().find("do not match along axis 1"),
            std::string::npos);
}

TEST_F(CommTest, AllGatherAxis0) {
  comm().setGrid({4});
  int world = comm().openGroup({0});
  Buffer<float> in(DType::F32, {2, 3}), out(DType::F32, {8, 3});
  fillRank(in, comm().rank());
  comm().allGather(world, in.ref, out.ref, 0, "all_gather axis 0");
  for (int t = 0; t < 4; ++t)
    for (int i = 0; i < 6; ++i)
      EXPECT_EQ(out.values[t * 6 + i], t * 1000.0f + i) << t << " " << i;
}

TEST_F(CommTest, AllGatherMiddleAndLastAxis) {
  // The group {1, 0} of a 2x2 grid orders the world 0, 2, 1, 3.
  comm().setGrid({2, 2});
  int g = comm().openGroup({1, 0});
  const int members[] = {0, 2, 1, 3};
  Buffer<std::int32_t> in(DType::I32, {2, 3, 2}), out(DType::I32, {2, 12, 2});
  fillRank(in, comm().rank());
  comm().allGather(g, in.ref, out.ref, 1, "all_gather axis 1");
  for (int o = 0; o < 2; ++o)
    for (int t = 0; t < 4; ++t)
      for (int k = 0; k < 3; ++k)
        for (int i = 0; i < 2; ++i)
          EXPECT_EQ(out.values[(o * 12 + t * 3 + k) * 2 + i],
                    members[t] * 1000 + (o * 3 + k) * 2 + i);

  Buffer<std::int64_t> in2(DType::I64, {3, 2}), out2(DType::I64, {3, 8});
  fillRank(in2, comm().rank());
  comm().allGather(g, in2.ref, out2.ref, 1, "all_gather last axis");
  for (int o = 0; o < 3; ++o)
    for (int t = 0; t < 4; ++t)
      for (int i = 0; i < 2; ++i)
        EXPECT_EQ(out2.values[o * 8 + t * 2 + i],
                  members[t] * 1000 + o * 2 + i);
}

TEST_F(CommTest, ReduceScatterSumAxis0) {
  comm().setGrid({4});
  int world = comm().openGroup({0});
  Buffer<float> in(DType::F32, {8, 3}), out(DType::F32, {2, 3});
  fillRank(in, comm().rank());
  comm().reduceScatterSum(world, in.ref, out.ref, 0, "reduce_scatter axis 0");
  int g = comm().rank();
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      EXPECT_EQ(out.values[i * 3 + j], 6000.0f + 4 * ((g * 2 + i) * 3 + j));
}

TEST_F(CommTest, ReduceScatterSumLastAxis) {
  // Pairs along grid axis 0: {b, 2 + b}, group index a.
  comm().setGrid({2, 2});
  int group = comm().openGroup({0});
  int a = comm().rank() / 2, b = comm().rank() % 2;
  Buffer<std::int64_t> in(DType::I64, {2, 3, 4}), out(DType::I64, {2, 3, 2});
  fillRank(in, comm().rank());
  comm().reduceScatterSum(group, in.ref, out.ref, 2, "reduce_scatter last");
  for (int o = 0; o < 6; ++o)
    for (int c = 0; c < 2; ++c)
      EXPECT_EQ(out.values[o * 2 + c],
                (b + 2 + b) * 1000 + 2 * (o * 4 + a * 2 + c));
}

TEST_F(CommTest, AllToAll) {
  comm().setGrid({4});
  int world = comm().openGroup({0});
  int g = comm().rank();
  // in [2][8][3], split along 1 into blocks [2][2][3], concatenated along 0.
  Buffer<float> in(DType::F32, {2, 8, 3}), out(DType::F32, {8, 2, 3});
  fillRank(in, comm().rank());
  comm().allToAll(world, in.ref, out.ref, 1, 0, "all_to_all 1->0");
  for (int t = 0; t < 4; ++t)
    for (int a = 0; a < 2; ++a)
      for (int k = 0; k < 2; ++k)
        for (int c = 0; c < 3; ++c)
          EXPECT_EQ(out.values[((t * 2 + a) * 2 + k) * 3 + c],
                    t * 1000.0f + (a * 8 + g * 2 + k) * 3 + c);

  // Split along 0 into [1][3][4], concatenated along the last axis.
  Buffer<std::int32_t> in2(DType::I32, {4, 3, 4}), out2(DType::I32, {1, 3, 16});
  fillRank(in2, comm().rank());
  comm().allToAll(world, in2.ref, out2.ref, 0, 2, "all_to_all 0->2");
  for (int r = 0; r < 3; ++r)
    for (int t = 0; t < 4; ++t)
      for (int c = 0; c < 4; ++c)
        EXPECT_EQ(out2.values[r * 16 + t * 4 + c],
                  t * 1000 + (g * 3 + r) * 4 + c);

  // The same axis: block j of the result comes from member j.
  Buffer<std::int64_t> in3(DType::I64, {2, 4}), out3(DType::I64, {2, 4});
  fillRank(in3, comm().rank());
  comm().allToAll(world, in3.ref, out3.ref, 1, 1, "all_to_all 1->1");
  for (int o = 0; o < 2; ++o)
    for (int t = 0; t < 4; ++t)
      EXPECT_EQ(out3.values[o * 4 + t], t * 1000 + o * 4 + g);
}

TEST_F(CommTest, SendRecvBetweenPeers) {
  comm().setGrid({2, 2});
  int b = comm().rank() % 2;
  int partner = comm().peer({1}, {1 - b});
  // Large enough for a rendezvous protocol: each side must wait for the
  // other's matching call.
  Buffer<float> mine(DType::F32, {1 << 20}), theirs(DType::F32, {1 << 20});
  std::iota(mine.values.begin(), mine.values.end(), comm().rank() * 10.0f);
  if (b == 0) {
    comm().send(partner, mine.ref, "send");
    comm().recv(partner, theirs.ref, "recv");
  } else {
    comm().recv(partner, theirs.ref, "recv");
    comm().send(partner, mine.ref, "send");
  }
  EXPECT_EQ(theirs.values[0], partner * 10.0f);
  EXPECT_EQ(theirs.values.back(), partner * 10.0f + (1 << 20) - 1);
}

TEST_F(CommTest, SendBytesRing) {
  int rank = comm().rank(), size = comm().size();
  int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  std::string text = "from rank " + std::to_string(rank);
  std::vector<char> got(text.size(), 0);
  std::uint64_t number = 0;
  std::uint64_t mineNumber = 100 + rank;
  // Even ranks send first, odd ranks receive first: no cycle of waits.
  for (int step = 0; step < 2; ++step) {
    if ((rank % 2 == 0) == (step == 0)) {
      comm().sendBytes(next, text.data(), text.size(), 7, "bytes text");
      comm().sendBytes(next, &mineNumber, sizeof mineNumber, 8, "bytes u64");
    } else {
      comm().recvBytes(prev, got.data(), got.size(), 7, "bytes text");
      comm().recvBytes(prev, &number, sizeof number, 8, "bytes u64");
    }
  }
  EXPECT_EQ(std::string(got.begin(), got.end()),
            "from rank " + std::to_string(prev));
  EXPECT_EQ(number, 100u + prev);
}

TEST_F(CommTest, StartedCollectivesInFlightTogether) {
  // An all-gather along an inner axis (unpacked when it completes), an
  // all-reduce, a reduce-scatter along an inner axis (packed when it
  // starts) and an exchange with a partner, all started before any is
  // waited for, then waited for in reverse order.
  comm().setGrid({2, 2});
  int all = comm().openGroup({0, 1});
  int pair = comm().openGroup({1});
  int b = comm().rank() % 2;
  int partner = comm().peer({1}, {1 - b});
  Buffer<std::int32_t> gin(DType::I32, {2, 3}), gout(DType::I32, {2, 12});
  Buffer<float> rin(DType::F32, {5}), rout(DType::F32, {5});
  Buffer<std::int64_t> sin(DType::I64, {3, 4}), sout(DType::I64, {3, 2});
  Buffer<float> mine(DType::F32, {1 << 18}), theirs(DType::F32, {1 << 18});
  fillRank(gin, comm().rank());
  fillRank(rin, comm().rank());
  fillRank(sin, comm().rank());
  std::iota(mine.values.begin(), mine.values.end(), comm().rank() * 10.0f);
  EXPECT_EQ(comm().inFlight(), 0);
  int tickets[] = {
      comm().startAllGather(all, gin.ref, gout.ref, 1, "started all_gather"),
      comm().startAllReduceSum(all, rin.ref, rout.ref, "started all_reduce"),
      comm().startReduceScatterSum(pair, sin.ref, sout.ref, 1,
                                   "started reduce_scatter"),
      comm().startSend(partner, mine.ref, "started send"),
      comm().startRecv(partner, theirs.ref, "started recv"),
  };
  EXPECT_EQ(comm().inFlight(), 5);
  // The operands are packed or sent from where they lie: the caller may
  // not write them before the wait, but what was packed at the start is
  // what arrives.
  for (int i = 4; i >= 0; --i)
    comm().wait(tickets[i]);
  EXPECT_EQ(comm().inFlight(), 0);

  for (int o = 0; o < 2; ++o)
    for (int t = 0; t < 4; ++t)
      for (int i = 0; i < 3; ++i)
        EXPECT_EQ(gout.values[o * 12 + t * 3 + i], t * 1000 + o * 3 + i);
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(rout.values[i], (0 + 1 + 2 + 3) * 1000.0f + 4 * i);
  // The pair {b = 0, b = 1} of this rank's row; member b keeps columns
  // [2b, 2b + 2) of the sum.
  int row = comm().rank() - b;
  for (int o = 0; o < 3; ++o)
    for (int i = 0; i < 2; ++i)
      EXPECT_EQ(sout.values[o * 2 + i],
                row * 1000 + (row + 1) * 1000 + 2 * (o * 4 + 2 * b + i));
  EXPECT_EQ(theirs.values[0], partner * 10.0f);
  EXPECT_EQ(theirs.values.back(), partner * 10.0f + (1 << 18) - 1);

  // Tickets are reused once waited for.
  int again = comm().startAllReduceSum(all, rin.ref, rout.ref, "again");
  comm().wait(again);
  EXPECT_EQ(rout.values[0], 6000.0f);
}

TEST_F(CommTest, WaitForATicketNotInFlight) {
  FatalThrows guard;
  EXPECT_THROW(comm().wait(12345), std::runtime_error);
  EXPECT_NE(guard.messages().find("collective ticket 12345, which is not in "
                                  "flight"),
            std::string::npos);
}

TEST_F(CommTest, AllGatherWorldAndBarrier) {
  std::uint64_t value = (std::uint64_t(1) << 40) + comm().rank() * 7;
  std::vector<std::uint64_t> values = comm().allGatherWorld(value, "world");
  ASSERT_EQ(values.size(), 4u);
  for (int r = 0; r < 4; ++r)
    EXPECT_EQ(values[r], (std::uint64_t(1) << 40) + r * 7);
  comm().barrier("barrier");
}

/// Prints, on ranks other than 0, only what failed, prefixed by the rank.
class FailuresOnly : public ::testing::EmptyTestEventListener {
public:
  explicit FailuresOnly(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult &result) override {
    if (result.failed())
      std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_,
                   result.file_name() ? result.file_name() : "?",
                   result.line_number(), result.summary());
  }
  void OnTestEnd(const ::testing::TestInfo &info) override {
    if (info.result()->Failed())
      std::fprintf(stderr, "[rank %d] FAILED %s.%s\n", rank_,
                   info.test_suite_name(), info.name());
  }

private:
  int rank_;
};

/// Rank 1 leaves the others in an all-reduce; they must abort within about
/// the 1 s timeout.
int runHangTest() {
  comm().setTimeout(1);
  comm().setGrid({4});
  int world = comm().openGroup({0});
  Buffer<float> in(DType::F32, {4}), out(DType::F32, {4});
  if (comm().rank() != 1)
    comm().allReduceSum(world, in.ref, out.ref, "hang-test all_reduce");
  // Rank 1 waits in a barrier the others never reach; it times out too, if
  // the others' abort has not already ended it.
  comm().barrier("hang-test barrier");
  std::printf("hang test: rank %d was not stopped\n", comm().rank());
  Comm::finalize();
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  theComm = &Comm::init(&argc, &argv);
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--hang-test") == 0)
      return runHangTest();

  ::testing::InitGoogleTest(&argc, argv);
  if (comm().rank() != 0) {
    auto &listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailuresOnly(comm().rank()));
  }
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;

  // A failure on any rank fails the job on every rank.
  comm().setTimeout(kTestTimeout);
  std::vector<std::uint64_t> results =
      comm().allGatherWorld(failed, "test results");
  int anyFailed = 0;
  for (std::size_t r = 0; r < results.size(); ++r)
    if (results[r]) {
      anyFailed = 1;
      if (comm().rank() == 0)
        std::fprintf(stderr, "meshc-commtests: rank %zu failed\n", r);
    }
  Comm::finalize();
  return anyFailed;
}
