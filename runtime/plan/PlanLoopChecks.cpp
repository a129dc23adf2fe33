//===- PlanLoopChecks.cpp - a micro-batch loop against its file -----------===//
//
// The reader has read the file's instructions as those of any plan; here
// the loop's chunks meet them (docs/plan-format.md#micro-batch-loop): each
// chunk's instructions run on its stage, a collective or transfer starts
// and ends in one chunk or outside the loop, the micro-batch slices fit
// every micro-batch, and each stage's order computes a value before a
// later chunk of the same micro-batch reads it. It also says which buffers
// and values each micro-batch has its own copy of.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Error.h"
#include "runtime/plan/PlanLoop.h"
#include "runtime/plan/PlanText.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

namespace zerosbp::runtime {

namespace {

/// The most instructions, values or buffers an unrolled plan may have:
/// beyond it, a corrupted loop would exhaust memory before any check.
constexpr int64_t kMaxUnrolled = int64_t(1) << 24;

/// nn.dropout numbers a micro-batch's mask in [0, 2^16).
constexpr int64_t kMaxMaskNumber = 0xffff;

/// Elements between consecutive indices of each dim, row-major.
std::vector<int64_t> rowStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    strides[d - 1] = strides[d] * shape[d];
  return strides;
}

/// An integer-array attribute, or null.
const std::vector<int64_t> *intsAttr(const Instruction &instruction,
                                     const char *name) {
  auto found = instruction.attrs.all().find(name);
  if (found == instruction.attrs.all().end())
    return nullptr;
  return std::get_if<std::vector<int64_t>>(&found->second);
}

/// An integer attribute, or nothing (also for one of another type).
std::optional<int64_t> intAttr(const Instruction &instruction,
                               const char *name) {
  auto found = instruction.attrs.all().find(name);
  if (found == instruction.attrs.all().end())
    return std::nullopt;
  if (const int64_t *value = std::get_if<int64_t>(&found->second))
    return *value;
  return std::nullopt;
}

/// The window of an nn.slice: offsets, sizes and strides, one per dim of
/// the operand, or false where the attributes do not give them.
struct Window {
  std::vector<int64_t> offsets, sizes, strides;
};

bool readWindow(const Plan &plan, const Instruction &instruction,
                Window &window) {
  if (instruction.operands.size() != 1 || instruction.results.size() != 1)
    return false;
  size_t rank = plan.values[instruction.operands[0]].shape.size();
  const std::vector<int64_t> *offsets = intsAttr(instruction, "offsets");
  const std::vector<int64_t> *sizes = intsAttr(instruction, "sizes");
  const std::vector<int64_t> *strides = intsAttr(instruction, "strides");
  // An empty array reads as doubles: a 0-D operand's window.
  bool empty = rank == 0 && instruction.attrs.has("offsets") &&
               instruction.attrs.has("sizes");
  if (!empty &&
      (!offsets || !sizes || offsets->size() != rank || sizes->size() != rank))
    return false;
  if (instruction.attrs.has("strides") && (!strides || strides->size() != rank))
    return false;
  window.offsets = offsets ? *offsets : std::vector<int64_t>{};
  window.sizes = sizes ? *sizes : std::vector<int64_t>{};
  window.strides = strides ? *strides : std::vector<int64_t>(rank, 1);
  return true;
}

/// Whether the slice's result is its operand's rows in place: in the
/// operand's buffer where the window begins, the window contiguous. The
/// unrolled plan computes such a view by no instruction.
bool isView(const Plan &plan, const Instruction &instruction) {
  Window window;
  if (instruction.op != "nn.slice" || !readWindow(plan, instruction, window))
    return false;
  const PlanValue &operand = plan.values[instruction.operands[0]];
  const PlanValue &result = plan.values[instruction.results[0]];
  if (operand.buffer != result.buffer || operand.dtype != result.dtype)
    return false;
  const std::vector<int64_t> &shape = operand.shape;
  std::vector<int64_t> strides = rowStrides(shape);
  int64_t start = 0;
  bool outer = true; // Dims before the first of more than one index.
  for (size_t d = 0; d < shape.size(); ++d) {
    if (window.strides[d] != 1 || window.offsets[d] < 0 ||
        window.sizes[d] < 0 || window.sizes[d] > shape[d] ||
        window.offsets[d] > shape[d] - window.sizes[d])
      return false;
    if (!outer && (window.offsets[d] != 0 || window.sizes[d] != shape[d]))
      return false;
    outer = outer && window.sizes[d] == 1;
    start += window.offsets[d] * strides[d];
  }
  return result.shape == window.sizes &&
         result.offset ==
             operand.offset +
                 start * static_cast<int64_t>(dtypeBytes(operand.dtype));
}

class LoopChecker {
public:
  LoopChecker(const Plan &plan, const std::vector<LoopSlots> &slots)
      : plan(plan), loop(*plan.pipeline->loop), slots(slots),
        microBatches(plan.pipeline->microBatches) {}

