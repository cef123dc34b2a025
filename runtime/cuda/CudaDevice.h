//===- CudaDevice.h - The rank's GPU, inside the runtime --------*- C++ -*-===//
//
// Part of meshc. Internal to runtime/cuda (generated code never includes
// it): the device this process drives, its stream, its cuBLASLt handle and
// workspace, and the slot where kernels record a data-dependent error. One
// GPU per process (the local rank picks it), one compute stream that every
// kernel of the program is enqueued on, in program order (the collectives
// run on a communication stream of their own, see runtime/comm/nccl_comm.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_RUNTIME_CUDA_CUDADEVICE_H
#define MESHC_RUNTIME_CUDA_CUDADEVICE_H

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace meshc::rt::cuda {

/// How matmul and linear compute f32/f16/bf16 products.
enum class GemmPath {
  /// cuBLASLt, and meshc's own GEMM kernel only for what it refuses (the
  /// default).
  CublasLt,
  /// meshc's own GEMM kernel for every product, and no cuBLASLt handle at
  /// all (MESHC_CUDA_GEMM=fallback): so that every other kernel can be
  /// tested where cuBLASLt cannot run, such as a GPU simulator.
  Fallback,
};
/// The path the environment variable MESHC_CUDA_GEMM selects, read once per
/// process (so that every product of a run takes the same path); an unknown
/// value is fatal (parseGemmPath).
GemmPath gemmPath();
/// The path a value of MESHC_CUDA_GEMM selects: unset or empty and
/// "cublaslt" the default, "fallback" meshc's kernel; anything else is fatal,
/// naming the variable and the accepted values. Apart from gemmPath(), which
/// reads the environment once, so that a test can check it without a GPU.
GemmPath parseGemmPath(const char *value);

/// Picks GPU `localRank` of this node and sets up the stream, the cuBLASLt
/// handle (unless gemmPath() is Fallback) and the error slot. A node with no
/// usable GPU, or fewer GPUs than `localSize` ranks on it, is fatal with a
/// message naming both.
void initDevice(int localRank, int localSize);
/// Releases what initDevice made (a no-op when it was not called).
void shutdownDevice();
/// Whether initDevice succeeded in this process.
bool deviceReady();

cudaStream_t stream();
/// The cuBLASLt handle; nullptr when gemmPath() is Fallback.
cublasLtHandle_t blasLt();
/// A cuBLASLt workspace on the device, of workspaceBytes() bytes (nullptr
/// when gemmPath() is Fallback).
void *workspace();
std::size_t workspaceBytes();

/// Kinds of data-dependent errors a kernel records in the error slot.
enum class DeviceError : std::int64_t {
  None = 0,
  GatherIndex = 1,    ///< gather: index outside [-n, n)
  EmbeddingId = 2,    ///< embedding: id outside [-vocab, vocab)
  ScatterIndex = 3,   ///< scatterND: index outside its dimension
  RotaryPosition = 4, ///< rotary: position outside the cos/sin cache
  DivisionByZero = 5, ///< div: an integer divided by zero
};
/// Device pointer to three int64: kind, offending value, bound. A kernel
/// stores the first error with atomicCAS on the kind (0 -> kind) and then
/// the other two.
std::int64_t *errorSlot();

/// Fatal unless `status` is cudaSuccess, naming `what` and CUDA's message.
void check(cudaError_t status, const char *what);
/// Fatal unless `status` is CUBLAS_STATUS_SUCCESS.
void checkBlas(cublasStatus_t status, const char *what);
/// Checks the launch just made (cudaGetLastError) naming the kernel.
void checkLaunch(const char *kernel);
/// Waits for the stream; an asynchronous CUDA error or a kernel's recorded
/// data error is fatal, naming `what` (and the kernel for data errors).
void synchronize(const char *what);

/// Device memory (fatal, naming `what` and the bytes, when it runs out).
void *deviceAlloc(std::size_t bytes, const char *what);
void deviceFree(void *pointer);
/// Copies on the stream and waits for them.
void copyToDevice(void *device, const void *host, std::size_t bytes);
void copyToHost(void *host, const void *device, std::size_t bytes);

} // namespace meshc::rt::cuda

#endif // MESHC_RUNTIME_CUDA_CUDADEVICE_H
