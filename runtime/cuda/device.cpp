//===- device.cpp - The rank's GPU ----------------------------------------===//
//
// Part of meshc. Implements CudaDevice.h: picks the node-local GPU, makes the
// compute stream every kernel of the program runs on, the cuBLASLt
// handle and workspace (unless MESHC_CUDA_GEMM=fallback keeps cuBLASLt out
// of the process), and the device slot where kernels record a
// data-dependent error, which synchronize() turns into one message.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaDevice.h"

#include "meshc/runtime/error.h"

#include <cstdlib>
#include <cstring>
#include <string>

namespace meshc::rt::cuda {
namespace {

struct Device {
  bool ready = false;
  int index = -1;
  cudaStream_t stream = nullptr;
  cublasLtHandle_t blasLt = nullptr;
  void *workspace = nullptr;
  std::int64_t *errorSlot = nullptr;
};
Device device;

/// 32 MiB: what cuBLASLt's heuristics want for large GEMMs on sm_90.
constexpr std::size_t kWorkspaceBytes = std::size_t(32) << 20;

std::string describe(cudaError_t status) {
  return std::string(cudaGetErrorName(status)) + ": " +
         cudaGetErrorString(status);
}

const char *errorKernel(DeviceError kind) {
  switch (kind) {
  case DeviceError::GatherIndex:
    return "gather: index";
  case DeviceError::EmbeddingId:
    return "embedding: token id";
  case DeviceError::ScatterIndex:
    return "scatterND: index";
  case DeviceError::RotaryPosition:
    return "rotary: position";
  case DeviceError::DivisionByZero:
    return "div: integer division by zero";
  case DeviceError::None:
    break;
  }
  return "a kernel: value";
}

} // namespace

GemmPath parseGemmPath(const char *value) {
  if (!value || !*value || std::strcmp(value, "cublaslt") == 0)
    return GemmPath::CublasLt;
  if (std::strcmp(value, "fallback") == 0)
    return GemmPath::Fallback;
  fatal(std::string("MESHC_CUDA_GEMM=") + value +
        " is not understood: accepted values are 'cublaslt' (the default: "
        "matmul and linear through cuBLASLt) and 'fallback' (meshc's own "
        "GEMM kernel instead of cuBLASLt)");
}

GemmPath gemmPath() {
  static const GemmPath path = parseGemmPath(std::getenv("MESHC_CUDA_GEMM"));
  return path;
}

void check(cudaError_t status, const char *what) {
  if (status != cudaSuccess)
    fatal(std::string(what) + " failed on GPU " + std::to_string(device.index) +
          " (" + describe(status) + ")");
}

void checkBlas(cublasStatus_t status, const char *what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    fatal(std::string(what) + " failed on GPU " + std::to_string(device.index) +
          " (cuBLASLt status " + std::to_string(static_cast<int>(status)) +
          ")");
}

void checkLaunch(const char *kernel) {
  cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess)
    fatal(std::string("launching the ") + kernel + " kernel failed (" +
          describe(status) + ")");
}

void initDevice(int localRank, int localSize) {
  if (device.ready)
    return;
  // Read first, so that a mistyped value stops the run before any GPU work.
  const GemmPath gemm = gemmPath();
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0)
    fatal("no usable CUDA GPU on this node (" +
          (status != cudaSuccess ? describe(status)
                                 : std::string("cudaGetDeviceCount found 0")) +
          "); the cuda target needs one GPU per rank (compile with --target "
          "cpu to run without one)");
  if (localSize > count)
    fatal(std::to_string(localSize) + " ranks run on this node but it has " +
          std::to_string(count) +
          " GPU(s); the cuda target needs one GPU per rank (fewer ranks per "
          "node, e.g. mpirun --map-by ppr:" +
          std::to_string(count) + ":node)");
  device.index = localRank;
  check(cudaSetDevice(localRank), "cudaSetDevice");
  check(cudaStreamCreateWithFlags(&device.stream, cudaStreamNonBlocking),
        "cudaStreamCreate");
  if (gemm == GemmPath::CublasLt) {
    checkBlas(cublasLtCreate(&device.blasLt), "cublasLtCreate");
    device.workspace = deviceAlloc(kWorkspaceBytes, "the cuBLASLt workspace");
  }
  device.errorSlot = static_cast<std::int64_t *>(
      deviceAlloc(3 * sizeof(std::int64_t), "the error slot"));
  check(cudaMemsetAsync(device.errorSlot, 0, 3 * sizeof(std::int64_t),
                        device.stream),
        "cudaMemsetAsync");
  device.ready = true;
}

void shutdownDevice() {
  if (!device.ready)
    return;
  // Errors on the way out are not reported: the results are written.
  cudaStreamSynchronize(device.stream);
  cudaFree(device.workspace);
  cudaFree(device.errorSlot);
  if (device.blasLt)
    cublasLtDestroy(device.blasLt);
  cudaStreamDestroy(device.stream);
  device = Device();
}

bool deviceReady() { return device.ready; }
cudaStream_t stream() { return device.stream; }
cublasLtHandle_t blasLt() { return device.blasLt; }
void *workspace() { return device.workspace; }
std::size_t workspaceBytes() { return kWorkspaceBytes; }
std::int64_t *errorSlot() { return device.errorSlot; }

void synchronize(const char *what) {
  check(cudaStreamSynchronize(device.stream), what);
  std::int64_t slot[3] = {0, 0, 0};
  check(
      cudaMemcpy(slot, device.errorSlot, sizeof(slot), cudaMemcpyDeviceToHost),
      what);
  auto kind = static_cast<DeviceError>(slot[0]);
  if (kind == DeviceError::DivisionByZero)
    fatal(std::string(errorKernel(kind)) + " (" + std::to_string(slot[1]) +
          " / 0, during " + what + ")");
  if (kind != DeviceError::None)
    fatal(std::string(errorKernel(kind)) + " " + std::to_string(slot[1]) +
          " is outside [-" + std::to_string(slot[2]) + ", " +
          std::to_string(slot[2]) + ") (during " + what + ")");
}

void *deviceAlloc(std::size_t bytes, const char *what) {
  void *pointer = nullptr;
  cudaError_t status = cudaMalloc(&pointer, bytes ? bytes : 64);
  if (status != cudaSuccess) {
    std::size_t free = 0, total = 0;
    cudaMemGetInfo(&free, &total);
    fatal("cannot allocate " + std::to_string(bytes) + " bytes for " + what +
          " on GPU " + std::to_string(device.index) + " (" +
          std::to_string(free >> 20) + " MiB free of " +
          std::to_string(total >> 20) + " MiB; " + describe(status) + ")");
  }
  return pointer;
}

void deviceFree(void *pointer) {
  if (pointer)
    cudaFree(pointer);
}

void copyToDevice(void *deviceAddress, const void *host, std::size_t bytes) {
  if (!bytes)
    return;
  check(cudaMemcpyAsync(deviceAddress, host, bytes, cudaMemcpyHostToDevice,
                        device.stream),
        "copying to the GPU");
  check(cudaStreamSynchronize(device.stream), "copying to the GPU");
}

void copyToHost(void *host, const void *deviceAddress, std::size_t bytes) {
  if (!bytes)
    return;
  check(cudaMemcpyAsync(host, deviceAddress, bytes, cudaMemcpyDeviceToHost,
                        device.stream),
        "copying from the GPU");
  check(cudaStreamSynchronize(device.stream), "copying from the GPU");
}

} // namespace meshc::rt::cuda