  LoopTemplate check() {
    placeInstructions();
    checkChunkStages();
    checkStartsAndWaits();
    checkMicroBatchDims();
    classifyBuffers();
    classifyValues();
    checkSlots();
    checkBeforeTheLoop();
    checkOrderReadsComputedValues();
    checkSize();
    return std::move(result);
  }

private:
  [[noreturn]] void fail(const std::string &path, const std::string &what) {
    throw RuntimeError(plan.source + ": " + path + ": " + what);
  }
  static std::string instructionPath(size_t index) {
    return "instructions[" + std::to_string(index) + "]";
  }
  std::string where(int segment) const {
    if (segment == kPrologue)
      return "before the loop";
    if (segment == kEpilogue)
      return "after the loop";
    return "in chunk " + std::to_string(segment);
  }
  bool inChunk(size_t index) const { return result.segment[index] >= 0; }

  // Instructions before the first chunk run once before the loop, those
  // after the last once after it.
  void placeInstructions() {
    size_t count = plan.instructions.size();
    const PlanLoopChunk &last = loop.chunks.back();
    if (static_cast<size_t>(last.end) > count)
      fail("pipeline.loop.chunks[" + std::to_string(loop.chunks.size() - 1) +
               "].instructions",
           "ends at instruction " + std::to_string(last.end) +
               ", past the plan's " + std::to_string(count) + " instructions");
    result.segment.assign(count, kPrologue);
    for (size_t i = loop.chunks.front().first; i < count; ++i)
      result.segment[i] = kEpilogue;
    for (size_t c = 0; c < loop.chunks.size(); ++c)
      for (int i = loop.chunks[c].first; i < loop.chunks[c].end; ++i)
        result.segment[i] = static_cast<int>(c);
  }

  // A chunk is one stage's work for one micro-batch: a send_recv in it is
  // one half, and nothing in it runs on another stage.
  void checkChunkStages() {
    for (size_t c = 0; c < loop.chunks.size(); ++c) {
      std::vector<int> stage = {loop.chunks[c].stage};
      for (int i = loop.chunks[c].first; i < loop.chunks[c].end; ++i)
        if (plan.instructions[i].stages != stage)
          fail(instructionPath(i),
               "runs on " + stagesText(plan.instructions[i].stages) +
                   ", but it is in pipeline.loop.chunks[" + std::to_string(c) +
                   "], whose instructions run on stage " +
                   std::to_string(stage[0]) + " alone");
    }
  }

