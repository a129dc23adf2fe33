//===- CudaExecutor.cpp - runs a plan on one rank's GPU -------------------===//

#include "runtime/cuda/CudaExecutor.h"

#include "runtime/core/Error.h"
#include "runtime/cuda/CudaContext.h"
#include "runtime/cuda/CudaKernels.h"
#include "runtime/cuda/DeviceComm.h"
#include "runtime/cuda/MultiTensor.h"
#include "runtime/cuda/MultiTensorPlan.h"
#include "runtime/cuda/StreamMemory.h"
#include "runtime/cuda/Support.h"
#include "runtime/exec/Collectives.h"
#include "runtime/exec/Distribution.h"
#include "runtime/exec/PreparedProgram.h"
#include "runtime/exec/RankAttrs.h"
#include "runtime/io/SwapFile.h"
#include "runtime/kernels/Kernel.h"
#include "runtime/plan/DeferredTransfers.h"

#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>

namespace zerosbp::runtime {

namespace {

using Clock = std::chrono::steady_clock;
using gpu::checkCuda;

int envInt(const char *name, int fallback) {
  const char *text = std::getenv(name);
  int value = text ? std::atoi(text) : -1;
  return value >= 0 && text && *text ? value : fallback;
}

/// A CUDA event that is destroyed with its owner.
class Event {
public:
  Event() = default;
  ~Event() {
    if (event)
      (void)cudaEventDestroy(event);
  }
  Event(Event &&other) noexcept : event(other.event) { other.event = nullptr; }
  Event(const Event &) = delete;
  Event &operator=(const Event &) = delete;
  Event &operator=(Event &&) = delete;
  cudaEvent_t get(bool timing = true) {
    if (!event)
      checkCuda("cudaEventCreate",
                cudaEventCreateWithFlags(&event, timing
                                                     ? cudaEventDefault
                                                     : cudaEventDisableTiming));
    return event;
  }

private:
  cudaEvent_t event = nullptr;
};

/// A send_recv that runs one half (docs/plan-format.md#send_recv): its
/// source stage's ranks send, its target stage's receive, each at its own
/// place in the program.
bool isSendRecvHalf(const Instruction &instruction) {
  return instruction.kind == InstructionKind::CollectiveStart &&
         instruction.collective == CollectiveKind::SendRecv &&
         instruction.stages.size() == 1;
}

float elapsedMs(cudaEvent_t begin, cudaEvent_t end) {
  float ms = 0;
  checkCuda("cudaEventElapsedTime", cudaEventElapsedTime(&ms, begin, end));
  return ms;
}

/// `total` += `sign` * `delta`, kind by kind and axis by axis.
void addStats(CommStats &total, const CommStats &delta, int64_t sign = 1) {
  for (size_t k = 0; k < total.bytesSent.size(); ++k) {
    total.bytesSent[k] += sign * delta.bytesSent[k];
    total.calls[k] += sign * delta.calls[k];
  }
  for (size_t a = 0; a < total.bytesSentOnAxis.size(); ++a)
    total.bytesSentOnAxis[a] += sign * delta.bytesSentOnAxis[a];
}

class CudaExecutor : public Executor {
public:
  CudaExecutor(const Plan &plan, int rank, Communicator &hostComm);
  ~CudaExecutor() override;

  int rank() const override { return myRank; }
  const char *device() const override { return "cuda"; }
  std::string deviceComm() const override {
    return nccl ? nccl->backendName() : "";
  }
  void writeVariable(int index, const std::vector<double> &values) override;
  void writeInput(int index, const std::vector<double> &values) override;
  double runStep(int64_t stepNumber) override;
  std::vector<double> variableShard(int index) const override;
  std::vector<double> outputValue(int index) const override;
  void *variableStorage(int index) override;
  void shareVariables(const std::vector<void *> &storage) override;
  void readVariableBytes(int index, int64_t offset, void *out,
                         int64_t bytes) const override;
  void writeVariableBytes(int index, int64_t offset, const void *data,
                          int64_t bytes) override;
  const MemoryPeaks &memoryPeaks() const override { return peaks; }
  const StepTimes &lastStepTimes() const override { return times; }
  const CommStats &commStats() const override { return stats; }
  void setGradientChecks(bool on) override { checkGradients = on; }
  bool setSkipNonfiniteSteps(bool on) override;
  void setTracing(bool on) override { tracing = on; }
  const StepTrace &lastStepTrace() const override { return trace; }
  void setDeviceOptions(const DeviceOptions &options) override;
  CudaGraphStatus cudaGraphStatus() const override;
  MultiTensorStatus multiTensorStatus() const override { return multiStatus; }

protected:
  const Plan &plan() const override { return thePlan; }

private:
  TensorRef tensor(int id) const;
  void prepare();
  /// Enqueues one step's work on the streams, from stepBegin to stepEnd:
  /// the step count, then every instruction. Captured into the graph when
  /// `capturing`.
  void enqueueStep(int64_t stepNumber);
  void enqueue(size_t index);
  /// A send_recv half: a send from a staging copy, or a receive, on the
  /// stream of its direction.
  void enqueueHalf(const Instruction &instruction,
                   const PreparedInstruction &entry);
  /// The streams and communicators of send_recv halves, and the staging
  /// buffers of this rank's send halves.
  void setUpHalves(Communicator &hostComm, const std::string &where);
  /// Waits, with the timeout, until this step's halves are done: every
  /// send has left its staging buffer.
  void drainHalves();
  /// The bytes sent so far by every NCCL communicator of this rank.
  CommStats ncclStats() const;
  /// Throws when NCCL has reported an asynchronous error on any of them.
  void checkNcclErrors();
  /// enqueue(index) between its trace events, errors naming the
  /// instruction.
  void enqueueTimed(size_t index);
  /// A segment's launch of one or more instructions
  /// (runtime/cuda/README.md#multi-tensor-launches).
  struct SegmentLaunch;
  void enqueueLaunch(SegmentLaunch &launch);
  /// Finds the segments of the optimizer's updates and casts and their
  /// launches (MultiTensorPlan.h), and copies the multi-tensor tables to
  /// the device, unless done for the present options: before a step and
  /// any capture.
  void planMultiTensor();
  void dropMultiTensor();
  /// Records a timing event on `stream`; while capturing, as an event node
  /// of the graph, so that every replay records it.
  void mark(Event &event, cudaStream_t stream);
  /// Why this step cannot be a graph's (captured or replayed); empty when
  /// it can.
  std::string graphObstacle() const;
  /// Captures the step's work as the graph and instantiates it. On failure
  /// nothing has run: returns false, having said why, and the step runs op
  /// by op; with NCCL between ranks it throws instead.
  bool captureStep(int64_t stepNumber);
  void dropGraph();
  /// Records why steps run op by op and says it once on stderr (rank 0).
  void noteEager(const std::string &reason);
  void storeValues(const TensorRef &target, const std::vector<double> &values);
  /// The elements of `source` (device memory), once the compute stream has
  /// reached this point.
  std::vector<double> loadValues(const TensorRef &source) const;
  /// Waits for `event` with the communicator's timeout, checking NCCL.
  void awaitEvent(cudaEvent_t event, const char *what);
  void collectTimes();
  void setUp(Communicator &hostComm);
  /// Frees everything; never throws. After a failure NCCL is aborted first,
  /// so that no stream waits on a peer that will not come.
  void release();
  /// The pinned host arena and the NVMe file of an offloaded plan
  /// (docs/runtime.md#offload).
  void allocateOffloadArenas(const std::string &where);
  /// Work run by a CUDA host function, in stream order: an offloaded
  /// update (CPU kernel on the host arena) or an NVMe read or write.
  struct HostCall {
    CudaExecutor *self;
    size_t index;
  };
  static void CUDART_CB runHostCall(void *data);
  void hostWork(size_t index);
  void rethrowHostError();
  /// For each offloaded update, the last earlier transfer whose bytes in
  /// host memory it reads or writes; for each transfer, the last earlier
  /// update whose host bytes it reads or writes (hostWaits).
  void orderHostWork();
  /// Enqueues offloaded update `index` on the host stream, after the
  /// transfer it depends on.
  void enqueueHostKernel(size_t index);
  /// Makes the compute stream wait for the transfers an earlier step left
  /// unwaited whose bytes instruction `index` is the first to touch.
  void settleTransfersBefore(size_t index);
  /// Waits, on the host, for the transfers an earlier step left unwaited
  /// that touch the bytes of value `id`; of every value without one.
  void settleTransfers(std::optional<int> id = std::nullopt) const;

