//===- DriverOptions.h - The meshc command line, one struct a command -*- C++
//-*-===//
//
// Part of meshc. The options of each `meshc` subcommand, declared once as
// the members of a struct (as IREE's Pipelines/Options.h groups its flags):
// options that several commands share live in the struct of what they
// describe (the model, the mesh), bound to each command that takes them.
// Constructing the structs registers the options with llvm::cl; Driver.cpp
// constructs them, parses the command line and hands each command its
// structs.
//
//===----------------------------------------------------------------------===//
#ifndef MESHC_COMPILER_DRIVER_DRIVEROPTIONS_H
#define MESHC_COMPILER_DRIVER_DRIVEROPTIONS_H

#include "compiler/codegen/RankEmitter.h"
#include "compiler/driver/RunTool.h"

#include "llvm/Support/CommandLine.h"

#include <string>

namespace meshc::driver {

namespace cl = llvm::cl;

/// The bounds `meshc compile` applies by default to a model's symbolic
/// batch, sequence and KV-cache dimensions and to an image's height and
/// width (--max-batch, --max-seq, --max-cache, --max-image).
inline constexpr unsigned kDefaultMaxBatch = 8, kDefaultMaxSeq = 512,
                          kDefaultMaxCache = 512, kDefaultMaxImage = 512;

/// The subcommands and the option category every meshc option belongs to.
struct Commands {
  cl::OptionCategory category{"meshc options"};
  cl::SubCommand import{"import", "Import an ONNX model into dfg IR"};
  cl::SubCommand plan{"plan", "Print the per-rank cost and memory plan of a "
                              "model on a device mesh"};
  cl::SubCommand compile{"compile", "Compile a model into per-rank "
                                    "executables for a device mesh"};
  cl::SubCommand run{"run", "Launch a compiled model's ranks and write its "
                            "outputs"};
  cl::SubCommand generate{"generate",
                          "Generate tokens with a compiled decoder: prefill "
                          "and every decoding step in one launch, the KV "
                          "cache kept on the ranks"};
  cl::opt<bool> supportedOps{
      "supported-ops",
      cl::desc("List the ONNX ops meshc imports: domain, op type and the "
               "opset versions from which each legalisation applies"),
      cl::cat(category)};
};

/// The model a command reads and the sizes given to its symbolic inputs
/// (import, plan, compile).
struct ModelOptions {
  explicit ModelOptions(Commands &c)
      : path(cl::Positional, cl::Required, cl::desc("<model.onnx>"),
             cl::sub(c.import), cl::sub(c.plan), cl::sub(c.compile),
             cl::cat(c.category)),
        dims("dim",
             cl::desc("Give a symbolic input dimension (an ONNX dim_param "
                      "such as batch_size or sequence_length) a fixed size; "
                      "repeatable or comma-separated. Exporters' shape "
                      "arithmetic on it then folds to constants"),
             cl::value_desc("name=size"), cl::CommaSeparated, cl::sub(c.import),
             cl::sub(c.plan), cl::sub(c.compile), cl::cat(c.category)),
        inputValues(
            "input-value",
            cl::desc("Give a graph input of a fixed shape a value at "
                     "compile time (every element); it is then no input of "
                     "the executables, and what depends on it folds: an If "
                     "on it keeps one branch (Optimum's merged decoder: "
                     "use_cache_branch=true or false). Repeatable or "
                     "comma-separated"),
            cl::value_desc("name=value"), cl::CommaSeparated,
            cl::sub(c.import), cl::sub(c.plan), cl::sub(c.compile),
            cl::cat(c.category)),
        noRaise("no-raise",
                cl::desc("Keep the exporter's primitive ops (MatMul, "
                         "Softmax, ...) instead of raising them to "
                         "dfg.attention, norms, rotary and linear: slower "
                         "kernels; the sharding still follows from the graph. "
                         "For checking parallelism, or working around a "
                         "raising bug"),
                cl::sub(c.import), cl::sub(c.plan), cl::sub(c.compile),
                cl::cat(c.category)) {}
  cl::opt<std::string> path;
  cl::list<std::string> dims;
  cl::list<std::string> inputValues;
  cl::opt<bool> noRaise;
};

/// The mesh a model is split over and how (plan, compile).
struct MeshOptions {
  explicit MeshOptions(Commands &c)
      : mesh("mesh", cl::Required, cl::value_desc("axis=size,..."),
             cl::desc("Device mesh, e.g. dp=2,pp=2,tp=4 (axes: dp, pp, tp); "
                      "for 'meshc plan' also 'auto' (with --devices)"),
             cl::sub(c.plan), cl::sub(c.compile), cl::cat(c.category)),
        dtype("dtype",
              cl::desc("Floating-point type the program computes in and "
                       "keeps its weights in: f32, f16 or bf16 (default: the "
                       "model's own). Weights are converted while they are "
                       "sharded; inputs and outputs keep the model's types. "
                       "On the cpu target, bf16 keeps the weights of "
                       "products (linear, matmul, embedding) in bf16 and "
                       "computes in f32; f16 executables need --target "
                       "cuda"),
              cl::value_desc("type"), cl::sub(c.plan), cl::sub(c.compile),
              cl::cat(c.category)),
        sequenceParallel(
            "sequence-parallel",
            cl::desc("Split the residual stream along the sequence over tp "
                     "(reduce_scatter / all_gather around the norms instead "
                     "of all_reduce)"),
            cl::sub(c.plan), cl::sub(c.compile), cl::cat(c.category)),
        microbatches(
            "microbatches",
            cl::desc("With a pp axis: split each dp block of the batch into "
                     "N microbatches that flow through the pipeline stages "
                     "one after another (default 1)"),
            cl::value_desc("N"), cl::init(1), cl::sub(c.plan),
            cl::sub(c.compile), cl::cat(c.category)) {}
  cl::opt<std::string> mesh;
  cl::opt<std::string> dtype;
  cl::opt<bool> sequenceParallel;
  cl::opt<unsigned> microbatches;
};

/// meshc import.
struct ImportOptions {
  explicit ImportOptions(Commands &c)
      : output("o",
               cl::desc("Write the IR to <file> (default: standard "
                        "output)"),
               cl::value_desc("file"), cl::init("-"), cl::sub(c.import),
               cl::cat(c.category)),
        optimize("optimize", cl::desc("Run the graph pipeline after import"),
                 cl::sub(c.import), cl::cat(c.category)) {}
  cl::opt<std::string> output;
  cl::opt<bool> optimize;
};

/// meshc plan.
struct PlanOptions {
  explicit PlanOptions(Commands &c)
      : batch("batch",
              cl::desc("Batch size to plan for (default: the model's; its "
                       "shapes are static, so a different size is refused)"),
              cl::init(0), cl::sub(c.plan), cl::cat(c.category)),
        seq("seq",
            cl::desc("Sequence length to plan for (default: the model's; as "
                     "--batch)"),
            cl::init(0), cl::sub(c.plan), cl::cat(c.category)),
        devices("devices",
                cl::desc("Number of GPUs: required with --mesh auto (which "
                         "searches their dp x pp x tp factorisations), else "
                         "checked against the mesh"),
                cl::value_desc("N"), cl::init(0), cl::sub(c.plan),
                cl::cat(c.category)),
        topology(
            "topology",
            cl::desc("Where the ranks sit, e.g. nodes=2,gpus-per-node=8; "
                     "optional link figures nvlink-gbps, nvlink-us, "
                     "network-gbps, network-us (defaults 450 GB/s, 4 us; 50 "
                     "GB/s, 8 us). Default: one node"),
            cl::value_desc("spec"), cl::sub(c.plan), cl::cat(c.category)),
        deviceMemory("device-memory",
                     cl::desc("Memory per GPU in GiB that a plan must fit "
                              "(default 80)"),
                     cl::value_desc("GiB"), cl::init(80), cl::sub(c.plan),
                     cl::cat(c.category)) {}
  cl::opt<unsigned> batch;
  cl::opt<unsigned> seq;
  cl::opt<unsigned> devices;
  cl::opt<std::string> topology;
  cl::opt<double> deviceMemory;
};

/// What `meshc compile` writes.
enum class Emit { Executables, Sharded, Ranks, Sources };

/// meshc compile (and --no-cuda-graph, which meshc run takes too).
struct CompileOptions {
  explicit CompileOptions(Commands &c)
      : maxDims(
            "max-dim",
            cl::desc("Compile executables that accept any size up to N for a "
                     "symbolic input dimension (batch_size, sequence_length, "
                     "past_sequence_length, ...); repeatable or "
                     "comma-separated. Buffers are planned at the bounds; "
                     "each run checks its inputs against them"),
            cl::value_desc("name=N"), cl::CommaSeparated, cl::sub(c.compile),
            cl::cat(c.category)),
        maxBatch("max-batch",
                 cl::desc("As --max-dim for the model's batch dimension "
                          "(dimension 0 of its inputs), whatever its name "
                          "(default 8 where the model's batch is symbolic "
                          "and neither --dim nor --max-dim sizes it; 0: no "
                          "bound, --dim must size it)"),
                 cl::value_desc("N"), cl::init(kDefaultMaxBatch),
                 cl::sub(c.compile), cl::cat(c.category)),
        maxSeq("max-seq",
               cl::desc("As --max-dim for the sequence dimension (dimension "
                        "1 of the token ids, and of an encoder-decoder's "
                        "decoder tokens and encoder states, or of the first "
                        "input of a model without token ids: a speech "
                        "encoder's samples; default 512, applied as "
                        "--max-batch's)"),
               cl::value_desc("N"), cl::init(kDefaultMaxSeq),
               cl::sub(c.compile), cl::cat(c.category)),
        maxCache("max-cache",
                 cl::desc("As --max-dim for the KV-cache length (dimension 2 "
                          "of the past keys and values; default 512, applied "
                          "as --max-batch's)"),
                 cl::value_desc("N"), cl::init(kDefaultMaxCache),
                 cl::sub(c.compile), cl::cat(c.category)),
        maxImage("max-image",
                 cl::desc("As --max-dim for an image's height and width "
                          "(dimensions 2 and 3 of a 4-D float input "
                          "[batch, channels, height, width] whose channels "
                          "are static and whose width is symbolic: a vision "
                          "model's pixels; default 512, applied as "
                          "--max-batch's)"),
                 cl::value_desc("N"), cl::init(kDefaultMaxImage),
                 cl::sub(c.compile), cl::cat(c.category)),
        target("target", cl::desc("Code-generation target (default cpu)"),
               cl::values(clEnumValN(codegen::Target::Cpu, "cpu",
                                     "oneDNN and OpenBLAS + MPI executables, "
                                     "built by g++"),
                          clEnumValN(codegen::Target::Cuda, "cuda",
                                     "CUDA + cuBLASLt + NCCL executables, "
                                     "built by nvcc (one GPU per rank)")),
               cl::init(codegen::Target::Cpu), cl::sub(c.compile),
               cl::cat(c.category)),
        cudaArch("cuda-arch",
                 cl::desc("GPU architecture of --target cuda executables: "
                          "sm_90 (default; H100, H200) or sm_80 (A100)"),
                 cl::value_desc("sm_NN"), cl::init("sm_90"), cl::sub(c.compile),
                 cl::cat(c.category)),
        output("o",
               cl::desc("Output folder (default: out); with --emit sharded, "
                        "ranks or cpp, the output file (default: standard "
                        "output)"),
               cl::value_desc("path"), cl::init("out"), cl::sub(c.compile),
               cl::cat(c.category)),
        emit("emit", cl::desc("What to write (default exe)"),
             cl::values(
                 clEnumValN(Emit::Executables, "exe",
                            "Per-rank executables, weight shards and a "
                            "manifest"),
                 clEnumValN(Emit::Sharded, "sharded",
                            "The partitioned SPMD program (dfg + shard "
                            "collectives), as MLIR"),
                 clEnumValN(Emit::Ranks, "ranks",
                            "One program per distinct rank role (pipeline "
                            "stage x tp position), with the rank's weight "
                            "slices as references, as MLIR"),
                 clEnumValN(Emit::Sources, "cpp",
                            "The generated C++ of each rank program (CUDA "
                            "C++ with --target cuda), not compiled")),
             cl::init(Emit::Executables), cl::sub(c.compile),
             cl::cat(c.category)),
        march("march",
              cl::desc("Target CPU of the rank executables, as g++ -march "
                       "(default native: the machine compiling)"),
              cl::value_desc("cpu"), cl::init("native"), cl::sub(c.compile),
              cl::cat(c.category)),
        keepSources("keep-sources",
                    cl::desc("Keep the generated C++ in <output>/src/ "
                             "(default: deleted once built)"),
                    cl::sub(c.compile), cl::cat(c.category)),
        verbose("verbose",
                cl::desc("Print the compiler command lines meshc runs"),
                cl::sub(c.compile), cl::cat(c.category)),
        noOverlap(
            "no-overlap",
            cl::desc("Run every collective blocking where it stands, "
                     "instead of issuing it early and waiting for it "
                     "where its result is first read "
                     "(meshc-lower-schedule-collectives); recorded in the "
                     "manifest"),
            cl::sub(c.compile), cl::cat(c.category)),
        noCudaGraph(
            "no-cuda-graph",
            cl::desc("--target cuda: run every step directly instead of "
                     "recording the forward step once as a CUDA graph and "
                     "replaying it when it is repeated (meshc run "
                     "--repeat); with compile, recorded in the manifest"),
            cl::sub(c.compile), cl::sub(c.run), cl::cat(c.category)) {}
  cl::list<std::string> maxDims;
  cl::opt<unsigned> maxBatch, maxSeq, maxCache, maxImage;
  cl::opt<codegen::Target> target;
  cl::opt<std::string> cudaArch;
  cl::opt<std::string> output;
  cl::opt<Emit> emit;
  cl::opt<std::string> march;
  cl::opt<bool> keepSources, verbose, noOverlap, noCudaGraph;
};

/// meshc run.
struct RunOptions {
  explicit RunOptions(Commands &c)
      : folder(cl::Positional, cl::Required, cl::desc("<compiled folder>"),
               cl::sub(c.run), cl::sub(c.generate), cl::cat(c.category)),
        inputs("input",
               cl::desc("A model input, NAME=FILE.npy (repeatable); for "
                        "meshc generate, an input every step reads "
                        "unchanged (an encoder-decoder's source)"),
               cl::value_desc("NAME=FILE"), cl::sub(c.run),
               cl::sub(c.generate), cl::cat(c.category)),
        outputDir("output-dir", cl::desc("Folder for the outputs (default: .)"),
                  cl::value_desc("dir"), cl::init("."), cl::sub(c.run),
                  cl::cat(c.category)),
        timeout("collective-timeout",
                cl::desc("Seconds a rank waits in a collective before the "
                         "whole job is aborted with a message naming the op "
                         "(default 300)"),
                cl::value_desc("s"), cl::init(300), cl::sub(c.run),
                cl::sub(c.generate),
                cl::cat(c.category)),
        threads("threads",
                cl::desc("Threads per rank for the kernels (default: the "
                         "machine's cores divided by the ranks, at least 1)"),
                cl::value_desc("N"), cl::init(0), cl::sub(c.run),
                cl::sub(c.generate), cl::cat(c.category)),
        repeat("repeat",
               cl::desc("Run the forward step N times (benchmarking); rank 0 "
                        "prints the median and fastest time (default 1)"),
               cl::value_desc("N"), cl::init(1), cl::sub(c.run),
               cl::cat(c.category)),
        launcher(
            "launcher",
            cl::desc("What starts the ranks (default: mpirun)"),
            cl::values(clEnumValN(Launcher::Mpirun, "mpirun",
                                  "OpenMPI's mpirun, one app context per "
                                  "role"),
                       clEnumValN(Launcher::Srun, "srun",
                                  "Slurm's srun -n <ranks> --mpi=pmix "
                                  "(a shell per task runs its rank's "
                                  "program), in the allocation it runs "
                                  "in or a new one")),
            cl::init(Launcher::Mpirun), cl::sub(c.run), cl::sub(c.generate),
            cl::cat(c.category)),
        mpirunArgs("mpirun-args",
                   cl::desc("Extra arguments for mpirun, e.g. \"--hostfile "
                            "hosts\" (split at spaces)"),
                   cl::value_desc("args"), cl::sub(c.run), cl::sub(c.generate),
                   cl::cat(c.category)),
        srunArgs("srun-args",
                 cl::desc("Extra arguments for srun (--launcher srun), e.g. "
                          "\"-N 2 -p gpu\" (split at spaces)"),
                 cl::value_desc("args"), cl::sub(c.run), cl::sub(c.generate),
                 cl::cat(c.category)) {}
  cl::opt<std::string> folder;
  cl::list<std::string> inputs;
  cl::opt<std::string> outputDir;
  cl::opt<double> timeout;
  cl::opt<unsigned> threads, repeat;
  cl::opt<Launcher> launcher;
  cl::opt<std::string> mpirunArgs, srunArgs;
};

/// meshc generate's own options (the folder, --threads, --collective-timeout
/// and the launcher's options are RunOptions').
struct GenerateOptions {
  explicit GenerateOptions(Commands &c)
      : promptIds("prompt-ids",
                  cl::desc("The prompts' token ids, int64 or int32 [batch, "
                           "length] (left-padded where lengths differ); of "
                           "an encoder-decoder, the decoder's (default: "
                           "the decoder start token its folder declares)"),
                  cl::value_desc("FILE.npy"), cl::sub(c.generate),
                  cl::cat(c.category)),
        attentionMask("attention-mask",
                      cl::desc("1 for each prompt token, 0 for padding, "
                               "shaped as the prompt ids (default: all 1)"),
                      cl::value_desc("FILE.npy"), cl::sub(c.generate),
                      cl::cat(c.category)),
        maxNewTokens("max-new-tokens",
                     cl::desc("Tokens to generate per sequence at most"),
                     cl::value_desc("N"), cl::Required, cl::sub(c.generate),
                     cl::cat(c.category)),
        outputIds("output-ids",
                  cl::desc("Where to write the generated ids, int64 "
                           "[batch, steps]; a sequence that stopped repeats "
                           "its stop token"),
                  cl::value_desc("FILE.npy"), cl::Required,
                  cl::sub(c.generate), cl::cat(c.category)),
        stopTokens("stop-token",
                   cl::desc("A token id that ends a sequence (repeatable or "
                            "comma-separated); replaces the end-of-sequence "
                            "ids the model's folder declares"),
                   cl::value_desc("ID"), cl::CommaSeparated,
                   cl::sub(c.generate), cl::cat(c.category)),
        ignoreEos("ignore-eos",
                  cl::desc("Do not stop at the end-of-sequence ids the "
                           "model's folder declares (generation_config.json, "
                           "genai_config.json or config.json, recorded by "
                           "meshc compile)"),
                  cl::sub(c.generate), cl::cat(c.category)),
        temperature("temperature",
                    cl::desc("Sample from softmax(logits / T) instead of "
                             "taking the most likely token; 0 is greedy "
                             "(default: greedy unless --top-k or --top-p is "
                             "given, then 1)"),
                    cl::value_desc("T"), cl::init(-1), cl::sub(c.generate),
                    cl::cat(c.category)),
        topK("top-k", cl::desc("Sample among the K most likely tokens only"),
             cl::value_desc("K"), cl::init(0), cl::sub(c.generate),
             cl::cat(c.category)),
        topP("top-p",
             cl::desc("Sample among the most likely tokens whose "
                      "probabilities sum to P (nucleus sampling)"),
             cl::value_desc("P"), cl::init(1.0), cl::sub(c.generate),
             cl::cat(c.category)),
        seed("seed",
             cl::desc("Seed of the sampling draws (default 0): the same seed "
                      "draws the same numbers on every run and mesh"),
             cl::value_desc("N"), cl::init(0), cl::sub(c.generate),
             cl::cat(c.category)),
        jsonl("jsonl",
              cl::desc("Stream one JSON object per step (tokens, ms) and a "
                       "summary object instead of text lines"),
              cl::sub(c.generate), cl::cat(c.category)) {}
  cl::opt<std::string> promptIds, attentionMask;
  cl::opt<int> maxNewTokens;
  cl::opt<std::string> outputIds;
  cl::list<int64_t> stopTokens;
  cl::opt<bool> ignoreEos;
  cl::opt<double> temperature;
  cl::opt<int> topK;
  cl::opt<double> topP;
  cl::opt<uint64_t> seed;
  cl::opt<bool> jsonl;
};

} // namespace meshc::driver

#endif // MESHC_COMPILER_DRIVER_DRIVEROPTIONS_H