  // Each invocation of a chunk starts and waits for its own collectives
  // and transfers; one started before the loop may end after it.
  void checkStartsAndWaits() {
    std::map<int, size_t> buckets, transfers;
    auto outside = [](int segment) { return segment < 0; };
    for (size_t i = 0; i < plan.instructions.size(); ++i) {
      const Instruction &instruction = plan.instructions[i];
      const char *what = nullptr;
      size_t start = 0;
      int id = 0;
      switch (instruction.kind) {
      case InstructionKind::CollectiveStart:
        buckets[instruction.bucket] = i;
        continue;
      case InstructionKind::TransferStart:
        transfers[instruction.transfer] = i;
        continue;
      case InstructionKind::CollectiveWait:
        what = "bucket ";
        id = instruction.bucket;
        start = buckets.at(id);
        break;
      case InstructionKind::TransferWait:
        what = "transfer ";
        id = instruction.transfer;
        start = transfers.at(id);
        break;
      default:
        continue;
      }
      int here = result.segment[i], there = result.segment[start];
      if (here != there && !(outside(here) && outside(there)))
        fail(instructionPath(i),
             instruction.op + " of " + what + std::to_string(id) + " is " +
                 where(here) + " but its start " + instructionPath(start) +
                 " " + where(there) +
                 "; a start and its wait are in one chunk, or both outside "
                 "the loop");
    }
  }

  // `micro_batch_dim` d: micro-batch m's copy of the slice starts m
  // further along dim d, which must hold every micro-batch's window. A
  // dropout's copy numbers its mask m further, within the kernel's range.
  void checkMicroBatchDims() {
    result.view.assign(plan.instructions.size(), false);
    for (size_t i = 0; i < plan.instructions.size(); ++i) {
      const Instruction &instruction = plan.instructions[i];
      if (inChunk(i) && instruction.op == "nn.slice")
        result.view[i] = isView(plan, instruction);
      if (inChunk(i) && instruction.op == "nn.dropout" &&
          instruction.attrs.has("micro_batch")) {
        std::optional<int64_t> first = intAttr(instruction, "micro_batch");
        if (!first || *first < 0 ||
            *first > kMaxMaskNumber - (microBatches - 1))
          fail(instructionPath(i) + ".attrs.micro_batch",
               "expected an integer in [0, " +
                   std::to_string(kMaxMaskNumber - (microBatches - 1)) +
                   "], so that micro-batch " +
                   std::to_string(microBatches - 1) +
                   "'s mask is numbered within nn.dropout's [0, " +
                   std::to_string(kMaxMaskNumber) + "]");
      }
      if (!instruction.attrs.has("micro_batch_dim"))
        continue;
      std::string path = instructionPath(i) + ".attrs.micro_batch_dim";
      if (!inChunk(i) || instruction.op != "nn.slice")
        fail(path, "only an nn.slice in a chunk of pipeline.loop has one");
      Window window;
      if (!readWindow(plan, instruction, window))
        fail(instructionPath(i) + ".attrs",
             "nn.slice needs offsets and sizes (and strides, if any) with "
             "one entry per dim of its operand");
      const std::vector<int64_t> &shape =
          plan.values[instruction.operands[0]].shape;
      std::optional<int64_t> dim = intAttr(instruction, "micro_batch_dim");
      if (!dim || *dim < 0 || *dim >= static_cast<int64_t>(shape.size()))
        fail(path, "expected a dim of the operand's shape " + shapeText(shape));
      int64_t offset = window.offsets[*dim], size = window.sizes[*dim];
      int64_t step = window.strides[*dim];
      // The last index the last micro-batch reads, in 128 bits.
      __int128 lastIndex =
          static_cast<__int128>(offset) + (microBatches - 1) +
          static_cast<__int128>(std::max<int64_t>(size - 1, 0)) * step;
      if (size > 0 && (step < 1 || offset < 0 || lastIndex >= shape[*dim]))
        fail(path, "micro-batch " + std::to_string(microBatches - 1) +
                       " slices dim " + std::to_string(*dim) + " of " +
                       shapeText(shape) + " from index " +
                       std::to_string(offset) + " + " +
                       std::to_string(microBatches - 1) + ", past its end");
    }
  }