  const Plan &thePlan;
  int myRank;
  /// The rank's pipeline stage (0 without a pipeline).
  int myStage;
  int deviceIndex;
  /// The ranks are threads of this process on one GPU.
  bool sharesDevice;
  std::chrono::milliseconds timeout;
  unsigned char *arena = nullptr;
  unsigned char *hostArena = nullptr; // Pinned (cudaMallocHost).
  std::unique_ptr<SwapFile> swap;
  std::vector<unsigned char *> bases;     // Of each plan arena; null: NVMe.
  std::vector<unsigned char *> addresses; // Of each buffer.
  cudaStream_t computeStream = nullptr;
  cudaStream_t commStream = nullptr;
  /// Transfers between arenas, in start order.
  cudaStream_t copyStream = nullptr;
  /// The offloaded updates, in plan order: apart from the compute stream,
  /// so that the device computes while the host updates, and from the copy
  /// stream, so that gradients leave the device while an update runs.
  cudaStream_t hostStream = nullptr;
  /// By instruction, of an offloaded update: recorded after it on the host
  /// stream.
  std::vector<Event> hostDone;
  /// By instruction: for an offloaded update, the transfer_start it waits
  /// for; for a transfer_start, the update the copy stream waits for; -1
  /// for none. Both streams run in order, so the last overlap covers every
  /// earlier one.
  std::vector<int> hostWaits;
  Event hostDrained;
  /// Whether this step has enqueued work on the host stream.
  bool hostWorkEnqueued = false;
  /// By transfer: its copy waits for an offloaded update.
  std::vector<char> transferAfterHost;
  /// Where the compute stream first waits for the host's work this step.
  Event hostWaitBegin;
  bool hostWaitMarked = false;
  /// The host stream's time in offloaded updates this step.
  std::atomic<int64_t> hostUpdateNanos{0};
  std::vector<Event> transferReady;
  /// Mutable: a host read of a variable (const) waits for its transfer.
  mutable std::vector<Event> transferDone;
  /// The transfer waits a step leaves to the next (docs/runtime.md#deferred-
  /// transfer-waits), and by transfer whether one is still unwaited. Not
  /// while another executor shares the variables, which would not wait.
  DeferredTransfers deferred;
  bool variablesShared = false;
  mutable std::vector<char> unsettled;
  std::vector<KernelFn> hostKernels; // By instruction; CPU kernels.
  std::vector<HostCall> hostCalls;   // By instruction.
  std::mutex hostErrorMutex;
  std::string hostError; // The first failure of host work this step.
  std::unique_ptr<CudaContext> ctx;
  /// NCCL, or the shared-device backend when ranks share the GPU.
  std::unique_ptr<DeviceComm> nccl;
  // send_recv halves (docs/runtime.md#pipeline-stages). Per direction (0:
  // to a later stage, 1: to an earlier one) a stream and an NCCL
  // communicator of the rank's pipeline group of their own: NCCL sends a
  // large message only once its receiver receives, and a send that waits
  // so must hold up neither the collectives nor the messages going the
  // other way. A send half sends from a staging copy that the compute
  // stream makes, so that its wait is for the copy alone; the step's end
  // waits for the sends.
  bool hasHalves = false;
  cudaStream_t halfStreams[2] = {nullptr, nullptr};
  std::unique_ptr<DeviceComm> halfComms[2];
  CommGroup *halfGroups[2] = {nullptr, nullptr};
  Event halvesDrained[2];
  /// By bucket: the device buffer a send half of this rank sends from.
  std::vector<void *> sendStaging;
  std::unique_ptr<StreamMemory> commMemory;
  std::unique_ptr<StreamMemory> computeMemory;
  std::vector<PreparedInstruction> prepared;
  std::vector<CudaKernelFn> kernels; // By instruction; null for non-kernels.
  std::vector<char> runs;            // By instruction: of this rank's stage.
  std::vector<AttrMap> attrs;        // By instruction, as this rank sees them.
  std::vector<CommGroup *> groupsByAxis;
  // Pinned host bytes the step number is copied from.
  int64_t *hostStep = nullptr;
  MemoryTracker tracker;
  MemoryPeaks peaks;
  // Per bucket: compute ready for the collective, collective begun, done.
  std::vector<Event> bucketReady, bucketBegin, bucketDone;
  // Around every collective_wait, and at the phase boundaries.
  std::vector<Event> waitBegin, waitEnd;
  Event stepBegin, backwardBegin, optimizerBegin, stepEnd;
  // With gradient checks, where the compute stream reaches an update.
  Event gradientReady;
  bool checkGradients = false;
  // Skipping steps whose loss is not finite: where the host reads the loss,
  // once every stream has done the work enqueued before it.
  std::optional<LossCheckPoint> lossCheck;
  Event lossReady, commDrained, copyDrained;
  /// Whether the loss check must run before instruction `index`: at the
  /// first update, or at a multi-tensor launch that runs it.
  bool lossCheckBefore(size_t index) const;
  /// Waits for every stream and reads the loss; true when it is not finite.
  bool lossNotFinite();
  // With tracing, around every instruction of the compute stream.
  std::vector<Event> traceBegin, traceEnd;
  std::vector<int> waitIndexOf;
  StepTimes times;
  bool tracing = false;
  bool tracedThisStep = false;
  StepTrace trace;
  bool failed = false;
  // The CUDA graph of a step (runtime/cuda/README.md#cuda-graphs): captured
  // from the second step after prepare(), then launched in place of the
  // ops. What changes per step is read on the device: the step count from
  // the pinned `hostStep` (a copy node), the inputs from the arena.
  DeviceOptions options;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t graphExec = nullptr;
  /// The checks of device data in the graph, read after every launch.
  std::vector<DeviceCheck> graphChecks;
  /// Bytes and calls the captured step counted, added at every launch.
  CommStats graphStepStats;
  /// What the collectives sent, graph launches included.
  CommStats stats;
  CudaGraphStatus graphStatus;
  std::vector<std::string> notes; // Said once each.
  bool captureFailed = false;
  bool capturing = false;
  bool timingNoted = false;
  bool hasCollectives = false;
  int64_t stepsRun = 0;
  int64_t stepsSincePrepare = 0;
  /// Checks of device data the last step run op by op began.
  uint64_t stepChecks = 0;
  /// Recorded after a launch: the step's end, whatever the graph records.
  Event graphDone;
  /// Per bucket: the collective's end, for the compute stream to wait on
  /// (bucketDone is for timing).
  std::vector<Event> bucketJoin;
  // Multi-tensor launches (runtime/cuda/README.md#multi-tensor-launches).
  // A segment is a maximal run of consecutive instructions of the
  // optimizer phase with nothing else of the executor's between them
  // (events, host checks, host work): updates, casts, slices, copies.
  // Its instructions run as launches in an order that keeps their
  // dependencies, each group of one key as one multi-tensor kernel.
  struct SegmentLaunch {
    std::vector<size_t> members; // Instructions, in plan order.
    /// Null: members[0] alone, by its own kernel.
    std::unique_ptr<gpu::MultiTensorLaunch> merged;
    size_t tableOffset = 0; // In multiTensorTables.
    Event traceBegin, traceEnd;
  };
  std::vector<SegmentLaunch> segmentLaunches;
  /// Per instruction: the launches of the segment it begins.
  std::vector<std::vector<size_t>> launchesAt;
  /// Per instruction: 1 when its segment's launches run it.
  std::vector<char> inSegment;
  unsigned char *multiTensorTables = nullptr; // Device memory.
  size_t multiTensorTableBytes = 0;
  bool multiTensorPlanned = false;
  /// The options the launches were planned for.
  bool plannedMultiTensor = false;
  bool plannedGradientChecks = false;
  MultiTensorStatus multiStatus;
};

CudaExecutor::CudaExecutor(const Plan &plan, int rank, Communicator &hostComm)
    : thePlan(plan), myRank(rank), myStage(plan.stageOf(rank)),
      deviceIndex(cudaDeviceForRank(rank, hostComm.worldSize())),
      sharesDevice(ranksShareDevice(hostComm.worldSize())),
      timeout(hostComm.getTimeout()), tracker(plan, plan.stageOf(rank)) {
  try {
    setUp(hostComm);
  } catch (...) {
    failed = true;
    release();
    throw;
  }
}

void CudaExecutor::setUp(Communicator &hostComm) {
  const Plan &plan = thePlan;
  int rank = myRank;
  std::string where =
      "rank " + std::to_string(rank) + " on GPU " + std::to_string(deviceIndex);
  checkCuda(where + ": cudaSetDevice", cudaSetDevice(deviceIndex));
  // Scratch from the stream-ordered pool stays reserved between steps.
  cudaMemPool_t pool;
  checkCuda(where + ": memory pool",
            cudaDeviceGetDefaultMemPool(&pool, deviceIndex));
  uint64_t keep = UINT64_MAX;
  checkCuda(
      where + ": memory pool",
      cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  size_t bytes = (static_cast<size_t>(plan.arenaBytes) + 255) / 256 * 256;
  cudaError_t status =
      cudaMalloc(reinterpret_cast<void **>(&arena), bytes ? bytes : 256);
  if (status != cudaSuccess)
    throw RuntimeError(where + ": cannot allocate the arena of " +
                       std::to_string(plan.arenaBytes) +
                       " bytes: " + cudaGetErrorString(status));
  checkCuda(where + ": arena", cudaMemset(arena, 0, bytes ? bytes : 256));
  checkCuda(where + ": streams",
            cudaStreamCreateWithFlags(&computeStream, cudaStreamNonBlocking));
  checkCuda(where + ": streams",
            cudaStreamCreateWithFlags(&commStream, cudaStreamNonBlocking));
  checkCuda(where + ": streams",
            cudaStreamCreateWithFlags(&copyStream, cudaStreamNonBlocking));
  checkCuda(where + ": streams",
            cudaStreamCreateWithFlags(&hostStream, cudaStreamNonBlocking));
  allocateOffloadArenas(where);
  checkCuda(
      where + ": pinned memory",
      cudaMallocHost(reinterpret_cast<void **>(&hostStep), sizeof(int64_t)));
  ctx = std::make_unique<CudaContext>(computeStream);
  ctx->setEagerChecks(false);
  commMemory = std::make_unique<StreamMemory>(commStream);
  computeMemory = std::make_unique<StreamMemory>(computeStream);
  if (sharesDevice && rank == 0)
    std::cerr << "zero-run: " << hostComm.worldSize() << " ranks share GPU "
              << deviceIndex
              << ": collectives by device copies and reductions in rank "
                 "order (shared_device), not NCCL\n";
  nccl = makeDeviceComm(hostComm, commStream, sharesDevice);
  groupsByAxis = createAxisGroups(plan, rank, *nccl);
  setUpHalves(hostComm, where);
  bucketReady = std::vector<Event>(plan.numBuckets);
  bucketBegin = std::vector<Event>(plan.numBuckets);
  bucketDone = std::vector<Event>(plan.numBuckets);
  bucketJoin = std::vector<Event>(plan.numBuckets);
  transferReady = std::vector<Event>(plan.numTransfers);
  transferDone = std::vector<Event>(plan.numTransfers);
  prepare();
}

void CudaExecutor::setUpHalves(Communicator &hostComm,
                               const std::string &where) {
  for (const Instruction &instruction : thePlan.instructions)
    hasHalves = hasHalves || isSendRecvHalf(instruction);
  if (!hasHalves)
    return;
  // Every rank makes both, in the same order: NCCL's set-up is collective.
  std::vector<int> pipelineGroup = thePlan.groupOf(myRank, 0);
  for (int direction = 0; direction < 2; ++direction) {
    checkCuda(where + ": streams",
              cudaStreamCreateWithFlags(&halfStreams[direction],
                                        cudaStreamNonBlocking));
    halfComms[direction] =
        makeDeviceComm(hostComm, halfStreams[direction], sharesDevice);
    halfGroups[direction] = &halfComms[direction]->createGroup(pipelineGroup);
    halfGroups[direction]->setAxis(0);
  }
  sendStaging.assign(thePlan.numBuckets, nullptr);
  for (const Instruction &instruction : thePlan.instructions) {
    if (!isSendRecvHalf(instruction) ||
        instruction.stages[0] != instruction.sourceStage ||
        myStage != instruction.sourceStage)
      continue;
    size_t bytes =
        static_cast<size_t>(thePlan.values[instruction.operands[0]].bytes());
    checkCuda(where + ": the staging buffer of send_recv bucket " +
                  std::to_string(instruction.bucket),
              cudaMalloc(&sendStaging[instruction.bucket], bytes ? bytes : 1));
  }
}

void CudaExecutor::allocateOffloadArenas(const std::string &where) {
  bases.assign(thePlan.arenas.size(), nullptr);
  bases[0] = arena;
  for (size_t a = 1; a < thePlan.arenas.size(); ++a) {
    const PlanArena &planned = thePlan.arenas[a];
    std::string label =
        where + "'s " + memoryKindName(planned.memory) + " arena";
    if (planned.memory == MemoryKind::Nvme) {
      swap = std::make_unique<SwapFile>(planned.path, planned.bytes, label);
      continue;
    }
    // Page-locked either way: copies from pageable memory would not
    // overlap the compute stream. pin_memory only says DeepSpeed would.
    size_t bytes = (static_cast<size_t>(planned.bytes) + 255) / 256 * 256;
    checkCuda(label, cudaMallocHost(reinterpret_cast<void **>(&hostArena),
                                    bytes ? bytes : 256));
    std::memset(hostArena, 0, bytes ? bytes : 256);
    bases[a] = hostArena;
  }
}

void CUDART_CB CudaExecutor::runHostCall(void *data) {
  auto *call = static_cast<HostCall *>(data);
  call->self->hostWork(call->index);
}

void CudaExecutor::hostWork(size_t index) {
  const Instruction &instruction = thePlan.instructions[index];
  PreparedInstruction &entry = prepared[index];
  try {
    if (instruction.kind == InstructionKind::Kernel) {
      auto begin = std::chrono::steady_clock::now();
      hostKernels[index](attrs[index], entry.operands, entry.results);
      hostUpdateNanos += std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::steady_clock::now() - begin)
                             .count();
    } else if (instruction.from == MemoryKind::Nvme) {
      swap->read(thePlan.arenaOffset(instruction.operands[0]),
                 entry.results[0].data,
                 thePlan.values[instruction.operands[0]].bytes());
    } else {
      swap->write(thePlan.arenaOffset(instruction.results[0]),
                  entry.operands[0].data,
                  thePlan.values[instruction.operands[0]].bytes());
    }
  } catch (const std::exception &error) {
    std::lock_guard<std::mutex> lock(hostErrorMutex);
    if (hostError.empty())
      hostError = "instructions[" + std::to_string(index) + "] (" +
                  instruction.op + "): " + error.what();
  }
}

void CudaExecutor::rethrowHostError() {
  std::lock_guard<std::mutex> lock(hostErrorMutex);
  if (!hostError.empty()) {
    std::string message = std::move(hostError);
    hostError.clear();
    throw RuntimeError(message);
  }
}

CudaExecutor::~CudaExecutor() { release(); }

void CudaExecutor::release() {
  (void)cudaSetDevice(deviceIndex);
  // The halves' communicators first: aborting the main one tells the host
  // world, which over MPI ends the process.
  for (std::unique_ptr<DeviceComm> &comm : halfComms)
    if (failed && comm)
      comm->abortGroups();
  if (failed && nccl)
    nccl->abort("rank " + std::to_string(myRank) + " stopped");
  if (computeStream)
    (void)cudaStreamSynchronize(computeStream);
  if (commStream)
    (void)cudaStreamSynchronize(commStream);
  if (copyStream)
    (void)cudaStreamSynchronize(copyStream);
  if (hostStream)
    (void)cudaStreamSynchronize(hostStream);
  for (cudaStream_t stream : halfStreams)
    if (stream)
      (void)cudaStreamSynchronize(stream);
  dropGraph();
  dropMultiTensor();
  ctx.reset();
  nccl.reset();
  for (std::unique_ptr<DeviceComm> &comm : halfComms)
    comm.reset();
  for (void *staging : sendStaging)
    if (staging)
      (void)cudaFree(staging);
  sendStaging.clear();
  for (cudaStream_t &stream : halfStreams) {
    if (stream)
      (void)cudaStreamDestroy(stream);
    stream = nullptr;
  }
  bucketReady.clear();
  bucketBegin.clear();
  bucketDone.clear();
  bucketJoin.clear();
  waitBegin.clear();
  waitEnd.clear();
  traceBegin.clear();
  traceEnd.clear();
  transferReady.clear();
  transferDone.clear();
  hostDone.clear();
  if (hostStep)
    (void)cudaFreeHost(hostStep);
  if (hostArena)
    (void)cudaFreeHost(hostArena);
  hostArena = nullptr;
  swap.reset();
  if (copyStream)
    (void)cudaStreamDestroy(copyStream);
  copyStream = nullptr;
  if (hostStream)
    (void)cudaStreamDestroy(hostStream);
  hostStream = nullptr;
  if (computeStream)
    (void)cudaStreamDestroy(computeStream);
  if (commStream)
    (void)cudaStreamDestroy(commStream);
  if (arena)
    (void)cudaFree(arena);
  hostStep = nullptr;
  computeStream = commStream = nullptr;
  arena = nullptr;
}

TensorRef CudaExecutor::tensor(int id) const {
  return arenaTensor(thePlan, addresses, id);
}

void CudaExecutor::prepare() {
  // A graph holds the old addresses: the next step runs op by op, the one
  // after is captured anew. So do the multi-tensor tables: planned anew
  // before the next step.
  dropGraph();
  stepsSincePrepare = 0;
  dropMultiTensor();
  multiTensorPlanned = false;
  if (addresses.empty())
    addresses = bufferAddresses(thePlan, bases);
  prepared = prepareInstructions(thePlan, addresses);
  kernels.assign(thePlan.instructions.size(), nullptr);
  hostKernels.assign(thePlan.instructions.size(), nullptr);
  hostCalls.clear();
  for (size_t i = 0; i < thePlan.instructions.size(); ++i)
    hostCalls.push_back({this, i});
  attrs = rankAttrs(thePlan, myRank);
  runs = instructionsRunBy(thePlan, myRank);
  waitIndexOf.assign(thePlan.instructions.size(), -1);
  int waits = 0;
  for (size_t i = 0; i < thePlan.instructions.size(); ++i) {
    const Instruction &instruction = thePlan.instructions[i];
    // Another pipeline stage's instruction: never enqueued here.
    if (!runs[i])
      continue;
    if (instruction.kind == InstructionKind::CollectiveWait)
      waitIndexOf[i] = waits++;
    if (instruction.kind == InstructionKind::CollectiveStart)
      hasCollectives = true;
    if (instruction.kind != InstructionKind::Kernel)
      continue;
    if (instruction.memory == MemoryKind::Host) {
      // An offloaded update: the CPU kernel on the pinned host arena.
      hostKernels[i] = findCpuKernel(instruction.op);
      if (!hostKernels[i])
        throw RuntimeError(thePlan.source + ": instructions[" +
                           std::to_string(i) + "]: no CPU kernel for '" +
                           instruction.op + "'");
      continue;
    }
    kernels[i] = findCudaKernel(instruction.op);
    if (!kernels[i])
      throw RuntimeError(thePlan.source + ": instructions[" +
                         std::to_string(i) + "]: no CUDA kernel for '" +
                         instruction.op + "'");
  }
  waitBegin = std::vector<Event>(waits);
  waitEnd = std::vector<Event>(waits);
  orderHostWork();
  deferred = planDeferredTransfers(thePlan, runs);
  unsettled.assign(thePlan.numTransfers, 0);
}

void CudaExecutor::settleTransfersBefore(size_t index) {
  for (int transfer : deferred.settleBefore[index])
    if (unsettled[transfer]) {
      checkCuda("transfer_wait",
                cudaStreamWaitEvent(computeStream,
                                    transferDone[transfer].get(false), 0));
      unsettled[transfer] = 0;
    }
}

void CudaExecutor::settleTransfers(std::optional<int> id) const {
  bool waited = false;
  for (int transfer = 0; transfer < thePlan.numTransfers; ++transfer)
    if (unsettled[transfer] &&
        (!id || deferred.touches(transfer, valueRange(thePlan, *id)))) {
      checkCuda("transfer_wait",
                cudaStreamWaitEvent(computeStream,
                                    transferDone[transfer].get(false), 0));
      unsettled[transfer] = 0;
      waited = true;
    }
  if (waited)
    checkCuda("transfer_wait", cudaStreamSynchronize(computeStream));
}

void CudaExecutor::orderHostWork() {
  size_t count = thePlan.instructions.size();
  hostWaits.assign(count, -1);
  if (hostDone.size() != count)
    hostDone = std::vector<Event>(count);
  using Ranges = std::vector<std::pair<const unsigned char *, size_t>>;
  // The host-memory bytes an instruction reads or writes.
  auto hostBytes = [&](size_t index) {
    const Instruction &instruction = thePlan.instructions[index];
    Ranges ranges;
    auto add = [&](int id, const TensorRef &ref) {
      if (thePlan.memoryOf(thePlan.values[id].buffer) == MemoryKind::Host)
        ranges.push_back(
            {static_cast<const unsigned char *>(ref.data), ref.bytes()});
    };
    for (size_t k = 0; k < instruction.operands.size(); ++k)
      add(instruction.operands[k], prepared[index].operands[k]);
    for (size_t k = 0; k < instruction.results.size(); ++k)
      add(instruction.results[k], prepared[index].results[k]);
    return ranges;
  };
  auto overlap = [](const Ranges &a, const Ranges &b) {
    for (const auto &[aBegin, aBytes] : a)
      for (const auto &[bBegin, bBytes] : b)
        if (aBegin < bBegin + bBytes && bBegin < aBegin + aBytes)
          return true;
    return false;
  };
  transferAfterHost.assign(thePlan.numTransfers, 0);
  // Earlier ones, in plan order, with their host bytes (read once each).
  std::vector<std::pair<size_t, Ranges>> updates, transfers;
  for (size_t i = 0; i < count; ++i) {
    if (!runs[i])
      continue;
    const Instruction &instruction = thePlan.instructions[i];
    bool update = static_cast<bool>(hostKernels[i]);
    bool transfer = instruction.kind == InstructionKind::TransferStart;
    if (!update && !transfer)
      continue;
    Ranges mine = hostBytes(i);
    const auto &others = update ? transfers : updates;
    for (auto it = others.rbegin(); it != others.rend(); ++it)
      if (overlap(mine, it->second)) {
        hostWaits[i] = static_cast<int>(it->first);
        break;
      }
    if (transfer && hostWaits[i] >= 0)
      transferAfterHost[instruction.transfer] = 1;
    (update ? updates : transfers).emplace_back(i, std::move(mine));
  }
}

void CudaExecutor::enqueueHostKernel(size_t index) {
  if (hostWaits[index] >= 0) {
    int transfer = thePlan.instructions[hostWaits[index]].transfer;
    checkCuda(
        "host kernel",
        cudaStreamWaitEvent(hostStream, transferDone[transfer].get(false), 0));
  }
  if (tracedThisStep)
    checkCuda("trace", cudaEventRecord(traceBegin[index].get(), hostStream));
  checkCuda("host kernel",
            cudaLaunchHostFunc(hostStream, runHostCall, &hostCalls[index]));
  if (tracedThisStep)
    checkCuda("trace", cudaEventRecord(traceEnd[index].get(), hostStream));
  checkCuda("host kernel",
            cudaEventRecord(hostDone[index].get(false), hostStream));
  hostWorkEnqueued = true;
}

void CudaExecutor::storeValues(const TensorRef &target,
                               const std::vector<double> &values) {
  checkCuda("cudaSetDevice", cudaSetDevice(deviceIndex));
  std::vector<unsigned char> host(target.bytes());
  TensorRef staged = target;
  staged.data = host.data();
  storeElements(staged, values);
  checkCuda("copy to the device",
            cudaMemcpyAsync(target.data, host.data(), host.size(),
                            cudaMemcpyDefault, computeStream));
  checkCuda("copy to the device", cudaStreamSynchronize(computeStream));
}

void CudaExecutor::writeVariable(int index, const std::vector<double> &values) {
  if (!thePlan.holds(thePlan.variables[index], myRank))
    return;
  int id = thePlan.variables[index].value;
  settleTransfers(id);
  if (!thePlan.variableInNvme(index)) {
    storeValues(tensor(id), values);
    return;
  }
  TensorRef staged = tensor(id);
  std::vector<unsigned char> host(staged.bytes());
  staged.data = host.data();
  storeElements(staged, values);
  swap->write(thePlan.arenaOffset(id), host.data(),
              static_cast<int64_t>(host.size()));
}

void CudaExecutor::writeInput(int index, const std::vector<double> &values) {
  if (!thePlan.holds(thePlan.inputs[index], myRank))
    return;
  settleTransfers(thePlan.inputs[index].value);
  storeValues(tensor(thePlan.inputs[index].value), values);
}

std::vector<double> CudaExecutor::outputValue(int index) const {
  int id = thePlan.outputs[index];
  // Another stage's output: its bytes here are this stage's buffers.
  if (!thePlan.valueOnStage(id, myStage))
    return std::vector<double>(thePlan.values[id].numel(), 0.0);
  checkCuda("cudaSetDevice", cudaSetDevice(deviceIndex));
  settleTransfers(id);
  return loadValues(tensor(id));
}

void *CudaExecutor::variableStorage(int index) {
  checkHoldsVariable(thePlan, myRank, index);
  // Another executor reads these bytes from now on, without waiting.
  checkCuda("cudaSetDevice", cudaSetDevice(deviceIndex));
  settleTransfers();
  variablesShared = true;
  if (thePlan.variableInNvme(index))
    throw RuntimeError("variable '" + thePlan.variables[index].name +
                       "' lives in the NVMe arena and has no memory to share");
  return tensor(thePlan.variables[index].value).data;
}

void CudaExecutor::shareVariables(const std::vector<void *> &storage) {
  checkCuda("cudaSetDevice", cudaSetDevice(deviceIndex));
  settleTransfers();
  int64_t prefix = variablePrefixBytes(thePlan);
  size_t bytes =
      (static_cast<size_t>(thePlan.arenaBytes - prefix) + 255) / 256 * 256;
  unsigned char *memory = nullptr;
  cudaError_t status =
      cudaMalloc(reinterpret_cast<void **>(&memory), bytes ? bytes : 256);
  if (status != cudaSuccess)
    throw RuntimeError(
        "rank " + std::to_string(myRank) + ": cannot allocate the arena of " +
        std::to_string(bytes) + " bytes: " + cudaGetErrorString(status));
  checkCuda("arena", cudaMemset(memory, 0, bytes ? bytes : 256));
  checkCuda("arena", cudaFree(arena));
  arena = memory;
  bases[0] = arena;
  addresses = bufferAddresses(thePlan, bases, prefix, storage);
  prepare();
  tracker.shareVariables(prefix);
}

std::vector<double> CudaExecutor::variableShard(int index) const {
  checkHoldsVariable(thePlan, myRank, index);
  checkCuda("cudaSetDevice", cudaSetDevice(deviceIndex));
  int id = thePlan.variables[index].value;
  settleTransfers(id);
  if (!thePlan.variableInNvme(index))
    return loadValues(tensor(id));
  TensorRef staged = tensor(id);
  std::vector<unsigned char> host(staged.bytes());
  swap->read(thePlan.arenaOffset(id), host.data(),
             static_cast<int64_t>(host.size()));
  staged.data = host.data();
  return loadElements(staged);
}

void CudaExecutor::readVariableBytes(int index, int64_t offset, void *out,
                                     int64_t bytes) const {
  checkHoldsVariable(thePlan, myRank, index);
  checkCuda("cudaSetDevice", cudaSetDevice(deviceIndex));
  int id = thePlan.variables[index].value;
  settleTransfers(id);
  if (thePlan.variableInNvme(index)) {
    swap->read(thePlan.arenaOffset(id) + offset, out, bytes);
    return;
  }
  const auto *source = static_cast<const unsigned char *>(tensor(id).data);
  checkCuda("copy from the device",
            cudaMemcpyAsync(out, source + offset, bytes, cudaMemcpyDefault,
                            computeStream));
  checkCuda("copy from the device", cudaStreamSynchronize(computeStream));
}

void CudaExecutor::writeVariableBytes(int index, int64_t offset,
                                      const void *data, int64_t bytes) {
  if (!thePlan.holds(thePlan.variables[index], myRank))
    return;
  checkCuda("cudaSetDevice", cudaSetDevice(deviceIndex));
  int id = thePlan.variables[index].value;
  settleTransfers(id);
  if (thePlan.variableInNvme(index)) {
    swap->write(thePlan.arenaOffset(id) + offset, data, bytes);
    return;
  }
  auto *target = static_cast<unsigned char *>(tensor(id).data);
  checkCuda("copy to the device",
            cudaMemcpyAsync(target + offset, data, bytes, cudaMemcpyDefault,
                            computeStream));
  checkCuda("copy to the device", cudaStreamSynchronize(computeStream));
}

std::vector<double> CudaExecutor::loadValues(const TensorRef &source) const {
  std::vector<unsigned char> host(source.bytes());
  checkCuda("copy from the device",
            cudaMemcpyAsync(host.data(), source.data, host.size(),
                            cudaMemcpyDefault, computeStream));
  checkCuda("copy from the device", cudaStreamSynchronize(computeStream));
  TensorRef staged = source;
  staged.data = host.data();
  return loadElements(staged);
}

void CudaExecutor::enqueue(size_t index) {
  const Instruction &instruction = thePlan.instructions[index];
  PreparedInstruction &entry = prepared[index];
  switch (instruction.kind) {
  case InstructionKind::Kernel:
    if (hostKernels[index]) {
      enqueueHostKernel(index);
      break;
    }
    kernels[index](attrs[index], entry.operands, entry.results, *ctx);
    break;
  case InstructionKind::TransferStart: {
    int transfer = instruction.transfer;
    checkCuda(
        "transfer_start",
        cudaEventRecord(transferReady[transfer].get(false), computeStream));
    checkCuda(
        "transfer_start",
        cudaStreamWaitEvent(copyStream, transferReady[transfer].get(false), 0));
    if (hostWaits[index] >= 0)
      checkCuda("transfer_start",
                cudaStreamWaitEvent(copyStream,
                                    hostDone[hostWaits[index]].get(false), 0));
    if (instruction.from == MemoryKind::Nvme ||
        instruction.to == MemoryKind::Nvme)
      checkCuda("transfer_start",
                cudaLaunchHostFunc(copyStream, runHostCall, &hostCalls[index]));
    else
      checkCuda("transfer_start",
                cudaMemcpyAsync(entry.results[0].data, entry.operands[0].data,
                                thePlan.values[instruction.operands[0]].bytes(),
                                cudaMemcpyDefault, copyStream));
    checkCuda("transfer_start",
              cudaEventRecord(transferDone[transfer].get(false), copyStream));
    break;
  }
  case InstructionKind::TransferWait:
    // Waited for at the next step's first reader of the transfer's bytes.
    if (options.deferTransferWaits && !variablesShared && !capturing &&
        deferred.deferred[index]) {
      unsettled[instruction.transfer] = 1;
      break;
    }
    if (hostWorkEnqueued && !hostWaitMarked &&
        transferAfterHost[instruction.transfer]) {
      checkCuda("transfer_wait",
                cudaEventRecord(hostWaitBegin.get(), computeStream));
      hostWaitMarked = true;
    }
    checkCuda("transfer_wait",
              cudaStreamWaitEvent(computeStream,
                                  transferDone[instruction.transfer].get(false),
                                  0));
    break;
  case InstructionKind::ToPartial:
    runToPartial(instruction, thePlan, myRank, entry.operands[0],
                 entry.results[0], *computeMemory);
    break;
  case InstructionKind::AllSlice:
    runAllSlice(instruction, thePlan, myRank, entry.operands[0],
                entry.results[0], *computeMemory);
    break;
  case InstructionKind::CollectiveStart: {
    if (isSendRecvHalf(instruction)) {
      enqueueHalf(instruction, entry);
      break;
    }
    int bucket = instruction.bucket;
    checkCuda("collective_start",
              cudaEventRecord(bucketReady[bucket].get(false), computeStream));
    checkCuda(
        "collective_start",
        cudaStreamWaitEvent(commStream, bucketReady[bucket].get(false), 0));
    mark(bucketBegin[bucket], commStream);
    runCollective(instruction, entry.operands, entry.results, entry.staging,
                  *groupsByAxis[instruction.groupAxis], *nccl, *commMemory);
    mark(bucketDone[bucket], commStream);
    checkCuda("collective_start",
              cudaEventRecord(bucketJoin[bucket].get(false), commStream));
    break;
  }
  case InstructionKind::CollectiveWait: {
    int wait = waitIndexOf[index];
    mark(waitBegin[wait], computeStream);
    checkCuda("collective_wait",
              cudaStreamWaitEvent(
                  computeStream, bucketJoin[instruction.bucket].get(false), 0));
    mark(waitEnd[wait], computeStream);
    break;
  }
  case InstructionKind::Copy: {
    TensorRef target =
        tensor(thePlan.variables[instruction.variableIndex].value);
    if (target.data != entry.operands[0].data)
      checkCuda("copy", cudaMemcpyAsync(target.data, entry.operands[0].data,
                                        target.bytes(), cudaMemcpyDefault,
                                        computeStream));
    break;
  }
  }
}

void CudaExecutor::enqueueHalf(const Instruction &instruction,
                               const PreparedInstruction &entry) {
  int bucket = instruction.bucket;
  int direction = instruction.sourceStage < instruction.targetStage ? 0 : 1;
  cudaStream_t stream = halfStreams[direction];
  DeviceComm &comm = *halfComms[direction];
  CommGroup &group = *halfGroups[direction];
  if (myStage == instruction.sourceStage) {
    // The copy is all the send half's wait waits for: the operand's bytes
    // may be reused after it, and the send goes on past the wait.
    const TensorRef &operand = entry.operands[0];
    checkCuda("send_recv",
              cudaMemcpyAsync(sendStaging[bucket], operand.data,
                              operand.bytes(), cudaMemcpyDeviceToDevice,
                              computeStream));
    checkCuda("send_recv",
              cudaEventRecord(bucketJoin[bucket].get(false), computeStream));
    checkCuda("send_recv",
              cudaStreamWaitEvent(stream, bucketJoin[bucket].get(false), 0));
    mark(bucketBegin[bucket], stream);
    comm.send(group, operand.dtype, sendStaging[bucket], operand.numel(),
              instruction.targetStage);
    mark(bucketDone[bucket], stream);
    return;
  }
  const TensorRef &result = entry.results[0];
  checkCuda("send_recv",
            cudaEventRecord(bucketReady[bucket].get(false), computeStream));
  checkCuda("send_recv",
            cudaStreamWaitEvent(stream, bucketReady[bucket].get(false), 0));
  mark(bucketBegin[bucket], stream);
  comm.recv(group, result.dtype, result.data, result.numel(),
            instruction.sourceStage);
  mark(bucketDone[bucket], stream);
  checkCuda("send_recv",
            cudaEventRecord(bucketJoin[bucket].get(false), stream));
}

void CudaExecutor::drainHalves() {
  if (!hasHalves)
    return;
  for (int direction = 0; direction < 2; ++direction) {
    checkCuda("step", cudaEventRecord(halvesDrained[direction].get(false),
                                      halfStreams[direction]));
    awaitEvent(halvesDrained[direction].get(false),
               "step: the pipeline's messages");
  }
}

CommStats CudaExecutor::ncclStats() const {
  CommStats total = nccl->stats();
  for (const std::unique_ptr<DeviceComm> &comm : halfComms)
    if (comm)
      addStats(total, comm->stats());
  return total;
}

void CudaExecutor::checkNcclErrors() {
  nccl->checkAsyncErrors();
  for (const std::unique_ptr<DeviceComm> &comm : halfComms)
    if (comm)
      comm->checkAsyncErrors();
}

void CudaExecutor::enqueueTimed(size_t index) {
  // An offloaded update is timed on the host stream (enqueueHostKernel).
  bool timed = tracedThisStep && !hostKernels[index];
  if (timed)
    checkCuda("trace", cudaEventRecord(traceBegin[index].get(), computeStream));
  try {
    enqueue(index);
  } catch (const RuntimeError &error) {
    throw RuntimeError("instructions[" + std::to_string(index) + "] (" +
                       thePlan.instructions[index].op + "): " + error.what());
  }
  if (timed)
    checkCuda("trace", cudaEventRecord(traceEnd[index].get(), computeStream));
}

void CudaExecutor::enqueueLaunch(SegmentLaunch &launch) {
  if (!launch.merged) {
    enqueueTimed(launch.members[0]);
    return;
  }
  if (tracedThisStep)
    checkCuda("trace", cudaEventRecord(launch.traceBegin.get(), computeStream));
  try {
    launch.merged->enqueue(*ctx, multiTensorTables + launch.tableOffset);
  } catch (const RuntimeError &error) {
    throw RuntimeError("instructions[" + std::to_string(launch.members[0]) +
                       "] (" + launch.merged->name() + "): " + error.what());
  }
  if (tracedThisStep)
    checkCuda("trace", cudaEventRecord(launch.traceEnd.get(), computeStream));
}

void CudaExecutor::dropMultiTensor() {
  segmentLaunches.clear();
  launchesAt.assign(thePlan.instructions.size(), {});
  inSegment.assign(thePlan.instructions.size(), 0);
  if (multiTensorTables)
    (void)cudaFree(multiTensorTables);
  multiTensorTables = nullptr;
  multiTensorTableBytes = 0;
}

void CudaExecutor::planMultiTensor() {
  if (multiTensorPlanned && plannedMultiTensor == options.multiTensor &&
      plannedGradientChecks == checkGradients)
    return;
  // A graph holds the launches planned before; the step after a new plan
  // runs op by op, so that it counts its checks of device data anew.
  dropGraph();
  stepsSincePrepare = 0;
  checkCuda("multi-tensor tables", cudaStreamSynchronize(computeStream));
  dropMultiTensor();
  multiTensorPlanned = true;
  plannedMultiTensor = options.multiTensor;
  plannedGradientChecks = checkGradients;
  multiStatus = MultiTensorStatus();
  multiStatus.applies = true;
  if (!options.multiTensor) {
    multiStatus.reason = "--multi-tensor=off";
    return;
  }
  std::vector<unsigned char> tables;
  for (const MultiTensorSegment &segment : planMultiTensorSegments(
           thePlan, addresses, prepared, attrs, checkGradients, runs)) {
    for (const std::vector<size_t> &members : segment.launches) {
      SegmentLaunch launch;
      launch.members = members;
      if (members.size() > 1) {
        std::vector<gpu::KernelCall> calls;
        for (size_t i : members)
          calls.push_back(
              {&attrs[i], &prepared[i].operands, &prepared[i].results});
        const std::string &op = thePlan.instructions[members[0]].op;
        launch.merged = std::make_unique<gpu::MultiTensorLaunch>(op, calls);
        // Each table at a 256-byte boundary, as cudaMalloc aligns.
        launch.tableOffset = (tables.size() + 255) / 256 * 256;
        tables.resize(launch.tableOffset);
        const std::vector<unsigned char> &table = launch.merged->table();
        tables.insert(tables.end(), table.begin(), table.end());
        multiStatus.instructions += static_cast<int64_t>(members.size());
        ++multiStatus.launches;
        multiStatus.runs.emplace_back(op, static_cast<int64_t>(members.size()));
      }
      launchesAt[segment.begin].push_back(segmentLaunches.size());
      segmentLaunches.push_back(std::move(launch));
    }
    for (size_t i = segment.begin; i < segment.end; ++i)
      inSegment[i] = 1;
  }
  if (checkGradients)
    multiStatus.reason = "--check-gradients checks each update's gradient on "
                         "the host right before it: the updates launch one "
                         "by one";
  else if (multiStatus.launches == 0)
    multiStatus.reason = "no two optimizer updates or casts of one kind "
                         "follow each other";
  if (tables.empty())
    return;
  checkCuda(
      "multi-tensor tables",
      cudaMalloc(reinterpret_cast<void **>(&multiTensorTables), tables.size()));
  multiTensorTableBytes = tables.size();
  checkCuda("multi-tensor tables",
            cudaMemcpy(multiTensorTables, tables.data(), tables.size(),
                       cudaMemcpyHostToDevice));
}

void CudaExecutor::awaitEvent(cudaEvent_t event, const char *what) {
  Clock::time_point deadline = Clock::now() + timeout;
  while (true) {
    cudaError_t status = cudaEventQuery(event);
    if (status == cudaSuccess)
      return;
    if (status != cudaErrorNotReady)
      checkCuda(what, status);
    checkNcclErrors();
    if (Clock::now() > deadline)
      throw RuntimeError(std::string(what) + ": not done after " +
                         formatDuration(timeout) +
                         " (a peer may have failed or stopped)");
    std::this_thread::yield();
  }
}

void CudaExecutor::mark(Event &event, cudaStream_t stream) {
  checkCuda("event",
            cudaEventRecordWithFlags(event.get(), stream,
                                     capturing ? cudaEventRecordExternal
                                               : cudaEventRecordDefault));
}

void CudaExecutor::setDeviceOptions(const DeviceOptions &given) {
  options = given;
  ctx->setAllowTf32(options.allowTf32);
  // A graph holds the launches made with the options before.
  dropGraph();
  stepsSincePrepare = 0;
}

CudaGraphStatus CudaExecutor::cudaGraphStatus() const {
  CudaGraphStatus status = graphStatus;
  if (!status.used && status.reason.empty())
    status.reason = stepsRun <= 1 ? "one step ran, and the first runs op by op"
                                  : "no step was captured (a traced step runs "
                                    "op by op)";
  return status;
}

std::string CudaExecutor::graphObstacle() const {
  if (options.cudaGraph == CudaGraphMode::Off)
    return "--cuda-graph=off";
  if (thePlan.arenas.size() > 1)
    return "the plan offloads to host memory or NVMe, whose updates and "
           "transfers run as host functions on a third stream; they are not "
           "captured";
  if (checkGradients)
    return "--check-gradients copies every gradient to the host within the "
           "step";
  if (hasHalves)
    return "the plan's send_recv halves send on streams of their own past "
           "their waits, which the step's end waits for";
  if (lossCheck)
    return "steps whose loss is not finite are skipped: the host reads the "
           "loss before the updates";
  if (sharesDevice && hasCollectives && nccl->worldSize() > 1)
    return "the ranks share one GPU, and each collective meets its peers on "
           "the host";
  if (hasCollectives && nccl->worldSize() > 1 &&
      options.cudaGraph == CudaGraphMode::Auto)
    return std::to_string(nccl->worldSize()) +
           " ranks: NCCL collectives in a CUDA graph are not verified here "
           "(--cuda-graph=on captures them)";
  if (captureFailed)
    return graphStatus.reason;
  return "";
}

bool CudaExecutor::setSkipNonfiniteSteps(bool on) {
  lossCheck.reset();
  if (!on)
    return true;
  // Only the loss's stage reads the loss before the updates: the other
  // stages could not stop with it.
  if (thePlan.pipeline)
    return false;
  lossCheck = findLossCheckPoint(thePlan, prepared);
  return lossCheck.has_value();
}

bool CudaExecutor::lossCheckBefore(size_t index) const {
  if (index >= lossCheck->firstUpdate)
    return true;
  for (size_t launch : launchesAt[index])
    if (segmentLaunches[launch].members.back() >= lossCheck->firstUpdate)
      return true;
  return false;
}

bool CudaExecutor::lossNotFinite() {
  // The loss, and the collective that reduces it, are among the work
  // enqueued so far; so is every collective the peers started too, all
  // of which must end before the step does.
  checkCuda("loss check", cudaEventRecord(lossReady.get(false), computeStream));
  awaitEvent(lossReady.get(false), "loss check");
  checkCuda("loss check", cudaEventRecord(commDrained.get(false), commStream));
  awaitEvent(commDrained.get(false), "loss check");
  if (copyStream) {
    checkCuda("loss check",
              cudaEventRecord(copyDrained.get(false), copyStream));
    awaitEvent(copyDrained.get(false), "loss check");
  }
  std::vector<double> loss = loadValues(tensor(thePlan.outputs[0]));
  return !loss.empty() && !std::isfinite(loss[0]);
}

void CudaExecutor::noteEager(const std::string &reason) {
  graphStatus.reason = reason;
  if (options.cudaGraph == CudaGraphMode::Off || myRank != 0)
    return;
  for (const std::string &said : notes)
    if (said == reason)
      return;
  notes.push_back(reason);
  std::cerr << "CUDA graph not used: " << reason << std::endl;
}

void CudaExecutor::dropGraph() {
  if (graphExec)
    (void)cudaGraphExecDestroy(graphExec);
  if (graph)
    (void)cudaGraphDestroy(graph);
  graphExec = nullptr;
  graph = nullptr;
  graphChecks.clear();
}

bool CudaExecutor::captureStep(int64_t stepNumber) {
  // Every event exists before the capture, and the slots of every check of
  // device data the step begins (as many as the step before began).
  for (Event *event : {&stepBegin, &backwardBegin, &optimizerBegin, &stepEnd})
    event->get();
  for (std::vector<Event> *timed :
       {&bucketBegin, &bucketDone, &waitBegin, &waitEnd})
    for (Event &event : *timed)
      event.get();
  for (std::vector<Event> *untimed : {&bucketReady, &bucketJoin})
    for (Event &event : *untimed)
      event.get(false);
  ctx->reserveChecks(stepChecks);
  CommStats before = ncclStats();
  std::string failure;
  cudaGraph_t captured = nullptr;
  // Thread-local: the other in-process ranks keep launching while this
  // thread captures, and a call of this thread that cannot be captured
  // fails the capture instead of running.
  cudaError_t status =
      cudaStreamBeginCapture(computeStream, cudaStreamCaptureModeThreadLocal);
  if (status != cudaSuccess) {
    failure = std::string("cudaStreamBeginCapture: ") +
              cudaGetErrorName(status) + ": " + cudaGetErrorString(status);
  } else {
    capturing = true;
    try {
      enqueueStep(stepNumber);
      graphChecks = ctx->takeChecks();
    } catch (const std::exception &error) {
      failure = error.what();
    }
    capturing = false;
    status = cudaStreamEndCapture(computeStream, &captured);
    if (failure.empty() && status != cudaSuccess)
      failure = std::string("cudaStreamEndCapture: ") +
                cudaGetErrorName(status) + ": " + cudaGetErrorString(status);
  }
  if (failure.empty()) {
    status = cudaGraphInstantiate(&graphExec, captured, 0);
    if (status != cudaSuccess) {
      graphExec = nullptr;
      failure = std::string("cudaGraphInstantiate: ") +
                cudaGetErrorName(status) + ": " + cudaGetErrorString(status);
    }
  }
  if (failure.empty()) {
    graph = captured;
    graphStepStats = ncclStats();
    addStats(graphStepStats, before, -1);
    graphStatus.capturedStep = stepsRun;
    return true;
  }
  // Nothing captured has run; the failure is not the device's.
  (void)cudaGetLastError();
  if (captured)
    (void)cudaGraphDestroy(captured);
  ctx->discardChecks();
  graphChecks.clear();
  captureFailed = true;
  std::string reason =
      "capturing step " + std::to_string(stepNumber) + " failed: " + failure;
  if (hasCollectives && nccl->worldSize() > 1)
    throw RuntimeError(reason + " (NCCL may have begun its collectives; run "
                                "with --cuda-graph=off)");
  noteEager(reason);
  return false;
}

void CudaExecutor::enqueueStep(int64_t stepNumber) {
  mark(stepBegin, computeStream);
  // A copy from pinned memory: a replay reads the step written before it.
  for (int id : thePlan.steps)
    if (thePlan.valueOnStage(id, myStage))
      checkCuda("step",
                cudaMemcpyAsync(tensor(id).data, hostStep, sizeof(int64_t),
                                cudaMemcpyHostToDevice, computeStream));
  tracedThisStep = tracing && !capturing;
  if (tracedThisStep) {
    traceBegin.resize(thePlan.instructions.size());
    traceEnd.resize(thePlan.instructions.size());
  }
  bool backwardMarked = false, optimizerMarked = false;
  bool lossChecked = false;
  tracker.beginStep();
  // The host stream's updates may write what an earlier step's unwaited
  // transfer reads; they come after the forward, by when it is done.
  for (int transfer = 0; transfer < thePlan.numTransfers; ++transfer)
    if (unsettled[transfer])
      checkCuda("step", cudaStreamWaitEvent(
                            hostStream, transferDone[transfer].get(false), 0));
  for (size_t i = 0; i < thePlan.instructions.size(); ++i) {
    // Another pipeline stage's: no kernel, collective, memory or trace.
    if (!runs[i])
      continue;
    const Instruction &instruction = thePlan.instructions[i];
    PreparedInstruction &entry = prepared[i];
    if (lossCheck && !lossChecked && lossCheckBefore(i)) {
      lossChecked = true;
      // Nothing after this point runs: no variable is written.
      if (lossNotFinite())
        break;
    }
    if (entry.phase != Phase::Forward && !backwardMarked) {
      mark(backwardBegin, computeStream);
      backwardMarked = true;
    }
    // An offloaded update runs on the host stream, during the backward
    // with overlap_comm: the device's optimizer phase starts at its first
    // update on the device.
    if (entry.phase == Phase::Optimizer && !hostKernels[i] &&
        !optimizerMarked) {
      mark(optimizerBegin, computeStream);
      optimizerMarked = true;
    }
    if (checkGradients && !entry.updatedParameter.empty()) {
      // Before the update writes what a non-finite gradient would spoil;
      // waited for with the timeout, as the gradient may come from peers.
      checkCuda("gradient check",
                cudaEventRecord(gradientReady.get(false), computeStream));
      awaitEvent(gradientReady.get(false), "gradient check");
      checkGradientFinite(entry, loadValues(entry.operands[1]), stepNumber);
    }
    for (int buffer : entry.writtenBuffers)
      tracker.markLive(buffer);
    tracker.sample();
    settleTransfersBefore(i);
    // A segment's instructions run as its launches, at its first; the
    // memory tracker still follows the plan's order.
    for (size_t launch : launchesAt[i]) {
      for (size_t member : segmentLaunches[launch].members)
        settleTransfersBefore(member);
      enqueueLaunch(segmentLaunches[launch]);
    }
    if (!inSegment[i])
      enqueueTimed(i);
    for (int buffer : instruction.free)
      tracker.markDead(buffer);
  }
  if (!backwardMarked)
    mark(backwardBegin, computeStream);
  if (!optimizerMarked)
    mark(optimizerBegin, computeStream);
  // Updates whose results no transfer reads (states updated in place in
  // host memory) end before the step does.
  if (hostWorkEnqueued) {
    if (!hostWaitMarked) {
      checkCuda("step", cudaEventRecord(hostWaitBegin.get(), computeStream));
      hostWaitMarked = true;
    }
    checkCuda("step", cudaEventRecord(hostDrained.get(false), hostStream));
    checkCuda("step",
              cudaStreamWaitEvent(computeStream, hostDrained.get(false), 0));
    hostWorkEnqueued = false;
  }
  mark(stepEnd, computeStream);
}

double CudaExecutor::runStep(int64_t stepNumber) {
  checkCuda("cudaSetDevice", cudaSetDevice(deviceIndex));
  if (failed)
    throw RuntimeError("rank " + std::to_string(myRank) +
                       ": the GPU executor failed earlier");
  Clock::time_point hostBegin = Clock::now();
  bool launched = false;
  try {
    // The previous step has finished, so the pinned step is free to reuse.
    *hostStep = stepNumber;
    ++stepsRun;
    planMultiTensor();
    CommStats before = ncclStats();
    std::string obstacle = graphObstacle();
    if (!obstacle.empty()) {
      dropGraph();
      noteEager(obstacle);
    }
    // The first step after prepare() runs op by op, so that its errors
    // name their op and one-time set-up (the cuBLAS handle, the slots of
    // the device checks, the pool) happens outside a capture; the second
    // is captured. A traced step runs op by op, each op timed.
    bool opByOp = !obstacle.empty() || tracing || stepsSincePrepare == 0;
    if (!opByOp && !graphExec)
      opByOp = !captureStep(stepNumber);
    ++stepsSincePrepare;
    if (opByOp) {
      uint64_t checksBefore = ctx->checksBegun();
      enqueueStep(stepNumber);
      awaitEvent(stepEnd.get(), "step");
      drainHalves();
      rethrowHostError();
      // Every collective was waited for, so the communication stream is
      // idle.
      ctx->checkDeviceErrors();
      stepChecks = ctx->checksBegun() - checksBefore;
      addStats(stats, ncclStats());
      addStats(stats, before, -1);
    } else {
      tracedThisStep = false;
      checkCuda("step: cudaGraphLaunch",
                cudaGraphLaunch(graphExec, computeStream));
      checkCuda("step", cudaEventRecord(graphDone.get(false), computeStream));
      awaitEvent(graphDone.get(false), "step");
      ctx->raiseChecks(graphChecks);
      addStats(stats, graphStepStats);
      launched = true;
      graphStatus.used = true;
      ++graphStatus.graphSteps;
    }
    checkNcclErrors();
  } catch (...) {
    failed = true;
    throw;
  }
  times = StepTimes();
  times.step =
      std::chrono::duration<double, std::milli>(Clock::now() - hostBegin)
          .count();
  try {
    collectTimes();
  } catch (const RuntimeError &error) {
    if (!launched)
      throw;
    // Events recorded by a graph's nodes time as any other; should a
    // driver not time them, the step's time is still right.
    double step = times.step;
    times = StepTimes();
    times.step = step;
    if (myRank == 0 && !timingNoted)
      std::cerr << "CUDA graph: no phase times (" << error.what() << ")"
                << std::endl;
    timingNoted = true;
  }
  // A launch runs what the captured step did: the same peaks.
  peaks = tracker.peaks();
  cudaMemPool_t pool;
  uint64_t poolHigh = 0, graphHigh = 0;
  if (cudaDeviceGetDefaultMemPool(&pool, deviceIndex) == cudaSuccess)
    (void)cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemHigh,
                                  &poolHigh);
  // The graph's scratch comes from the device's graph memory pool.
  if (graphExec && cudaDeviceGetGraphMemAttribute(
                       deviceIndex, cudaGraphMemAttrReservedMemHigh,
                       &graphHigh) != cudaSuccess)
    graphHigh = 0;
  (void)cudaGetLastError();
  peaks.deviceHeld = thePlan.arenaBytes + static_cast<int64_t>(poolHigh) +
                     static_cast<int64_t>(graphHigh) +
                     static_cast<int64_t>(ctx->blasWorkspaceBytes()) +
                     static_cast<int64_t>(multiTensorTableBytes);
  if (thePlan.outputs.empty())
    return 0;
  std::vector<double> loss = outputValue(0);
  return loss.empty() ? 0 : loss[0];
}

void CudaExecutor::collectTimes() {
  times.forward = elapsedMs(stepBegin.get(), backwardBegin.get());
  times.backward = elapsedMs(backwardBegin.get(), optimizerBegin.get());
  times.optimizer = elapsedMs(optimizerBegin.get(), stepEnd.get());
  // Phases count kernel time: the time blocked in waits is commWait.
  double waitIn[3] = {0, 0, 0};
  for (size_t i = 0; i < thePlan.instructions.size(); ++i) {
    const Instruction &instruction = thePlan.instructions[i];
    // Another pipeline stage's instruction recorded no event here.
    if (!runs[i])
      continue;
    if (int wait = waitIndexOf[i]; wait >= 0) {
      double ms = elapsedMs(waitBegin[wait].get(), waitEnd[wait].get());
      times.commWait += ms;
      waitIn[static_cast<int>(prepared[i].phase)] += ms;
    }
    if (instruction.kind == InstructionKind::CollectiveStart)
      times.commBusy += elapsedMs(bucketBegin[instruction.bucket].get(),
                                  bucketDone[instruction.bucket].get());
  }
  times.forward -= waitIn[0];
  times.backward -= waitIn[1];
  times.optimizer -= waitIn[2];
  times.hostUpdate = hostUpdateNanos.exchange(0) / 1e6;
  if (hostWaitMarked)
    times.hostExposed = std::min<double>(
        times.hostUpdate, elapsedMs(hostWaitBegin.get(), stepEnd.get()));
  hostWaitMarked = false;
  if (!tracedThisStep)
    return;
  trace.clear();
  auto micros = [&](cudaEvent_t at) {
    return 1000.0 * elapsedMs(stepBegin.get(), at);
  };
  for (size_t i = 0; i < thePlan.instructions.size(); ++i) {
    const Instruction &instruction = thePlan.instructions[i];
    if (!runs[i])
      continue;
    // A segment's launches, in the order they ran: a merged one as
    // "nn.adam x148", the others as their instruction.
    for (size_t index : launchesAt[i]) {
      SegmentLaunch &launch = segmentLaunches[index];
      size_t first = launch.members[0];
      if (launch.merged)
        trace.push_back({TraceStream::Compute, launch.merged->name(),
                         phaseName(prepared[first].phase), -1,
                         micros(launch.traceBegin.get()),
                         micros(launch.traceEnd.get())});
      else
        trace.push_back({TraceStream::Compute, thePlan.instructions[first].op,
                         phaseName(prepared[first].phase), -1,
                         micros(traceBegin[first].get()),
                         micros(traceEnd[first].get())});
    }
    if (inSegment[i] || instruction.kind == InstructionKind::CollectiveStart)
      continue;
    bool wait = instruction.kind == InstructionKind::CollectiveWait;
    trace.push_back({TraceStream::Compute, instruction.op,
                     wait ? "wait" : phaseName(prepared[i].phase),
                     wait ? instruction.bucket : -1,
                     micros(traceBegin[i].get()), micros(traceEnd[i].get())});
  }
  for (size_t i = 0; i < thePlan.instructions.size(); ++i)
    if (const Instruction &instruction = thePlan.instructions[i];
        runs[i] && instruction.kind == InstructionKind::CollectiveStart)
      trace.push_back({TraceStream::Comm,
                       collectiveKindName(instruction.collective), "collective",
                       instruction.bucket,
                       micros(bucketBegin[instruction.bucket].get()),
                       micros(bucketDone[instruction.bucket].get())});
}

} // namespace

