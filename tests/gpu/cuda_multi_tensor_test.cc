//===- cuda_multi_tensor_test.cc - multi-tensor updates and casts ---------===//
//
// runtime/cuda/MultiTensor.h. Without a device: the keys that group
// instructions, the order scheduleSegment gives a segment's launches (every
// dependency kept, each parameter's update and cast as two launches), and
// the layout of a launch's table. With one: each multi-tensor kernel (Adam,
// AdamW with per-tensor weight decay, SGD, casts to bf16 and f16 on the
// vector and the scalar path) against the single kernels on the same
// inputs, bit for bit, over two steps; a bad Adam step with the single
// kernel's message and nothing written; a launch captured in a CUDA graph.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/MultiTensor.h"
#include "tests/gpu/gpu_test_util.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace zerosbp::runtime::gputest {
namespace {

using gpu::ByteRange;
using gpu::KernelCall;
using gpu::MultiTensorLaunch;
using gpu::SegmentNode;

//===----------------------------------------------------------------------===//
// Without a device
//===----------------------------------------------------------------------===//

/// Bytes [begin, begin + size) of a pretend address space.
ByteRange bytes(uintptr_t begin, uintptr_t size) {
  return {0x10000 + begin, 0x10000 + begin + size};
}

SegmentNode node(std::vector<ByteRange> reads, std::vector<ByteRange> writes,
                 std::string key) {
  return {std::move(reads), std::move(writes), std::move(key)};
}

using Launches = std::vector<std::vector<size_t>>;

TEST(MultiTensorSchedule, UpdatesThenCasts) {
  // Per parameter k: adam reads master, grad, m, v and the step and writes
  // master, m, v in place; the cast reads the master, writes the param.
  std::vector<SegmentNode> nodes;
  ByteRange step = bytes(0, 8);
  for (uintptr_t k = 0; k < 4; ++k) {
    uintptr_t base = 1000 * (k + 1);
    ByteRange master = bytes(base, 100), grad = bytes(base + 100, 100),
              m = bytes(base + 200, 100), v = bytes(base + 300, 100),
              param = bytes(base + 400, 50);
    nodes.push_back(node({master, grad, m, v, step}, {master, m, v}, "adam"));
    nodes.push_back(node({master}, {param}, "cast"));
  }
  EXPECT_EQ(gpu::scheduleSegment(nodes),
            (Launches{{0, 2, 4, 6}, {1, 3, 5, 7}}));
}

TEST(MultiTensorSchedule, DependenciesSplitAGroup) {
  // 1 reads what 0 writes; 2 writes what 1 reads; 3 writes what 0 writes.
  ByteRange a = bytes(0, 16), b = bytes(16, 16), c = bytes(32, 16),
            d = bytes(48, 16);
  std::vector<SegmentNode> nodes = {node({a}, {b}, "k"), node({b}, {c}, "k"),
                                    node({d}, {c}, "k"), node({d}, {b}, "k")};
  // 0 alone: 1 reads its b, 3 writes its b. Then 1 (2 writes c, which 1
  // writes; 3 waits for 0 and 1). Then 2 and 3.
  EXPECT_EQ(gpu::scheduleSegment(nodes), (Launches{{0}, {1}, {2, 3}}));
  // Partly overlapping ranges count; touching ones do not.
  std::vector<SegmentNode> touching = {node({bytes(0, 16)}, {}, "k"),
                                       node({}, {bytes(16, 16)}, "k"),
                                       node({}, {bytes(15, 2)}, "k")};
  EXPECT_EQ(gpu::scheduleSegment(touching), (Launches{{0, 1}, {2}}));
}

TEST(MultiTensorSchedule, ReadsShareAndOthersGoFirst) {
  ByteRange shared = bytes(0, 8);
  std::vector<SegmentNode> nodes = {
      node({shared, bytes(100, 8)}, {bytes(100, 8)}, "adam"),
      node({bytes(200, 8)}, {bytes(300, 8)}, ""), // A slice: alone.
      node({shared, bytes(300, 8)}, {bytes(300, 8)}, "adam"),
      node({shared, bytes(400, 8)}, {bytes(400, 8)}, "adam"),
      node({bytes(500, 8)}, {bytes(600, 8)}, ""),
      node({bytes(600, 8)}, {bytes(700, 8)}, "other"),
  };
  // The instructions without a key run as soon as they are ready, so that
  // the third update, which reads what the slice writes, joins the others.
  // Without keys the order is the plan's.
  EXPECT_EQ(gpu::scheduleSegment(nodes), (Launches{{1}, {4}, {0, 2, 3}, {5}}));
  for (SegmentNode &each : nodes)
    each.key.clear();
  EXPECT_EQ(gpu::scheduleSegment(nodes),
            (Launches{{0}, {1}, {2}, {3}, {4}, {5}}));
  EXPECT_TRUE(gpu::scheduleSegment({}).empty());
}

/// A tensor of `type` and `shape` at a pretend device address.
TensorRef fake(uintptr_t address, DType type, std::vector<int64_t> shape) {
  TensorRef ref;
  ref.data = reinterpret_cast<void *>(address);
  ref.dtype = type;
  ref.shape = std::move(shape);
  return ref;
}

struct FakeAdam {
  std::vector<TensorRef> operands, results;
};

/// In place, as plans write it; the step at 0x100.
FakeAdam fakeAdam(uintptr_t base, int64_t n, DType grad = DType::F32) {
  TensorRef param = fake(base, DType::F32, {n}),
            g = fake(base + 0x100000, grad, {n}),
            m = fake(base + 0x200000, DType::F32, {n}),
            v = fake(base + 0x300000, DType::F32, {n}),
            step = fake(0x100, DType::I64, {});
  return {{param, g, m, v, step}, {param, m, v}};
}

TEST(MultiTensorKey, WhatGroups) {
  AttrMap lr = makeAttrs({{"lr", 1e-3}, {"weight_decay", 0.0}});
  FakeAdam one = fakeAdam(0x1000000, 100), two = fakeAdam(0x2000000, 7);
  std::string key =
      gpu::multiTensorKey("nn.adam", lr, one.operands, one.results);
  EXPECT_FALSE(key.empty());
  EXPECT_EQ(gpu::multiTensorKey("nn.adam", lr, two.operands, two.results), key);
  // Weight decay is per tensor; lr and the betas are the launch's.
  EXPECT_EQ(gpu::multiTensorKey(
                "nn.adam", makeAttrs({{"lr", 1e-3}, {"weight_decay", 0.1}}),
                two.operands, two.results),
            key);
  EXPECT_NE(gpu::multiTensorKey("nn.adam", makeAttrs({{"lr", 2e-3}}),
                                two.operands, two.results),
            key);
  EXPECT_NE(gpu::multiTensorKey("nn.adam",
                                makeAttrs({{"lr", 1e-3}, {"beta2", 0.95}}),
                                two.operands, two.results),
            key);
  EXPECT_NE(gpu::multiTensorKey("nn.adamw", lr, two.operands, two.results),
            key);
  // Another step operand.
  FakeAdam otherStep = two;
  otherStep.operands[4].data = reinterpret_cast<void *>(0x200);
  EXPECT_NE(
      gpu::multiTensorKey("nn.adam", lr, otherStep.operands, otherStep.results),
      key);
  // A bf16 gradient is still an update of the group.
  FakeAdam bf16 = fakeAdam(0x3000000, 9, DType::BF16);
  EXPECT_EQ(gpu::multiTensorKey("nn.adam", lr, bf16.operands, bf16.results),
            key);

  // Alone: a result over an operand it does not replace, no elements,
  // operands the kernel refuses, no attribute lr, host memory.
  FakeAdam overlap = two;
  // m's result one element into the grad (replacing it would be in place).
  overlap.results[1].data = static_cast<float *>(overlap.operands[1].data) + 1;
  FakeAdam empty = fakeAdam(0x4000000, 0);
  FakeAdam bad = two;
  bad.operands.pop_back();
  FakeAdam host = two;
  host.operands[3].data = nullptr;
  host.results[2].data = nullptr;
  for (const FakeAdam *alone : {&overlap, &empty, &bad, &host})
    EXPECT_EQ(
        gpu::multiTensorKey("nn.adam", lr, alone->operands, alone->results),
        "");
  EXPECT_EQ(gpu::multiTensorKey("nn.adam", {}, two.operands, two.results), "");

  // Casts group by their two types; the same type is a copy of bytes.
  TensorRef master = fake(0x5000000, DType::F32, {3, 5});
  TensorRef param = fake(0x6000000, DType::BF16, {3, 5});
  std::string cast = gpu::multiTensorKey("nn.cast", {}, {master}, {param});
  EXPECT_EQ(cast, "nn.cast f32 to bf16");
  TensorRef half = param;
  half.dtype = DType::F16;
  EXPECT_EQ(gpu::multiTensorKey("nn.cast", {}, {master}, {half}),
            "nn.cast f32 to f16");
  TensorRef same = fake(0x6000000, DType::F32, {3, 5});
  EXPECT_EQ(gpu::multiTensorKey("nn.cast", {}, {master}, {same}), "");
  TensorRef over = fake(0x5000000 + 8, DType::BF16, {3, 5});
  EXPECT_EQ(gpu::multiTensorKey("nn.cast", {}, {master}, {over}), "");

  // SGD; the other ops never group.
  TensorRef grad = fake(0x7000000, DType::F32, {3, 5});
  AttrMap sgdLr = makeAttrs({{"lr", 0.1}});
  EXPECT_EQ(gpu::multiTensorKey("nn.sgd", sgdLr, {master, grad}, {master}),
            "nn.sgd");
  TensorRef shifted = fake(0x7000000 + 4, DType::F32, {3, 5});
  EXPECT_EQ(gpu::multiTensorKey("nn.sgd", sgdLr, {master, grad}, {shifted}),
            "");
  EXPECT_EQ(gpu::multiTensorKey("nn.relu", {}, {master}, {master}), "");

  EXPECT_TRUE(gpu::checksDeviceData("nn.embedding"));
  EXPECT_TRUE(gpu::checksDeviceData("nn.cross_entropy_grad"));
  // Of the split cross-entropy, the steps that read the labels.
  EXPECT_TRUE(gpu::checksDeviceData("nn.cross_entropy_sums"));
  EXPECT_TRUE(gpu::checksDeviceData("nn.cross_entropy_split_grad"));
  EXPECT_FALSE(gpu::checksDeviceData("nn.cross_entropy_max"));
  EXPECT_FALSE(gpu::checksDeviceData("nn.cross_entropy_loss"));
  EXPECT_FALSE(gpu::checksDeviceData("nn.adam"));
  EXPECT_FALSE(gpu::checksDeviceData("nn.cast"));
}

TEST(MultiTensorLaunchTable, EntriesAndChunks) {
  AttrMap lr = makeAttrs({{"lr", 1e-3}});
  AttrMap decay = makeAttrs({{"lr", 1e-3}, {"weight_decay", 0.5}});
  int64_t big = gpu::kMultiTensorChunk * 2 + 5;
  FakeAdam one = fakeAdam(0x1000000, big), two = fakeAdam(0x2000000, 3);
  MultiTensorLaunch launch("nn.adamw",
                           {KernelCall{&lr, &one.operands, &one.results},
                            KernelCall{&decay, &two.operands, &two.results}});
  EXPECT_EQ(launch.name(), "nn.adamw x2");
  EXPECT_EQ(launch.size(), 2u);
  EXPECT_EQ(launch.elements(), big + 3);
  ASSERT_EQ(launch.chunkCount(), 4);
  const std::vector<unsigned char> &table = launch.table();
  size_t chunkOffset = (2 * sizeof(gpu::AdamEntry) + 15) / 16 * 16;
  ASSERT_EQ(table.size(), chunkOffset + 4 * sizeof(gpu::MultiTensorChunk));
  gpu::AdamEntry entries[2];
  std::memcpy(entries, table.data(), sizeof entries);
  EXPECT_EQ(entries[0].param.data, one.operands[0].data);
  EXPECT_EQ(entries[0].newExpAvgSq.data, one.results[2].data);
  EXPECT_EQ(entries[1].grad.data, two.operands[1].data);
  EXPECT_FALSE(entries[0].c.hasDecay);
  EXPECT_TRUE(entries[1].c.hasDecay);
  EXPECT_FLOAT_EQ(entries[1].c.decay, static_cast<float>(1.0 - 1e-3 * 0.5));
  gpu::MultiTensorChunk chunks[4];
  std::memcpy(chunks, table.data() + chunkOffset, sizeof chunks);
  int64_t c = gpu::kMultiTensorChunk;
  EXPECT_EQ(chunks[0].tensor, 0);
  EXPECT_EQ(chunks[0].begin, 0);
  EXPECT_EQ(chunks[0].end, c);
  EXPECT_EQ(chunks[2].begin, 2 * c);
  EXPECT_EQ(chunks[2].end, big);
  EXPECT_EQ(chunks[3].tensor, 1);
  EXPECT_EQ(chunks[3].begin, 0);
  EXPECT_EQ(chunks[3].end, 3);

  // Fewer than two, or of two keys: refused.
  EXPECT_THROW(MultiTensorLaunch(
                   "nn.adam", {KernelCall{&lr, &one.operands, &one.results}}),
               RuntimeError);
  AttrMap other = makeAttrs({{"lr", 2e-3}});
  EXPECT_THROW(
      MultiTensorLaunch("nn.adam",
                        {KernelCall{&lr, &one.operands, &one.results},
                         KernelCall{&other, &two.operands, &two.results}}),
      RuntimeError);
}

//===----------------------------------------------------------------------===//
// On a device
//===----------------------------------------------------------------------===//

class CudaMultiTensor : public CudaDeviceTest {};

/// Device copies of host tensors, in the order given.
struct Copies {
  explicit Copies(const std::vector<const HostTensor *> &hosts) {
    for (const HostTensor *host : hosts) {
      tensors.push_back(std::make_unique<DeviceTensor>(*host));
      refs.push_back(tensors.back()->ref);
    }
  }
  std::vector<std::unique_ptr<DeviceTensor>> tensors;
  std::vector<TensorRef> refs;
};

/// `launch`'s table in device memory.
class DeviceTable {
public:
  explicit DeviceTable(const MultiTensorLaunch &launch) {
    const std::vector<unsigned char> &table = launch.table();
    checkCudaCall(cudaMalloc(&data, table.size()), "cudaMalloc");
    checkCudaCall(
        cudaMemcpy(data, table.data(), table.size(), cudaMemcpyHostToDevice),
        "cudaMemcpy");
  }
  ~DeviceTable() { (void)cudaFree(data); }
  DeviceTable(const DeviceTable &) = delete;
  DeviceTable &operator=(const DeviceTable &) = delete;
  void *data = nullptr;
};

/// One op's instructions, each with its own operands; the results replace
/// operands `inPlace[r]` (or are fresh tensors where -1).
struct Instructions {
  std::vector<AttrMap> attrs;
  std::vector<std::vector<HostTensor>> operands;
  std::vector<std::vector<ResultSpec>> results;
};

/// Runs `op` on device copies of every instruction's operands, once with
/// the single kernel per instruction and once as one multi-tensor launch
/// (`steps` times each, the step operand, shared, set to 1, 2, ...), and
/// expects the same bytes in every result. `stepOperand` is the index of
/// the step among the operands (-1: none).
void expectSameAsSingle(const std::string &op, const Instructions &given,
                        int stepOperand, int steps, const std::string &what) {
  SCOPED_TRACE(op + " " + what);
  HostTensor step = makeTensor(DType::I64, {}, {1});
  DeviceTensor singleStep(step), multiStep(step);
  std::vector<std::unique_ptr<Copies>> single, multi;
  std::vector<std::vector<TensorRef>> singleOperands, multiOperands,
      singleResults, multiResults;
  std::vector<std::unique_ptr<DeviceTensor>> fresh;
  for (size_t k = 0; k < given.operands.size(); ++k) {
    std::vector<const HostTensor *> hosts;
    for (const HostTensor &operand : given.operands[k])
      hosts.push_back(&operand);
    single.push_back(std::make_unique<Copies>(hosts));
    multi.push_back(std::make_unique<Copies>(hosts));
    singleOperands.push_back(single.back()->refs);
    multiOperands.push_back(multi.back()->refs);
    if (stepOperand >= 0) {
      singleOperands.back()[stepOperand] = singleStep.ref;
      multiOperands.back()[stepOperand] = multiStep.ref;
    }
    singleResults.emplace_back();
    multiResults.emplace_back();
    for (const ResultSpec &spec : given.results[k]) {
      if (spec.alias >= 0) {
        singleResults.back().push_back(singleOperands.back()[spec.alias]);
        multiResults.back().push_back(multiOperands.back()[spec.alias]);
        continue;
      }
      HostTensor blank(spec.type, spec.shape);
      std::memset(blank.ref.data, kUnwrittenByte, blank.ref.bytes());
      fresh.push_back(std::make_unique<DeviceTensor>(blank));
      singleResults.back().push_back(fresh.back()->ref);
      fresh.push_back(std::make_unique<DeviceTensor>(blank));
      multiResults.back().push_back(fresh.back()->ref);
    }
  }
  std::vector<KernelCall> calls;
  for (size_t k = 0; k < given.operands.size(); ++k)
    calls.push_back({&given.attrs[k], &multiOperands[k], &multiResults[k]});
  MultiTensorLaunch launch(op, calls);
  DeviceTable table(launch);
  CudaKernelFn kernel = findCudaKernel(op);
  CudaContext ctx;
  for (int s = 1; s <= steps; ++s) {
    HostTensor count = makeTensor(DType::I64, {}, {double(s)});
    checkCudaCall(cudaMemcpy(singleStep.ref.data, count.ref.data, 8,
                             cudaMemcpyHostToDevice),
                  "step");
    checkCudaCall(cudaMemcpy(multiStep.ref.data, count.ref.data, 8,
                             cudaMemcpyHostToDevice),
                  "step");
    for (size_t k = 0; k < calls.size(); ++k)
      kernel(given.attrs[k], singleOperands[k], singleResults[k], ctx);
    launch.enqueue(ctx, table.data);
    ctx.checkDeviceErrors();
  }
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  for (size_t k = 0; k < calls.size(); ++k)
    for (size_t r = 0; r < singleResults[k].size(); ++r) {
      const TensorRef &a = singleResults[k][r], &b = multiResults[k][r];
      HostTensor x(a.dtype, a.shape), y(b.dtype, b.shape);
      checkCudaCall(
          cudaMemcpy(x.ref.data, a.data, a.bytes(), cudaMemcpyDeviceToHost),
          "copy");
      checkCudaCall(
          cudaMemcpy(y.ref.data, b.data, b.bytes(), cudaMemcpyDeviceToHost),
          "copy");
      expectAgree(y, x, exactBits(),
                  "instruction " + std::to_string(k) + " result " +
                      std::to_string(r));
    }
}

/// Sizes with odd tails and tensors of several chunks.
const std::vector<int64_t> kSizes = {1, 7, 4096, gpu::kMultiTensorChunk + 3,
                                     2 * gpu::kMultiTensorChunk + 1000};

TEST_F(CudaMultiTensor, AdamAndAdamWAsTheSingleKernels) {
  for (const char *op : {"nn.adam", "nn.adamw"})
    for (DType gradType : {DType::F32, DType::BF16}) {
      Instructions given;
      unsigned seed = 1;
      for (size_t k = 0; k < kSizes.size(); ++k) {
        int64_t n = kSizes[k];
        // Weight decay per tensor, as parameter groups have it.
        given.attrs.push_back(makeAttrs({{"lr", 3e-3},
                                         {"beta1", 0.8},
                                         {"beta2", 0.95},
                                         {"eps", 1e-6},
                                         {"weight_decay", k % 2 ? 0.1 : 0.0},
                                         {"grad_scale", 4.0}}));
        std::vector<HostTensor> operands;
        operands.push_back(randomTensor(DType::F32, {n}, seed++));
        operands.push_back(randomTensor(gradType, {n}, seed++));
        operands.push_back(randomTensor(DType::F32, {n}, seed++));
        operands.push_back(randomTensor(DType::F32, {n}, seed++, 0.0, 1.0));
        operands.push_back(makeTensor(DType::I64, {}, {1}));
        given.operands.push_back(std::move(operands));
        given.results.push_back(
            {{DType::F32, {n}, 0}, {DType::F32, {n}, 2}, {DType::F32, {n}, 3}});
      }
      expectSameAsSingle(op, given, 4, 2,
                         std::string("grads ") + dtypeName(gradType));
    }
}

TEST_F(CudaMultiTensor, SgdAsTheSingleKernel) {
  Instructions given;
  unsigned seed = 1;
  for (size_t k = 0; k < kSizes.size(); ++k) {
    int64_t n = kSizes[k];
    given.attrs.push_back(
        makeAttrs({{"lr", 0.05 * (k + 1)}, {"grad_scale", 8.0}}));
    std::vector<HostTensor> operands;
    operands.push_back(randomTensor(DType::F32, {n}, seed++));
    operands.push_back(
        randomTensor(k % 2 ? DType::BF16 : DType::F32, {n}, seed++));
    given.operands.push_back(std::move(operands));
    // In place, and into a fresh bf16 tensor.
    given.results.push_back({k % 2 ? ResultSpec{DType::BF16, {n}}
                                   : ResultSpec{DType::F32, {n}, 0}});
  }
  expectSameAsSingle("nn.sgd", given, -1, 2, "");
}

TEST_F(CudaMultiTensor, CastsAsTheSingleKernel) {
  for (DType to : {DType::BF16, DType::F16}) {
    Instructions given;
    unsigned seed = 1;
    for (int64_t n : kSizes) {
      given.attrs.emplace_back();
      // Large values: f16 overflows to infinity, as the single kernel's.
      std::vector<HostTensor> operands;
      operands.push_back(
          randomTensor(DType::F32, {n}, seed++, -70000.0, 70000.0));
      given.operands.push_back(std::move(operands));
      given.results.push_back({{to, {n}}});
    }
    expectSameAsSingle("nn.cast", given, -1, 1,
                       std::string("to ") + dtypeName(to));
  }
  // Tensors that do not start on 16 bytes take the scalar path.
  HostTensor wide = randomTensor(DType::F32, {1001}, 9);
  DeviceTensor source(wide), single(wide), multi(wide), other(wide);
  TensorRef from = source.ref;
  from.data = static_cast<float *>(from.data) + 1;
  from.shape = {1000};
  TensorRef a = single.ref, b = multi.ref;
  a.dtype = b.dtype = DType::BF16;
  a.shape = b.shape = {1000};
  a.data = static_cast<uint16_t *>(a.data) + 1;
  b.data = static_cast<uint16_t *>(b.data) + 1;
  TensorRef otherFrom = other.ref, otherTo = other.ref;
  otherFrom.shape = {500};
  otherTo.data = static_cast<float *>(otherTo.data) + 500;
  otherTo.dtype = DType::F16;
  otherTo.shape = {500};
  CudaContext ctx;
  findCudaKernel("nn.cast")({}, {from}, {a}, ctx);
  std::vector<TensorRef> operands = {from}, results = {b};
  std::vector<TensorRef> moreOperands = {otherFrom}, moreResults = {otherTo};
  AttrMap none;
  MultiTensorLaunch launch("nn.cast",
                           {KernelCall{&none, &operands, &results},
                            KernelCall{&none, &moreOperands, &moreResults}});
  DeviceTable table(launch);
  launch.enqueue(ctx, table.data);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  HostTensor x(DType::BF16, {1000}), y(DType::BF16, {1000});
  checkCudaCall(cudaMemcpy(x.ref.data, a.data, 2000, cudaMemcpyDeviceToHost),
                "copy");
  checkCudaCall(cudaMemcpy(y.ref.data, b.data, 2000, cudaMemcpyDeviceToHost),
                "copy");
  expectAgree(y, x, exactBits(), "unaligned");
}

TEST_F(CudaMultiTensor, ABadStepWritesNothingAndSaysSo) {
  HostTensor param = randomTensor(DType::F32, {5000}, 1);
  HostTensor grad = randomTensor(DType::F32, {5000}, 2);
  HostTensor state = randomTensor(DType::F32, {5000}, 3, 0.0, 1.0);
  HostTensor step = makeTensor(DType::I64, {}, {0});
  Copies one({&param, &grad, &state, &state}),
      two({&param, &grad, &state, &state});
  DeviceTensor stepCopy(step);
  std::vector<TensorRef> oneOperands = one.refs, twoOperands = two.refs;
  oneOperands.push_back(stepCopy.ref);
  twoOperands.push_back(stepCopy.ref);
  std::vector<TensorRef> oneResults = {one.refs[0], one.refs[2], one.refs[3]};
  std::vector<TensorRef> twoResults = {two.refs[0], two.refs[2], two.refs[3]};
  AttrMap lr = makeAttrs({{"lr", 0.1}});
  MultiTensorLaunch launch("nn.adam",
                           {KernelCall{&lr, &oneOperands, &oneResults},
                            KernelCall{&lr, &twoOperands, &twoResults}});
  DeviceTable table(launch);
  for (bool eager : {true, false}) {
    CudaContext ctx;
    ctx.setEagerChecks(eager);
    try {
      launch.enqueue(ctx, table.data);
      ctx.checkDeviceErrors();
      ADD_FAILURE() << "no error";
    } catch (const RuntimeError &error) {
      EXPECT_STREQ(error.what(), "nn.adam: step 0 is not positive");
    }
  }
  for (Copies *copies : {&one, &two}) {
    expectAgree(copies->tensors[0]->toHost(), param, exactBits(), "param");
    expectAgree(copies->tensors[2]->toHost(), state, exactBits(), "exp_avg");
    expectAgree(copies->tensors[3]->toHost(), state, exactBits(), "exp_avg_sq");
  }
}

TEST_F(CudaMultiTensor, ALaunchInACudaGraph) {
  HostTensor master = randomTensor(DType::F32, {70000}, 1);
  HostTensor other = randomTensor(DType::F32, {333}, 2);
  HostTensor narrow(DType::BF16, {70000}), small(DType::BF16, {333});
  Copies copies({&master, &other, &narrow, &small});
  std::vector<TensorRef> a = {copies.refs[0]}, b = {copies.refs[1]},
                         ra = {copies.refs[2]}, rb = {copies.refs[3]};
  AttrMap none;
  MultiTensorLaunch launch(
      "nn.cast", {KernelCall{&none, &a, &ra}, KernelCall{&none, &b, &rb}});
  DeviceTable table(launch);
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
            cudaSuccess);
  CudaContext ctx(stream);
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
            cudaSuccess);
  launch.enqueue(ctx, table.data);
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  HostTensor expected(DType::BF16, {70000}), expectedSmall(DType::BF16, {333});
  findCpuKernel("nn.cast")({}, {master.ref}, {expected.ref});
  findCpuKernel("nn.cast")({}, {other.ref}, {expectedSmall.ref});
  expectAgree(copies.tensors[2]->toHost(), expected, exactBits(), "big");
  expectAgree(copies.tensors[3]->toHost(), expectedSmall, exactBits(), "small");
  (void)cudaGraphExecDestroy(exec);
  (void)cudaGraphDestroy(graph);
  (void)cudaStreamDestroy(stream);
}

} // namespace
} // namespace zerosbp::runtime::gputest