  // A buffer that the loop writes and nothing before it does (nor the
  // runtime: a variable, an input, a step) holds a value of each
  // micro-batch: each has its own copy. The others hold one value for the
  // whole step, a running total maybe, and keep their one copy.
  void classifyBuffers() {
    size_t count = plan.buffers.size();
    std::vector<bool> inLoop(count, false), outside(count, false);
    held.assign(count, false);
    for (const PlanVariable &variable : plan.variables)
      held[plan.values[variable.value].buffer] = true;
    for (const PlanInput &input : plan.inputs)
      held[plan.values[input.value].buffer] = true;
    for (int step : plan.steps)
      held[plan.values[step].buffer] = true;
    for (size_t i = 0; i < plan.instructions.size(); ++i) {
      if (result.segment[i] == kEpilogue)
        continue;
      std::vector<bool> &writes = inChunk(i) ? inLoop : outside;
      const Instruction &instruction = plan.instructions[i];
      for (int id : instruction.results)
        writes[plan.values[id].buffer] = true;
      if (instruction.staging)
        writes[*instruction.staging] = true;
    }
    result.perMicroBatch.assign(count, false);
    for (size_t b = 0; b < count; ++b)
      result.perMicroBatch[b] = inLoop[b] && !outside[b] && !held[b];
  }

  // A value is the loop's, one per micro-batch, when a chunk computes it,
  // when it lies in a buffer of the loop, or when it lies in the rows a
  // micro-batch slice takes (a view of them, such as a reshape).
  void classifyValues() {
    size_t count = plan.values.size();
    std::vector<bool> defined(count, false), runtime(count, false);
    result.looped.assign(count, false);
    result.stride.assign(count, 0);
    result.writers.assign(count, {});
    for (const PlanVariable &variable : plan.variables)
      runtime[variable.value] = true;
    for (const PlanInput &input : plan.inputs)
      runtime[input.value] = true;
    for (int step : plan.steps)
      runtime[step] = true;
    struct Slice {
      int value;
      int64_t stride;
    };
    std::vector<Slice> slices;
    for (size_t i = 0; i < plan.instructions.size(); ++i) {
      const Instruction &instruction = plan.instructions[i];
      for (int id : instruction.results)
        defined[id] = true;
      if (!inChunk(i))
        continue;
      int chunk = result.segment[i];
      for (int id : instruction.results) {
        result.looped[id] = true;
        int stage = plan.buffers[plan.values[id].buffer].stage;
        std::vector<int> &writers = result.writers[id];
        if ((stage < 0 || plan.runsOn(instruction, stage)) &&
            std::find(writers.begin(), writers.end(), chunk) == writers.end())
          writers.push_back(chunk);
      }
      if (!instruction.attrs.has("micro_batch_dim"))
        continue;
      const PlanValue &operand = plan.values[instruction.operands[0]];
      int result0 = instruction.results[0];
      if (plan.values[result0].buffer != operand.buffer)
        continue;
      int64_t dim = *instruction.attrs.findInt("micro_batch_dim");
      int64_t stride = rowStrides(operand.shape)[dim] *
                       static_cast<int64_t>(dtypeBytes(operand.dtype));
      result.stride[result0] = stride;
      slices.push_back({result0, stride});
    }
    for (size_t v = 0; v < count; ++v) {
      if (runtime[v])
        continue;
      const PlanValue &value = plan.values[v];
      if (result.perMicroBatch[value.buffer])
        result.looped[v] = true;
      if (defined[v])
        continue;
      for (const Slice &slice : slices) {
        const PlanValue &rows = plan.values[slice.value];
        if (value.buffer == rows.buffer && value.offset >= rows.offset &&
            value.offset + value.bytes() <= rows.offset + rows.bytes()) {
          result.looped[v] = true;
          result.stride[v] = slice.stride;
          break;
        }
      }
    }
  }

  // Slots are copies of a buffer of the loop.
  void checkSlots() {
    for (size_t b = 0; b < slots.size(); ++b)
      if (slots[b].count > 1 && !result.perMicroBatch[b])
        fail("buffers[" + std::to_string(b) + "].micro_slots",
             std::to_string(slots[b].count) +
                 " slots, but the buffer has one copy (nothing in the loop "
                 "writes it, or a variable, input, step or instruction "
                 "before the loop does)");
  }