namespace {
/// The GPUs this process sees; throws when there is none.
int visibleDevices() {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    (void)cudaGetLastError();
    throw RuntimeError(
        std::string("no CUDA device: ") +
        (status != cudaSuccess ? cudaGetErrorString(status) : "none found"));
  }
  return count;
}

/// Whether the ranks run as threads of this process (not under mpirun).
bool inProcessRanks() { return envInt("OMPI_COMM_WORLD_LOCAL_SIZE", -1) < 0; }
} // namespace

bool ranksShareDevice(int worldSize) {
  return worldSize > 1 && inProcessRanks() && worldSize > visibleDevices();
}

int cudaDeviceForRank(int rank, int worldSize) {
  int count = visibleDevices();
  if (ranksShareDevice(worldSize))
    return 0;
  int localRank = envInt("OMPI_COMM_WORLD_LOCAL_RANK", rank);
  int localRanks = envInt("OMPI_COMM_WORLD_LOCAL_SIZE", worldSize);
  if (localRanks > count)
    throw RuntimeError(std::to_string(localRanks) +
                       " ranks on this machine need as many GPUs, but " +
                       std::to_string(count) + (count == 1 ? " is" : " are") +
                       " visible (one GPU per MPI rank: NCCL cannot run two "
                       "ranks on one device; in-process ranks, without "
                       "mpirun, share it)");
  return localRank % count;
}

std::unique_ptr<Executor> makeCudaExecutor(const Plan &plan, int rank,
                                           Communicator &hostComm) {
  return std::make_unique<CudaExecutor>(plan, rank, hostComm);
}

} // namespace zerosbp::runtime