  // Before the loop, no micro-batch has run: nothing there names their
  // values.
  void checkBeforeTheLoop() {
    for (size_t i = 0; i < plan.instructions.size(); ++i) {
      if (result.segment[i] != kPrologue)
        continue;
      const Instruction &instruction = plan.instructions[i];
      for (const std::vector<int> *ids :
           {&instruction.operands, &instruction.results})
        for (int id : *ids)
          if (result.looped[id])
            fail(instructionPath(i),
                 "names value " + std::to_string(id) +
                     ", which each micro-batch of pipeline.loop has its own "
                     "copy of; an instruction before the loop names none");
    }
  }

  // A chunk that reads a value another chunk of its stage computes runs
  // after that chunk, for each micro-batch.
  void checkOrderReadsComputedValues() {
    size_t chunks = loop.chunks.size();
    // Per chunk: the chunks of its stage it reads from, and a value read.
    std::vector<std::map<int, int>> reads(chunks);
    for (size_t i = 0; i < plan.instructions.size(); ++i) {
      int chunk = result.segment[i];
      if (chunk < 0)
        continue;
      for (int id : plan.instructions[i].operands)
        for (int writer : result.writers[id])
          if (writer != chunk &&
              loop.chunks[writer].stage == loop.chunks[chunk].stage)
            reads[chunk].emplace(writer, id);
    }
    for (size_t stage = 0; stage < loop.order.size(); ++stage) {
      const std::vector<std::pair<int, int>> &runs = loop.order[stage];
      std::map<std::pair<int, int>, size_t> place;
      for (size_t k = 0; k < runs.size(); ++k)
        place[runs[k]] = k;
      for (size_t k = 0; k < runs.size(); ++k) {
        auto [chunk, micro] = runs[k];
        for (auto [writer, id] : reads[chunk]) {
          size_t before = place.at({writer, micro});
          if (before > k)
            fail("pipeline.loop.order[" + std::to_string(stage) + "][" +
                     std::to_string(k) + "]",
                 "chunk " + std::to_string(chunk) + " of micro-batch " +
                     std::to_string(micro) + " reads value " +
                     std::to_string(id) + ", which chunk " +
                     std::to_string(writer) +
                     " computes for that micro-batch later (order[" +
                     std::to_string(stage) + "][" + std::to_string(before) +
                     "])");
        }
      }
    }
  }

  void checkSize() {
    int64_t copies = microBatches - 1;
    int64_t instructions = plan.instructions.size();
    for (const PlanLoopChunk &chunk : loop.chunks)
      instructions += (chunk.end - chunk.first) * copies;
    int64_t buffers = static_cast<int64_t>(plan.buffers.size()) +
                      std::count(result.perMicroBatch.begin(),
                                 result.perMicroBatch.end(), true) *
                          copies;
    int64_t values =
        static_cast<int64_t>(plan.values.size()) +
        std::count(result.looped.begin(), result.looped.end(), true) * copies;
    for (auto [count, what] :
         {std::pair{instructions, "instructions"}, std::pair{values, "values"},
          std::pair{buffers, "buffers"}})
      if (count > kMaxUnrolled)
        fail("pipeline.loop",
             "the unrolled plan would hold " + std::to_string(count) + " " +
                 what + ", more than " + std::to_string(kMaxUnrolled));
  }

  const Plan &plan;
  const PlanLoop &loop;
  const std::vector<LoopSlots> &slots;
  int microBatches;
  /// Per buffer: a variable, input or step lies in it.
  std::vector<bool> held;
  LoopTemplate result;
};

} // namespace

LoopTemplate checkLoop(const Plan &plan, const std::vector<LoopSlots> &slots) {
  return LoopChecker(plan, slots).check();
}

} // namespace zerosbp::runtime
