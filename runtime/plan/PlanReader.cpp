//===- PlanReader.cpp - reads and checks a .zplan file --------------------===//
//
// JSON through nlohmann/json. Every field is read through a Reader that knows
// its path in the document (`instructions[12].operands[1]`), so a bad plan
// gets one line that names the file, the field and what is wrong.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Error.h"
#include "runtime/core/Limits.h"
#include "runtime/io/DurableFile.h"
#include "runtime/io/InputFile.h"
#include "runtime/plan/Plan.h"
#include "runtime/plan/PlanLoop.h"
#include "runtime/plan/PlanText.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <queue>
#include <set>
#include <tuple>

namespace zerosbp::runtime {

using Json = nlohmann::json;

namespace {

constexpr int kPlanVersion = 2;

/// More micro-batches than this is a corrupted count, not a schedule.
constexpr int64_t kMaxMicroBatches = int64_t(1) << 20;

/// A JSON node and its path, for messages.
class Reader {
public:
  Reader(const Json &node, std::string path, const std::string &source)
      : node(node), path(std::move(path)), source(source) {}

  [[noreturn]] void fail(const std::string &what) const {
    throw RuntimeError(source + ": " + (path.empty() ? "" : path + ": ") +
                       what);
  }

  bool has(const char *key) const {
    return node.is_object() && node.contains(key);
  }
  Reader at(const char *key) const {
    if (!node.is_object())
      fail("expected an object");
    auto it = node.find(key);
    if (it == node.end())
      fail(std::string("missing key '") + key + "'");
    return Reader(*it, join(key), source);
  }
  std::vector<Reader> items() const {
    if (!node.is_array())
      fail("expected an array");
    std::vector<Reader> result;
    result.reserve(node.size());
    for (size_t i = 0; i < node.size(); ++i)
      result.emplace_back(node[i], path + "[" + std::to_string(i) + "]",
                          source);
    return result;
  }
  int64_t integer(int64_t min = std::numeric_limits<int64_t>::min(),
                  int64_t max = std::numeric_limits<int64_t>::max()) const {
    if (!node.is_number_integer())
      fail("expected an integer");
    int64_t value = node.get<int64_t>();
    if (value < min || value > max)
      fail("value " + std::to_string(value) + " out of range [" +
           std::to_string(min) + ", " + std::to_string(max) + "]");
    return value;
  }
  double number() const {
    if (!node.is_number())
      fail("expected a number");
    return node.get<double>();
  }
  bool boolean() const {
    if (!node.is_boolean())
      fail("expected true or false");
    return node.get<bool>();
  }
  std::string string() const {
    if (!node.is_string())
      fail("expected a string");
    return node.get<std::string>();
  }
  std::vector<int64_t> integers(int64_t min = 0) const {
    std::vector<int64_t> result;
    for (const Reader &item : items())
      result.push_back(item.integer(min));
    return result;
  }
  const Json &json() const { return node; }
  const std::string &where() const { return path; }

private:
  std::string join(const char *key) const {
    return path.empty() ? key : path + "." + key;
  }
  const Json &node;
  std::string path;
  const std::string &source;
};

DType readDType(const Reader &reader) {
  std::string name = reader.string();
  if (std::optional<DType> type = parseDType(name))
    return *type;
  reader.fail("unknown dtype '" + name + "'");
}

std::vector<int64_t> readShape(const Reader &reader) {
  std::vector<int64_t> shape = reader.integers(0);
  return shape;
}

AttrValue readAttr(const Reader &reader) {
  const Json &node = reader.json();
  if (node.is_boolean())
    return node.get<bool>();
  if (node.is_number_integer())
    return node.get<int64_t>();
  if (node.is_number())
    return node.get<double>();
  if (node.is_string())
    return node.get<std::string>();
  if (node.is_array()) {
    bool allIntegers = true;
    for (const Json &item : node) {
      if (!item.is_number())
        reader.fail("an attribute array holds numbers only");
      allIntegers &= item.is_number_integer();
    }
    if (allIntegers && !node.empty())
      return node.get<std::vector<int64_t>>();
    return node.get<std::vector<double>>();
  }
  reader.fail("unsupported attribute value");
}

std::string hex8(uint32_t value) {
  char text[9];
  std::snprintf(text, sizeof(text), "%08x", value);
  return text;
}

class PlanBuilder {
public:
  PlanBuilder(const Json &root, const std::string &text,
              const std::string &source, const PlanReadOptions &options)
      : root(root, "", source), text(text), options(options) {
    plan.source = source;
  }

  Plan build() {
    checkHeader();
    if (options.verifyChecksum)
      checkChecksum();
    readTop();
    readBuffers();
    // A loop's buffers are live where the unrolled program uses them.
    if (!looped())
      checkBufferOverlap();
    readValues();
    readVariables();
    readInputs();
    plan.steps = valueIds(root.at("steps"));
    plan.outputs = valueIds(root.at("outputs"));
    readInstructions();
    if (looped())
      unrollLoop();
    return std::move(plan);
  }

private:
  bool looped() const { return plan.pipeline && plan.pipeline->loop; }

  // The file holds one micro-batch's instructions per chunk: the plan gets
  // the unrolled program (docs/plan-format.md#micro-batch-loop), and the
  // checks that look at the whole program run on that.
  void unrollLoop() {
    plan.pipeline->loop->templateInstructions =
        static_cast<int>(plan.instructions.size());
    LoopTemplate loop = checkLoop(plan, slots);
    expansion = expandLoop(plan, loop, slots);
    recomputeLiveness(plan);
    checkBufferOverlap();
    std::map<std::pair<int, int>, std::deque<size_t>> unreceived;
    for (size_t i = 0; i < plan.instructions.size(); ++i) {
      const Instruction &instruction = plan.instructions[i];
      if (instruction.kind == InstructionKind::CollectiveStart &&
          instruction.collective == CollectiveKind::SendRecv)
        pairSendRecv(named(instructionPath(i)), i, instruction, unreceived);
    }
    checkAllReceived(unreceived);
  }

  // Names in messages: the file's ids, and for an entry of the unrolled
  // loop the micro-batch whose copy it is.
  std::string instructionPath(size_t id) const {
    return "instructions[" +
           std::to_string(origin(id, &LoopExpansion::instructions)) + "]" +
           suffix(id, &LoopExpansion::instructions);
  }
  std::string bufferName(int id) const {
    return "buffer " + std::to_string(origin(id, &LoopExpansion::buffers)) +
           suffix(id, &LoopExpansion::buffers);
  }
  std::string valueName(int id) const {
    return "value " + std::to_string(origin(id, &LoopExpansion::values)) +
           suffix(id, &LoopExpansion::values);
  }
  int origin(size_t id, std::vector<LoopOrigin> LoopExpansion::*entries) const {
    return expansion ? ((*expansion).*entries)[id].id : static_cast<int>(id);
  }
  std::string suffix(size_t id,
                     std::vector<LoopOrigin> LoopExpansion::*entries) const {
    return expansion ? microBatchText(((*expansion).*entries)[id]) : "";
  }
  /// A field of the unrolled plan, which has no JSON node of its own.
  Reader named(const std::string &path) const {
    static const Json none;
    return Reader(none, path, plan.source);
  }
  void checkHeader() {
    if (!root.json().is_object())
      root.fail("not a ZeroSBP plan (the top level is not a JSON object)");
    if (!root.has("format"))
      root.fail("not a ZeroSBP plan (no 'format' key)");
    std::string format = root.at("format").json().is_string()
                             ? root.at("format").string()
                             : std::string("?");
    if (format != "zerosbp-plan")
      root.fail("not a ZeroSBP plan (format '" + format +
                "', expected 'zerosbp-plan')");
    int64_t version = root.at("version").integer();
    if (version != kPlanVersion)
      root.fail("plan version " + std::to_string(version) +
                " is not supported; this runtime reads version " +
                std::to_string(kPlanVersion) +
                (version == 1 ? " (compile the model again)" : ""));
  }

  // The checksum covers the text as written, so any edit, even one that
  // leaves a consistent plan, is refused (docs/plan-format.md#checksum).
  void checkChecksum() {
    const std::string advice =
        "; the plan was edited or corrupted (recompile it)";
    if (!root.has("checksum"))
      root.fail("checksum: missing; the plan was edited or corrupted, or "
                "written by an older zero-compile (recompile it)");
    Reader field = root.at("checksum");
    std::string expected = field.json().is_string() ? field.string() : "";
    if (expected.size() != 8 ||
        expected.find_first_not_of("0123456789abcdef") != std::string::npos)
      field.fail("expected 8 lowercase hex digits" + advice);
    size_t quote = text.rfind('"' + expected + '"');
    std::string actual = quote == std::string::npos
                             ? std::string("no such digits")
                             : hex8(planChecksum(text, quote + 1));
    if (actual != expected)
      field.fail("the content gives " + actual + ", not " + expected + advice);
  }

  void readTop() {
    plan.function = root.at("function").string();
    if (root.has("mode")) {
      std::string mode = root.at("mode").string();
      if (mode != "train" && mode != "eval")
        root.at("mode").fail("unknown mode '" + mode +
                             "' (expected train or eval)");
      plan.inference = mode == "eval";
    }
    if (root.has("stage"))
      plan.stage = static_cast<int>(root.at("stage").integer(0, 3));
    plan.world = static_cast<int>(root.at("world").integer(1, kMaxRanks));
    Reader placement = root.at("placement");
    plan.device = placement.at("device").string();
    if (plan.device != "cpu" && plan.device != "cuda")
      placement.at("device").fail("unknown device '" + plan.device + "'");
    for (int64_t rank : placement.at("ranks").integers(0))
      plan.ranks.push_back(static_cast<int>(rank));
    plan.hierarchy = placement.at("hierarchy").integers(1);
    int64_t product = 1;
    for (int64_t size : plan.hierarchy)
      product *= size;
    if (plan.hierarchy.empty() || product != plan.world ||
        static_cast<int64_t>(plan.ranks.size()) != plan.world)
      placement.fail("hierarchy and ranks do not match world " +
                     std::to_string(plan.world));
    if (root.has("pipeline"))
      readPipeline();
    if (root.has("config"))
      plan.configJson = root.at("config").json().dump();
    plan.arenaBytes = root.at("arena_bytes").integer(0);
    readArenas();
    Reader memory = root.at("memory");
    plan.memory.arena = memory.at("arena").integer(0);
    plan.memory.lowerBound = memory.at("lower_bound").integer(0);
    plan.memory.modelStates = memory.at("model_states").integer(0);
    Reader peak = memory.at("peak");
    for (int role = 0; role < kNumRoles; ++role) {
      const char *name = roleName(static_cast<Role>(role));
      if (peak.has(name))
        plan.memory.peak[role] = peak.at(name).integer(0);
    }
  }

  // Pipeline stages are hierarchy axis 0 (docs/plan-format.md#pipeline).
  void readPipeline() {
    Reader field = root.at("pipeline");
    if (!field.json().is_object())
      field.fail("expected an object");
    PlanPipeline pipeline;
    pipeline.stages =
        static_cast<int>(field.at("stages").integer(2, kMaxRanks));
    if (pipeline.stages != plan.hierarchy[0])
      field.at("stages").fail(
          std::to_string(pipeline.stages) + " stages, but the hierarchy " +
          shapeText(plan.hierarchy) +
          " does not begin with them (the pipeline axis comes first)");
    pipeline.microBatches = static_cast<int>(
        field.at("micro_batches").integer(1, kMaxMicroBatches));
    pipeline.schedule = field.at("schedule").string();
    if (pipeline.schedule != "1f1b" && pipeline.schedule != "gpipe")
      field.at("schedule")
          .fail("unknown schedule '" + pipeline.schedule +
                "' (expected 1f1b or gpipe)");
    if (field.has("model_chunks")) {
      pipeline.modelChunks = static_cast<int>(
          field.at("model_chunks").integer(1, kMaxMicroBatches));
      if (pipeline.modelChunks > 1 && pipeline.schedule != "1f1b")
        field.at("model_chunks")
            .fail(std::to_string(pipeline.modelChunks) +
                  " model chunks interleave the 1f1b schedule, not " +
                  pipeline.schedule);
    }
    pipeline.bubble = field.at("bubble").number();
    if (!(pipeline.bubble >= 0 && pipeline.bubble < 1))
      field.at("bubble").fail("expected a fraction in [0, 1), got " +
                              field.at("bubble").json().dump());
    if (field.has("loop"))
      pipeline.loop = readLoop(field.at("loop"), pipeline);
    plan.pipeline = pipeline;
  }

  // pipeline.loop (docs/plan-format.md#micro-batch-loop): adjacent chunks of
  // the file's instructions, in order, and each stage's (chunk,
  // micro-batch) pairs. What needs the instructions is checked after them.
  PlanLoop readLoop(const Reader &field, const PlanPipeline &pipeline) {
    if (!field.json().is_object())
      field.fail("expected an object");
    PlanLoop loop;
    Reader chunks = field.at("chunks");
    std::vector<Reader> items = chunks.items();
    if (items.empty())
      chunks.fail("expected at least one chunk");
    std::map<std::tuple<int, bool, int>, size_t> seen;
    for (const Reader &item : items) {
      PlanLoopChunk chunk;
      chunk.stage =
          static_cast<int>(item.at("stage").integer(0, pipeline.stages - 1));
      std::string phase = item.at("phase").string();
      if (phase != "forward" && phase != "backward")
        item.at("phase").fail("unknown phase '" + phase +
                              "' (expected forward or backward)");
      chunk.backward = phase == "backward";
      chunk.model = static_cast<int>(
          item.at("model").integer(0, pipeline.modelChunks - 1));
      Reader range = item.at("instructions");
      std::vector<int64_t> bounds = range.integers(0);
      if (bounds.size() != 2 || bounds[0] >= bounds[1] ||
          bounds[1] > std::numeric_limits<int>::max())
        range.fail("expected [first, end) with first < end");
      chunk.first = static_cast<int>(bounds[0]);
      chunk.end = static_cast<int>(bounds[1]);
      size_t index = loop.chunks.size();
      if (index > 0 && chunk.first != loop.chunks.back().end)
        range.fail("chunk " + std::to_string(index) +
                   " starts at instruction " + std::to_string(chunk.first) +
                   ", not where chunk " + std::to_string(index - 1) +
                   " ends (" + std::to_string(loop.chunks.back().end) +
                   "); chunks are adjacent, in order");
      auto [at, fresh] = seen.emplace(
          std::make_tuple(chunk.stage, chunk.backward, chunk.model), index);
      if (!fresh)
        item.fail("stage " + std::to_string(chunk.stage) + "'s " + phase +
                  " of model chunk " + std::to_string(chunk.model) +
                  " is chunk " + std::to_string(at->second) + " already");
      loop.chunks.push_back(chunk);
    }
    Reader order = field.at("order");
    std::vector<Reader> stages = order.items();
    if (static_cast<int>(stages.size()) != pipeline.stages)
      order.fail("expected one list per stage (" +
                 std::to_string(pipeline.stages) + "), got " +
                 std::to_string(stages.size()));
    int last = static_cast<int>(loop.chunks.size()) - 1;
    for (int stage = 0; stage < pipeline.stages; ++stage) {
      std::set<std::pair<int, int>> listed;
      std::vector<std::pair<int, int>> runs;
      for (const Reader &item : stages[stage].items()) {
        std::vector<Reader> pair = item.items();
        if (pair.size() != 2)
          item.fail("expected [chunk, micro-batch]");
        int chunk = static_cast<int>(pair[0].integer(0, last));
        int micro =
            static_cast<int>(pair[1].integer(0, pipeline.microBatches - 1));
        if (loop.chunks[chunk].stage != stage)
          pair[0].fail("chunk " + std::to_string(chunk) + " runs on stage " +
                       std::to_string(loop.chunks[chunk].stage) +
                       ", not stage " + std::to_string(stage));
        if (!listed.insert({chunk, micro}).second)
          item.fail("chunk " + std::to_string(chunk) + " of micro-batch " +
                    std::to_string(micro) + " is listed twice");
        runs.push_back({chunk, micro});
      }
      // Every pair listed is distinct and the stage's: the first one absent
      // is found within listed.size() + 1 probes.
      for (int chunk = 0; chunk <= last; ++chunk)
        for (int micro = 0;
             loop.chunks[chunk].stage == stage && micro < pipeline.microBatches;
             ++micro)
          if (!listed.count({chunk, micro}))
            stages[stage].fail("chunk " + std::to_string(chunk) +
                               " of micro-batch " + std::to_string(micro) +
                               " is missing (stage " + std::to_string(stage) +
                               " runs each of its chunks once per "
                               "micro-batch)");
      loop.order.push_back(std::move(runs));
    }
    return loop;
  }

  // A buffer's, variable's or input's `stage`: only with a pipeline.
  int readStage(const Reader &item) {
    Reader field = item.at("stage");
    if (!plan.pipeline)
      field.fail("a stage, but the plan has no 'pipeline' object");
    return static_cast<int>(field.integer(0, plan.pipeline->stages - 1));
  }

  // Device memory first, then host memory and NVMe, each at most once
  // (docs/plan-format.md#arenas).
  void readArenas() {
    Reader arenas = root.at("arenas");
    std::vector<Reader> items = arenas.items();
    if (items.empty())
      arenas.fail("expected the device arena first, found none");
    std::set<MemoryKind> seen;
    for (const Reader &item : items) {
      PlanArena arena;
      std::string memory = item.at("memory").string();
      std::optional<MemoryKind> kind = parseMemoryKind(memory);
      if (!kind)
        item.at("memory").fail("unknown memory '" + memory +
                               "' (expected device, host or nvme)");
      if (seen.empty() && *kind != MemoryKind::Device)
        item.at("memory").fail("the first arena is in " + memory +
                               " memory; the device arena comes first");
      if (!seen.insert(*kind).second)
        item.at("memory").fail("a second arena in " + memory + " memory");
      arena.memory = *kind;
      arena.bytes = item.at("bytes").integer(0, kMaxPlanBytes);
      if (item.has("pinned"))
        arena.pinned = item.at("pinned").boolean();
      if (*kind == MemoryKind::Nvme) {
        arena.path = item.at("path").string();
        if (arena.path.empty())
          item.at("path").fail("expected the directory of the NVMe files, "
                               "not an empty string");
      }
      plan.arenas.push_back(std::move(arena));
    }
    if (plan.arenaBytes != plan.arenas[0].bytes)
      root.at("arena_bytes")
          .fail(std::to_string(plan.arenaBytes) +
                " bytes, but the device arena (arenas[0]) has " +
                std::to_string(plan.arenas[0].bytes));
  }

  void readBuffers() {
    for (const Reader &item : root.at("buffers").items()) {
      PlanBuffer buffer;
      buffer.offset = item.at("offset").integer(0, kMaxPlanBytes);
      buffer.bytes = item.at("bytes").integer(0, kMaxPlanBytes);
      std::vector<int64_t> live = item.at("live").integers(0);
      if (live.size() != 2 || live[0] > live[1])
        item.at("live").fail("expected [first, last] with first <= last");
      buffer.liveFirst = live[0];
      buffer.liveLast = live[1];
      std::string role = item.at("role").string();
      std::optional<Role> parsed = parseRole(role);
      if (!parsed)
        item.at("role").fail("unknown role '" + role + "'");
      buffer.role = *parsed;
      buffer.arena = static_cast<int>(item.at("arena").integer(
          0, static_cast<int64_t>(plan.arenas.size()) - 1));
      if (item.has("stage"))
        buffer.stage = readStage(item);
      const PlanArena &arena = plan.arenas[buffer.arena];
      if (buffer.offset + buffer.bytes > arena.bytes)
        item.fail("buffer ends at byte " +
                  std::to_string(buffer.offset + buffer.bytes) + ", past the " +
                  memoryKindName(arena.memory) + " arena (" +
                  std::to_string(arena.bytes) + " bytes)");
      slots.push_back(readSlots(item, buffer));
      plan.buffers.push_back(buffer);
    }
  }

  // A buffer of the loop in several copies, one per micro-batch in flight
  // (docs/plan-format.md#micro-batch-loop), each inside the arena.
  LoopSlots readSlots(const Reader &item, const PlanBuffer &buffer) {
    LoopSlots slot;
    for (const char *key : {"micro_slots", "slot_bytes"})
      if (item.has(key) && !looped())
        item.at(key).fail("micro-batch slots, but the plan has no "
                          "'pipeline.loop'");
    if (item.has("micro_slots"))
      slot.count = item.at("micro_slots").integer(1, kMaxMicroBatches);
    if (!item.has("slot_bytes")) {
      if (slot.count > 1)
        item.at("micro_slots")
            .fail(std::to_string(slot.count) +
                  " slots need slot_bytes, the stride between them");
      return slot;
    }
    Reader field = item.at("slot_bytes");
    slot.bytes = field.integer(0, kMaxPlanBytes);
    if (slot.bytes % 64 != 0)
      field.fail(std::to_string(slot.bytes) + " is not a multiple of 64");
    if (slot.bytes < buffer.bytes)
      field.fail(std::to_string(slot.bytes) + " is less than the buffer's " +
                 std::to_string(buffer.bytes) + " bytes");
    // Below 2^73: no overflow in 128 bits.
    const PlanArena &arena = plan.arenas[buffer.arena];
    __int128 end = static_cast<__int128>(slot.count - 1) * slot.bytes +
                   buffer.offset + buffer.bytes;
    if (end > arena.bytes)
      item.fail("slot " + std::to_string(slot.count - 1) + " ends at byte " +
                decimal(end) + ", past the " + memoryKindName(arena.memory) +
                " arena (" + std::to_string(arena.bytes) + " bytes)");
    return slot;
  }

  static std::string decimal(__int128 value) {
    std::string digits;
    do {
      digits.insert(digits.begin(), static_cast<char>('0' + value % 10));
      value /= 10;
    } while (value > 0);
    return digits;
  }

  // Buffers that share arena bytes are never live at the same position
  // (docs/plan-format.md#buffers); buffers in different arenas share none.
  // Per arena, a sweep in order of first position keeps the live buffers by
  // offset; they do not overlap so far, so a new one can only meet its
  // neighbours there: O(n log n) for 10^5 buffers. Buffers of different
  // pipeline stages never meet on a rank, so each stage's ranks (its
  // buffers and those of every stage) are swept apart.
  void checkBufferOverlap() {
    for (size_t arena = 0; arena < plan.arenas.size(); ++arena)
      for (int stage = 0; stage < stageCount(); ++stage)
        checkBufferOverlap(static_cast<int>(arena), stage);
  }

  int stageCount() const { return plan.pipeline ? plan.pipeline->stages : 1; }

  void checkBufferOverlap(int arena, int stage) {
    const std::vector<PlanBuffer> &buffers = plan.buffers;
    std::vector<int> order;
    for (size_t id = 0; id < buffers.size(); ++id)
      if (buffers[id].bytes > 0 && buffers[id].arena == arena &&
          plan.bufferOnStage(static_cast<int>(id), stage))
        order.push_back(static_cast<int>(id));
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return buffers[a].liveFirst < buffers[b].liveFirst;
    });
    using Ending = std::pair<int64_t, int>; // (last position, buffer)
    std::priority_queue<Ending, std::vector<Ending>, std::greater<Ending>>
        ending;
    std::map<int64_t, int> liveByOffset;
    for (int id : order) {
      const PlanBuffer &buffer = buffers[id];
      while (!ending.empty() && ending.top().first < buffer.liveFirst) {
        liveByOffset.erase(buffers[ending.top().second].offset);
        ending.pop();
      }
      int64_t end = buffer.offset + buffer.bytes;
      auto next = liveByOffset.lower_bound(buffer.offset);
      if (next != liveByOffset.end() && next->first < end)
        overlapError(id, next->second);
      if (next != liveByOffset.begin()) {
        int before = std::prev(next)->second;
        if (buffers[before].offset + buffers[before].bytes > buffer.offset)
          overlapError(id, before);
      }
      liveByOffset[buffer.offset] = id;
      ending.push({buffer.liveLast, id});
    }
  }

  [[noreturn]] void overlapError(int id, int other) {
    const PlanBuffer &a = plan.buffers[id], &b = plan.buffers[other];
    auto range = [](int64_t begin, int64_t end) {
      return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
    };
    named("buffers[" + std::to_string(origin(id, &LoopExpansion::buffers)) +
          "]" + suffix(id, &LoopExpansion::buffers))
        .fail("shares arena bytes " +
              range(std::max(a.offset, b.offset),
                    std::min(a.offset + a.bytes, b.offset + b.bytes)) +
              " with " + bufferName(other) +
              " while both are live (positions " +
              std::to_string(std::max(a.liveFirst, b.liveFirst)) + " to " +
              std::to_string(std::min(a.liveLast, b.liveLast)) + ")");
  }

  void readValues() {
    for (const Reader &item : root.at("values").items()) {
      PlanValue value;
      value.buffer = bufferId(item.at("buffer"));
      value.offset = item.at("offset").integer(0);
      value.dtype = readDType(item.at("dtype"));
      value.shape = readShape(item.at("shape"));
      const PlanBuffer &buffer = plan.buffers[value.buffer];
      if (value.offset + value.bytes() > buffer.bytes)
        item.fail("value of " + std::to_string(value.bytes()) +
                  " bytes at offset " + std::to_string(value.offset) +
                  " does not fit its buffer of " +
                  std::to_string(buffer.bytes) + " bytes");
      plan.values.push_back(std::move(value));
    }
  }

  void readDistributed(const Reader &item, DistributedTensor &tensor) {
    tensor.name = item.at("name").string();
    tensor.value = valueId(item.at("value"));
    tensor.dtype = readDType(item.at("dtype"));
    tensor.localShape = readShape(item.at("local_shape"));
    tensor.globalShape = readShape(item.at("global_shape"));
    const PlanValue &value = plan.values[tensor.value];
    if (value.shape != tensor.localShape || value.dtype != tensor.dtype)
      item.fail("'" + tensor.name + "' does not match its value's type");
    if (item.has("stage"))
      tensor.stage = readStage(item);
    int bufferStage = plan.buffers[value.buffer].stage;
    if (tensor.stage != bufferStage)
      item.fail("'" + tensor.name + "' is held by " + stageName(tensor.stage) +
                " but its value " + std::to_string(tensor.value) +
                " is in buffer " + std::to_string(value.buffer) + " of " +
                stageName(bufferStage));
    tensor.hierarchy = plan.hierarchy;
    tensor.splitDims.assign(plan.hierarchy.size(), -1);
    if (item.has("sbp")) {
      std::vector<Reader> entries = item.at("sbp").items();
      if (entries.size() != plan.hierarchy.size())
        item.at("sbp").fail("expected one entry per hierarchy axis (" +
                            std::to_string(plan.hierarchy.size()) + ")");
      for (size_t axis = 0; axis < entries.size(); ++axis) {
        std::string text = entries[axis].string();
        tensor.sbp.push_back(text);
        // Every stage's ranks hold whole copies of their own tensors.
        if (axis == 0 && plan.pipeline && text != "B")
          entries[axis].fail("the pipeline axis's entry is always B, got '" +
                             text + "'");
        int dim = -1;
        if (text == "B" || text == "P(sum)" || text == "P(max)")
          continue;
        if (std::sscanf(text.c_str(), "S(%d)", &dim) != 1 || dim < 0 ||
            dim >= static_cast<int>(tensor.globalShape.size()) ||
            text != "S(" + std::to_string(dim) + ")")
          entries[axis].fail("expected B, S(d) with d a dim of the global "
                             "shape, P(sum) or P(max), got '" +
                             text + "'");
        tensor.splitDims[axis] = dim;
      }
    }
    // Every rank's block is computed from the SBP: SPMD plans split evenly,
    // so each has the local shape. Older plans list the blocks; they must
    // be these.
    std::vector<Reader> listedShards;
    bool listed = item.has("shards");
    if (listed) {
      listedShards = item.at("shards").items();
      if (static_cast<int>(listedShards.size()) != plan.world)
        item.at("shards").fail("expected one entry per rank (" +
                               std::to_string(plan.world) + ")");
    }
    // Every block has the local shape exactly when each split divides its
    // dim evenly: then only listed blocks need a look per rank (a plan's
    // start-up stays independent of the ranks).
    bool even = true;
    for (size_t d = 0; d < tensor.globalShape.size(); ++d) {
      int64_t size = tensor.globalShape[d];
      for (size_t axis = 0; axis < tensor.splitDims.size(); ++axis)
        if (tensor.splitDims[axis] == static_cast<int>(d)) {
          even = even && size % tensor.hierarchy[axis] == 0;
          size /= tensor.hierarchy[axis];
        }
      even = even && size == tensor.localShape[d];
    }
    for (int rank = 0; rank < plan.world && (!even || listed); ++rank) {
      std::vector<DimRange> ranges = tensor.shard(rank);
      for (size_t d = 0; d < ranges.size(); ++d)
        if (ranges[d].second - ranges[d].first != tensor.localShape[d])
          item.fail("'" + tensor.name + "': rank " + std::to_string(rank) +
                    " holds " +
                    std::to_string(ranges[d].second - ranges[d].first) +
                    " of dim " + std::to_string(d) +
                    " by its SBP, not the local shape's " +
                    std::to_string(tensor.localShape[d]));
      if (!listed)
        continue;
      std::vector<Reader> dims = listedShards[rank].items();
      if (dims.size() != ranges.size())
        listedShards[rank].fail(
            "expected one range per dim of the global shape");
      for (size_t d = 0; d < dims.size(); ++d) {
        std::vector<int64_t> range = dims[d].integers(0);
        if (range.size() != 2 || range[0] != ranges[d].first ||
            range[1] != ranges[d].second)
          dims[d].fail("bad shard range for '" + tensor.name + "'");
      }
    }
  }

  /// "stage 1", or "every stage" for -1.
  static std::string stageName(int stage) {
    return stage < 0 ? "every stage" : "stage " + std::to_string(stage);
  }

  void readVariables() {
    std::set<std::string> names;
    for (const Reader &item : root.at("variables").items()) {
      PlanVariable variable;
      readDistributed(item, variable);
      std::string role = item.at("role").string();
      std::optional<Role> parsed = parseRole(role);
      // grad: a gradient kept from one step to the next (offload's
      // delayed update).
      if (!parsed || (*parsed != Role::Param && *parsed != Role::Master &&
                      *parsed != Role::OptState && *parsed != Role::Grad))
        item.at("role").fail("unknown variable role '" + role + "'");
      variable.role = *parsed;
      variable.init = item.at("init").string();
      if (variable.init != "zeros" && variable.init != "ones" &&
          variable.init != "normal" && variable.init != "uniform" &&
          variable.init != "constant")
        item.at("init").fail("unknown init '" + variable.init + "'");
      variable.initScale = item.at("init_scale").number();
      variable.frozen = item.at("frozen").boolean();
      if (item.has("logical_shape")) {
        variable.logicalShape = readShape(item.at("logical_shape"));
        int64_t logical = 1, global = 1;
        for (int64_t dim : *variable.logicalShape)
          logical *= dim;
        for (int64_t dim : variable.globalShape)
          global *= dim;
        if (logical > global)
          item.at("logical_shape").fail("larger than the global shape");
      }
      if (item.has("model_split"))
        variable.modelSplit = readModelSplit(item, variable);
      if (item.has("copy_of"))
        variable.copyOf = item.at("copy_of").string();
      if (!names.insert(variable.name).second)
        item.fail("variable '" + variable.name + "' appears twice");
      plan.variables.push_back(std::move(variable));
    }
    for (const PlanVariable &variable : plan.variables)
      if (variable.copyOf && !names.count(*variable.copyOf))
        root.fail("variable '" + variable.name + "' is a copy of unknown '" +
                  *variable.copyOf + "'");
  }

  // A flat partition of a tensor-parallel variable: row t of its [P, N]
  // global tensor is part t of the model tensor along `dim`, P the parts of
  // hierarchy axis `axis` (docs/plan-format.md#variables-and-inputs).
  ModelSplit readModelSplit(const Reader &item, const PlanVariable &variable) {
    Reader field = item.at("model_split");
    if (!variable.logicalShape)
      field.fail("needs logical_shape, the model shape it splits");
    const std::vector<int64_t> &model = *variable.logicalShape;
    const std::vector<int64_t> &global = variable.globalShape;
    ModelSplit split;
    int64_t axis = field.at("axis").integer();
    if (axis < 0 || axis >= static_cast<int64_t>(plan.hierarchy.size()))
      field.at("axis").fail("axis " + std::to_string(axis) +
                            " is not an axis of the hierarchy " +
                            shapeText(plan.hierarchy));
    int64_t dim = field.at("dim").integer();
    if (dim < 0 || dim >= static_cast<int64_t>(model.size()))
      field.at("dim").fail("dim " + std::to_string(dim) +
                           " is not a dim of logical_shape " +
                           shapeText(model));
    split.axis = static_cast<int>(axis);
    split.dim = static_cast<int>(dim);
    int64_t parts = plan.hierarchy[axis];
    if (global.size() != 2 || global[0] != parts)
      field.fail("global_shape " + shapeText(global) + " is not [" +
                 std::to_string(parts) + ", N], a row per part");
    if (model[dim] % parts != 0)
      field.fail("dim " + std::to_string(dim) + " of logical_shape " +
                 shapeText(model) + " does not split into " +
                 std::to_string(parts) + " equal parts");
    // Rows hold a part (N >= numel / P): the logical_shape check above,
    // as P divides the model's elements.
    std::string sbp = variable.sbp.empty() ? "absent" : variable.sbp[axis];
    if (sbp != "S(0)")
      field.fail("sbp on hierarchy axis " + std::to_string(axis) + " is " +
                 sbp + ", not S(0)");
    return split;
  }

  void readInputs() {
    for (const Reader &item : root.at("inputs").items()) {
      PlanInput input;
      readDistributed(item, input);
      plan.inputs.push_back(std::move(input));
    }
  }

  void readInstructions() {
    std::vector<Reader> items = root.at("instructions").items();
    std::set<int> started, waited;
    std::set<int> transfersStarted, transfersWaited;
    std::vector<int> transferStarts; // By transfer id: its start's index.
    std::map<int, std::vector<int>> bucketStages; // Of each bucket's start.
    // Per (source, target) stage: the send halves not yet received.
    std::map<std::pair<int, int>, std::deque<size_t>> unreceived;
    for (const Reader &item : items) {
      Instruction instruction;
      instruction.op = item.at("op").string();
      if (item.has("operands"))
        instruction.operands = valueIds(item.at("operands"));
      if (item.has("results"))
        instruction.results = valueIds(item.at("results"));
      if (item.has("free"))
        for (const Reader &id : item.at("free").items())
          instruction.free.push_back(bufferId(id));
      if (item.has("attrs")) {
        Reader attrs = item.at("attrs");
        if (!attrs.json().is_object())
          attrs.fail("expected an object");
        for (auto it = attrs.json().begin(); it != attrs.json().end(); ++it)
          instruction.attrs.set(
              it.key(),
              readAttr(Reader(it.value(), attrs.where() + "." + it.key(),
                              plan.source)));
      }
      if (item.has("stages"))
        instruction.stages = readStages(item.at("stages"));
      const std::string &op = instruction.op;
      if (op == "collective_start") {
        readCollective(item, instruction);
        if (!started.insert(instruction.bucket).second)
          item.at("bucket").fail("bucket " +
                                 std::to_string(instruction.bucket) +
                                 " is started twice");
        bucketStages[instruction.bucket] = instruction.stages;
        // A loop's halves pair in the unrolled program.
        if (instruction.collective == CollectiveKind::SendRecv && !looped())
          pairSendRecv(item, plan.instructions.size(), instruction, unreceived);
      } else if (op == "collective_wait") {
        instruction.kind = InstructionKind::CollectiveWait;
        instruction.bucket = static_cast<int>(item.at("bucket").integer(0));
        if (!started.count(instruction.bucket))
          item.at("bucket").fail("waits for bucket " +
                                 std::to_string(instruction.bucket) +
                                 " before it starts");
        if (!waited.insert(instruction.bucket).second)
          item.at("bucket").fail("bucket " +
                                 std::to_string(instruction.bucket) +
                                 " is waited for twice");
        checkWaitStages(item, instruction, bucketStages[instruction.bucket]);
      } else if (op == "copy") {
        instruction.kind = InstructionKind::Copy;
        instruction.variable = item.at("variable").string();
        for (size_t i = 0; i < plan.variables.size(); ++i)
          if (plan.variables[i].name == instruction.variable)
            instruction.variableIndex = static_cast<int>(i);
        if (instruction.variableIndex < 0)
          item.at("variable")
              .fail("unknown variable '" + instruction.variable + "'");
        if (instruction.operands.size() != 1 ||
            plan.values[instruction.operands[0]].bytes() !=
                plan.values[plan.variables[instruction.variableIndex].value]
                    .bytes())
          item.fail("a copy takes one operand the size of its variable");
      } else if (op == "sbp.to_partial") {
        instruction.kind = InstructionKind::ToPartial;
        if (instruction.operands.size() != 1 || instruction.results.size() != 1)
          item.fail("sbp.to_partial takes one operand and one result");
      } else if (op == "shard.all_slice") {
        instruction.kind = InstructionKind::AllSlice;
        if (instruction.operands.size() != 1 || instruction.results.size() != 1)
          item.fail("shard.all_slice takes one operand and one result");
      } else if (op.rfind("nn.", 0) == 0) {
        instruction.kind = InstructionKind::Kernel;
        readKernelMemory(item, instruction);
      } else if (op == "transfer_start") {
        readTransfer(item, instruction);
        if (!transfersStarted.insert(instruction.transfer).second)
          item.at("transfer")
              .fail("transfer " + std::to_string(instruction.transfer) +
                    " is started twice");
        if (instruction.transfer + 1 !=
            static_cast<int>(transfersStarted.size()))
          item.at("transfer")
              .fail("transfer " + std::to_string(instruction.transfer) +
                    " starts where transfer " +
                    std::to_string(transfersStarted.size() - 1) +
                    " is due; ids are 0, 1, 2, ... in the order of the starts");
        transferStarts.push_back(static_cast<int>(plan.instructions.size()));
      } else if (op == "transfer_wait") {
        instruction.kind = InstructionKind::TransferWait;
        instruction.transfer = static_cast<int>(
            item.at("transfer").integer(0, std::numeric_limits<int>::max()));
        if (!instruction.operands.empty() || !instruction.results.empty())
          item.fail("transfer_wait takes no operands or results (they are "
                    "its transfer_start's)");
        if (!transfersStarted.count(instruction.transfer))
          item.at("transfer")
              .fail("waits for transfer " +
                    std::to_string(instruction.transfer) + " before it starts");
        if (!transfersWaited.insert(instruction.transfer).second)
          item.at("transfer")
              .fail("transfer " + std::to_string(instruction.transfer) +
                    " is waited for twice");
        const Instruction &start =
            plan.instructions[transferStarts[instruction.transfer]];
        instruction.from = start.from;
        instruction.to = start.to;
        checkWaitStages(item, instruction, start.stages);
      } else {
        item.at("op").fail("unknown instruction '" + op + "'");
      }
      checkNvmeUntouched(item, instruction);
      checkStageBuffers(item, instruction);
      checkPipelineAxisAttrs(item, instruction);
      if (instruction.attrs.has("micro_batch_dim") && !looped())
        item.at("attrs")
            .at("micro_batch_dim")
            .fail("only an nn.slice in a chunk of pipeline.loop has one");
      plan.instructions.push_back(std::move(instruction));
    }
    checkAllReceived(unreceived);
    for (int bucket : started)
      if (!waited.count(bucket))
        root.at("instructions")
            .fail("bucket " + std::to_string(bucket) +
                  " is started but never waited for");
    plan.numBuckets = started.empty() ? 0 : *started.rbegin() + 1;
    if (static_cast<int>(started.size()) != plan.numBuckets)
      root.at("instructions").fail("bucket ids are not 0, 1, 2, ...");
    for (int transfer : transfersStarted)
      if (!transfersWaited.count(transfer))
        root.at("instructions")
            .fail("transfer " + std::to_string(transfer) +
                  " is started but never waited for");
    plan.numTransfers = static_cast<int>(transfersStarted.size());
  }

  void checkAllReceived(
      const std::map<std::pair<int, int>, std::deque<size_t>> &unreceived) {
    for (const auto &[ends, sends] : unreceived)
      if (!sends.empty())
        named(instructionPath(sends.front()))
            .fail("the send half of a send_recv from stage " +
                  std::to_string(ends.first) + " to stage " +
                  std::to_string(ends.second) +
                  " is never received (no later receive half pairs with it)");
  }

  // An instruction's `stages`: distinct stages of the pipeline, increasing.
  std::vector<int> readStages(const Reader &field) {
    if (!plan.pipeline)
      field.fail("stages, but the plan has no 'pipeline' object");
    std::vector<int> stages;
    for (const Reader &entry : field.items())
      stages.push_back(
          static_cast<int>(entry.integer(0, plan.pipeline->stages - 1)));
    if (stages.empty())
      field.fail("expected at least one stage (leave the key out for every "
                 "stage)");
    for (size_t i = 1; i < stages.size(); ++i)
      if (stages[i] <= stages[i - 1])
        field.fail("expected distinct stages in increasing order, got " +
                   stagesText(stages).substr(7));
    return stages;
  }

  // A wait runs on the ranks that ran its start: on any other rank it would
  // wait for work that never began.
  void checkWaitStages(const Reader &item, const Instruction &wait,
                       const std::vector<int> &startStages) {
    if (wait.stages != startStages)
      item.fail(wait.op + " runs on " + stagesText(wait.stages) +
                " but its start on " + stagesText(startStages) +
                "; both run on the same ranks");
  }

  // A rank touches only its stage's buffers and those of every stage, which
  // other stages' buffers cannot overlap: so an instruction that touches a
  // stage's buffer runs on that stage alone. A send_recv, which touches
  // one stage's buffer on either side, is checked by readCollective.
  void checkStageBuffers(const Reader &item, const Instruction &instruction) {
    if (!plan.pipeline ||
        (instruction.kind == InstructionKind::CollectiveStart &&
         instruction.collective == CollectiveKind::SendRecv))
      return;
    auto check = [&](const std::string &what, int buffer) {
      int stage = plan.buffers[buffer].stage;
      if (stage >= 0 && instruction.stages != std::vector<int>{stage})
        item.fail(instruction.op + " runs on " +
                  stagesText(instruction.stages) + " but " + what + " buffer " +
                  std::to_string(buffer) + " of stage " +
                  std::to_string(stage));
    };
    for (int id : instruction.operands)
      check("reads value " + std::to_string(id) + " in",
            plan.values[id].buffer);
    for (int id : instruction.results)
      check("writes value " + std::to_string(id) + " in",
            plan.values[id].buffer);
    if (instruction.staging)
      check("stages through", *instruction.staging);
    if (instruction.kind == InstructionKind::Copy)
      check(
          "writes variable '" + instruction.variable + "' in",
          plan.values[plan.variables[instruction.variableIndex].value].buffer);
  }

  // Hierarchy axes in attributes count from the pipeline axis, which no
  // slice, partial sum or split may use: a stage's ranks all share their
  // coordinate on it, and another stage holds none of the value.
  void checkPipelineAxisAttrs(const Reader &item,
                              const Instruction &instruction) {
    if (!plan.pipeline || !item.has("attrs"))
      return;
    Reader attrs = item.at("attrs");
    const std::string shared =
        "the pipeline axis, which a stage's ranks share (a stage's own axes "
        "are 1 and after)";
    // Attributes of other types are the kernels' to refuse.
    auto ints = [&](const char *name) -> const std::vector<int64_t> * {
      auto found = instruction.attrs.all().find(name);
      if (found == instruction.attrs.all().end())
        return nullptr;
      return std::get_if<std::vector<int64_t>>(&found->second);
    };
    if (instruction.kind == InstructionKind::AllSlice)
      if (const std::vector<int64_t> *axes = ints("grid_axes"))
        if (std::find(axes->begin(), axes->end(), 0) != axes->end())
          attrs.at("grid_axes").fail("axis 0 is " + shared);
    if (instruction.kind == InstructionKind::ToPartial) {
      auto found = instruction.attrs.all().find("grid_axis");
      const int64_t *axis = found == instruction.attrs.all().end()
                                ? nullptr
                                : std::get_if<int64_t>(&found->second);
      if (axis && *axis == 0)
        attrs.at("grid_axis").fail("axis 0 is " + shared);
    }
    if (const std::vector<int64_t> *dims = ints("split_dims"))
      if (!dims->empty() && (*dims)[0] != -1)
        attrs.at("split_dims")
            .fail("splits dim " + std::to_string((*dims)[0]) +
                  " over axis 0, " + shared);
  }

  // send_recv (docs/plan-format.md#send_recv): operand 0, on the source
  // stage, goes to result 0, on the target stage, over the pipeline axis.
  void readSendRecv(const Reader &item, Instruction &instruction) {
    if (!plan.pipeline)
      item.at("kind").fail("send_recv, but the plan has no 'pipeline' object");
    int last = plan.pipeline->stages - 1;
    instruction.sourceStage =
        static_cast<int>(item.at("source_stage").integer(0, last));
    instruction.targetStage =
        static_cast<int>(item.at("target_stage").integer(0, last));
    if (instruction.sourceStage == instruction.targetStage)
      item.at("target_stage")
          .fail("stage " + std::to_string(instruction.targetStage) +
                " sends to itself");
    if (instruction.groupAxis != 0)
      item.at("group_axis")
          .fail("a send_recv runs over the pipeline axis 0, not axis " +
                std::to_string(instruction.groupAxis));
    if (instruction.operands.size() != 1 || instruction.results.size() != 1)
      item.fail("send_recv takes one operand and one result");
    // Both halves at once, or one: the send half on the source stage, the
    // receive half on the target stage.
    std::vector<int> ends = {
        std::min(instruction.sourceStage, instruction.targetStage),
        std::max(instruction.sourceStage, instruction.targetStage)};
    if (instruction.stages != ends &&
        instruction.stages != std::vector<int>{instruction.sourceStage} &&
        instruction.stages != std::vector<int>{instruction.targetStage})
      item.fail("send_recv runs on " + stagesText(instruction.stages) +
                ", not on its source stage [" +
                std::to_string(instruction.sourceStage) +
                "] (the send half), its target stage [" +
                std::to_string(instruction.targetStage) +
                "] (the receive half) or both " + stagesText(ends).substr(7));
    const PlanValue &operand = plan.values[instruction.operands[0]];
    const PlanValue &result = plan.values[instruction.results[0]];
    if (operand.dtype != result.dtype || operand.numel() != result.numel())
      item.fail("the operand (" + typeText(operand) + ") and the result (" +
                typeText(result) + ") differ in dtype or element count");
    auto onStage = [&](const char *key, int id, int stage) {
      int buffer = plan.values[id].buffer;
      int actual = plan.buffers[buffer].stage;
      if (actual >= 0 && actual != stage)
        item.at(key).fail("value " + std::to_string(id) + " is in buffer " +
                          std::to_string(buffer) + " of stage " +
                          std::to_string(actual) + ", not of stage " +
                          std::to_string(stage));
    };
    onStage("operands", instruction.operands[0], instruction.sourceStage);
    onStage("results", instruction.results[0], instruction.targetStage);
    if (instruction.staging)
      item.at("staging").fail("a send_recv has no staging buffer");
  }

  // send_recv halves between two stages pair in program order, as their
  // messages do (docs/plan-format.md#send_recv): the k-th receive half from
  // stage s to stage t takes the k-th send half, which comes before it and
  // names the same operand and result. Both halves at once pair with
  // themselves, so none may be pending then. `unreceived` holds the send
  // halves not yet received, by (source, target).
  void
  pairSendRecv(const Reader &item, size_t index, const Instruction &instruction,
               std::map<std::pair<int, int>, std::deque<size_t>> &unreceived) {
    bool sends = plan.runsOn(instruction, instruction.sourceStage);
    bool receives = plan.runsOn(instruction, instruction.targetStage);
    std::deque<size_t> &pending =
        unreceived[{instruction.sourceStage, instruction.targetStage}];
    std::string ends = "from stage " + std::to_string(instruction.sourceStage) +
                       " to stage " + std::to_string(instruction.targetStage);
    const std::string order = " (halves between two stages pair in order)";
    if (sends && receives) {
      if (!pending.empty())
        item.fail(
            "send_recv " + ends + " runs both halves here, but the send half " +
            instructionPath(pending.front()) + " is not received yet" + order);
      return;
    }
    if (sends) {
      pending.push_back(index);
      return;
    }
    if (pending.empty())
      item.fail("the receive half of a send_recv " + ends +
                " has no earlier send half to pair with" + order);
    const Instruction &send = plan.instructions[pending.front()];
    if (send.operands != instruction.operands ||
        send.results != instruction.results)
      item.fail("the receive half of " + valueName(instruction.operands[0]) +
                " into " + valueName(instruction.results[0]) +
                " pairs with the send half " +
                instructionPath(pending.front()) + ", which sends " +
                valueName(send.operands[0]) + " into " +
                valueName(send.results[0]) + order);
    pending.pop_front();
  }

  // transfer_start: one operand in memory `from`, one result of the same
  // dtype and shape in memory `to` (docs/plan-format.md#instructions).
  void readTransfer(const Reader &item, Instruction &instruction) {
    instruction.kind = InstructionKind::TransferStart;
    instruction.transfer = static_cast<int>(
        item.at("transfer").integer(0, std::numeric_limits<int>::max()));
    instruction.from = readMemoryKind(item.at("from"));
    instruction.to = readMemoryKind(item.at("to"));
    if (instruction.from == instruction.to)
      item.fail(std::string("a transfer from ") +
                memoryKindName(instruction.from) + " memory to itself");
    if (instruction.operands.size() != 1 || instruction.results.size() != 1)
      item.fail("transfer_start takes one operand and one result");
    auto inMemory = [&](const char *key, int id, MemoryKind memory) {
      int buffer = plan.values[id].buffer;
      if (plan.memoryOf(buffer) != memory)
        item.at(key).fail("value " + std::to_string(id) + " is in buffer " +
                          std::to_string(buffer) + " in " +
                          memoryKindName(plan.memoryOf(buffer)) +
                          " memory, not " + memoryKindName(memory));
    };
    inMemory("operands", instruction.operands[0], instruction.from);
    inMemory("results", instruction.results[0], instruction.to);
    const PlanValue &operand = plan.values[instruction.operands[0]];
    const PlanValue &result = plan.values[instruction.results[0]];
    if (operand.dtype != result.dtype || operand.shape != result.shape)
      item.fail("the operand (" + typeText(operand) + ") and the result (" +
                typeText(result) + ") differ in dtype or shape");
  }

  MemoryKind readMemoryKind(const Reader &reader) {
    std::string name = reader.string();
    if (std::optional<MemoryKind> kind = parseMemoryKind(name))
      return *kind;
    reader.fail("unknown memory '" + name +
                "' (expected device, host or nvme)");
  }

  static std::string typeText(const PlanValue &value) {
    std::string text = std::string(dtypeName(value.dtype)) + " [";
    for (size_t d = 0; d < value.shape.size(); ++d)
      text += (d ? ", " : "") + std::to_string(value.shape[d]);
    return text + "]";
  }

  // A kernel computes in device memory, or in host memory (`"memory":
  // "host"`, an offloaded update), and reads and writes only there: the
  // CUDA runtime runs it on the GPU or on the host accordingly.
  void readKernelMemory(const Reader &item, Instruction &instruction) {
    if (item.has("memory")) {
      instruction.memory = readMemoryKind(item.at("memory"));
      if (instruction.memory == MemoryKind::Nvme)
        item.at("memory").fail("a kernel cannot compute in NVMe");
    }
    auto check = [&](const char *what, int id) {
      int buffer = plan.values[id].buffer;
      MemoryKind memory = plan.memoryOf(buffer);
      if (memory != instruction.memory && memory != MemoryKind::Nvme)
        item.fail(instruction.op + " computes in " +
                  memoryKindName(instruction.memory) + " memory but " + what +
                  " value " + std::to_string(id) + " in buffer " +
                  std::to_string(buffer) + ", in " + memoryKindName(memory) +
                  " memory");
    };
    for (int id : instruction.operands)
      check("reads", id);
    for (int id : instruction.results)
      check("writes", id);
  }

  // Only transfers move bytes in or out of an NVMe arena: a kernel, a slice,
  // a collective or a copy there is refused (docs/plan-format.md#arenas).
  void checkNvmeUntouched(const Reader &item, const Instruction &instruction) {
    if (instruction.kind == InstructionKind::TransferStart ||
        instruction.kind == InstructionKind::TransferWait)
      return;
    auto refuse = [&](const std::string &what, int buffer) {
      if (plan.memoryOf(buffer) == MemoryKind::Nvme)
        item.fail(instruction.op + " " + what + " buffer " +
                  std::to_string(buffer) +
                  ", in the nvme arena; only transfers may touch NVMe");
    };
    for (int id : instruction.operands)
      refuse("reads value " + std::to_string(id) + " in",
             plan.values[id].buffer);
    for (int id : instruction.results)
      refuse("writes value " + std::to_string(id) + " in",
             plan.values[id].buffer);
    if (instruction.staging)
      refuse("stages through", *instruction.staging);
    if (instruction.kind == InstructionKind::Copy)
      refuse(
          "writes variable '" + instruction.variable + "' in",
          plan.values[plan.variables[instruction.variableIndex].value].buffer);
  }

  void readCollective(const Reader &item, Instruction &instruction) {
    instruction.kind = InstructionKind::CollectiveStart;
    std::string kind = item.at("kind").string();
    if (kind == "all_reduce")
      instruction.collective = CollectiveKind::AllReduce;
    else if (kind == "reduce_scatter")
      instruction.collective = CollectiveKind::ReduceScatter;
    else if (kind == "all_gather")
      instruction.collective = CollectiveKind::AllGather;
    else if (kind == "all_to_all")
      instruction.collective = CollectiveKind::AllToAll;
    else if (kind == "send_recv")
      instruction.collective = CollectiveKind::SendRecv;
    else
      item.at("kind").fail("unknown collective '" + kind + "'");
    instruction.bucket = static_cast<int>(item.at("bucket").integer(0));
    instruction.groupAxis = static_cast<int>(
        item.at("group_axis")
            .integer(0, static_cast<int64_t>(plan.hierarchy.size()) - 1));
    instruction.groupSize = static_cast<int>(item.at("group_size").integer(1));
    if (instruction.groupSize != plan.hierarchy[instruction.groupAxis])
      item.at("group_size").fail("does not match the hierarchy");
    bool sendRecv = instruction.collective == CollectiveKind::SendRecv;
    // A send_recv reduces nothing; every other kind writes `reduce`.
    std::string reduce =
        sendRecv && !item.has("reduce") ? "sum" : item.at("reduce").string();
    if (reduce == "sum")
      instruction.reduce = ReduceOp::Sum;
    else if (reduce == "max")
      instruction.reduce = ReduceOp::Max;
    else
      item.at("reduce").fail("unknown reduction '" + reduce + "'");
    if (item.has("gather_axis"))
      instruction.gatherAxis =
          static_cast<int>(item.at("gather_axis").integer(0));
    if (item.has("scatter_axis"))
      instruction.scatterAxis =
          static_cast<int>(item.at("scatter_axis").integer(0));
    if (item.has("staging"))
      instruction.staging = bufferId(item.at("staging"));
    for (const Reader &entry : item.at("segments").items()) {
      Segment segment;
      segment.offset = entry.at("offset").integer(0);
      segment.numel = entry.at("numel").integer(0);
      instruction.segments.push_back(segment);
    }
    if (sendRecv)
      readSendRecv(item, instruction);
    else if (plan.pipeline && instruction.groupAxis == 0 &&
             !instruction.stages.empty() &&
             static_cast<int>(instruction.stages.size()) !=
                 plan.pipeline->stages)
      // Its group holds a rank of every stage, which all must take part.
      item.fail("a collective over the pipeline axis runs on every stage, "
                "not on " +
                stagesText(instruction.stages));
    size_t count = instruction.operands.size();
    if (count == 0 || instruction.results.size() != count ||
        instruction.segments.size() != count)
      item.fail("a collective needs as many operands, results and segments");
    int64_t n = instruction.groupSize;
    for (size_t i = 0; i < count; ++i) {
      const PlanValue &operand = plan.values[instruction.operands[i]];
      const PlanValue &result = plan.values[instruction.results[i]];
      if (operand.dtype != result.dtype)
        item.fail("operand and result " + std::to_string(i) +
                  " differ in dtype");
      auto axisOk = [&](std::optional<int> axis, const PlanValue &value) {
        return axis && *axis < static_cast<int>(value.shape.size());
      };
      int64_t in = operand.numel(), out = result.numel();
      bool ok = true;
      switch (instruction.collective) {
      case CollectiveKind::AllReduce:
        ok = in == out;
        break;
      case CollectiveKind::ReduceScatter:
        ok = axisOk(instruction.scatterAxis, operand) && in == out * n;
        break;
      case CollectiveKind::AllGather:
        ok = axisOk(instruction.gatherAxis, result) && out == in * n;
        break;
      case CollectiveKind::AllToAll:
        ok = axisOk(instruction.scatterAxis, operand) &&
             axisOk(instruction.gatherAxis, result) && in == out && count == 1;
        break;
      case CollectiveKind::SendRecv:
        ok = in == out && count == 1;
        break;
      }
      if (!ok)
        item.fail("segment " + std::to_string(i) + " does not fit a " +
                  collectiveKindName(instruction.collective) + " over " +
                  std::to_string(n) + " ranks");
    }
  }

  int valueId(const Reader &reader) {
    return static_cast<int>(
        reader.integer(0, static_cast<int64_t>(plan.values.size()) - 1));
  }
  int bufferId(const Reader &reader) {
    return static_cast<int>(
        reader.integer(0, static_cast<int64_t>(plan.buffers.size()) - 1));
  }
  std::vector<int> valueIds(const Reader &reader) {
    std::vector<int> ids;
    for (const Reader &item : reader.items())
      ids.push_back(valueId(item));
    return ids;
  }

  Reader root;
  const std::string &text;
  PlanReadOptions options;
  Plan plan;
  /// Per buffer: its copies in a loop (one without `micro_slots`).
  std::vector<LoopSlots> slots;
  /// Where the unrolled plan's entries come from, once unrolled.
  std::optional<LoopExpansion> expansion;
};

} // namespace

uint32_t planChecksum(const std::string &text, size_t digits) {
  static const char kZeros[] = "00000000";
  digits = std::min(digits, text.size());
  uint32_t crc = updateCrc32(0, text.data(), static_cast<int64_t>(digits));
  crc = updateCrc32(crc, kZeros, 8);
  size_t rest = std::min(text.size(), digits + 8);
  return updateCrc32(crc, text.data() + rest,
                     static_cast<int64_t>(text.size() - rest));
}

Plan parsePlan(const std::string &text, const std::string &source,
               const PlanReadOptions &options) {
  Json root;
  try {
    root = Json::parse(text);
  } catch (const Json::exception &error) {
    // Syntax errors are parse_error; a number too large for a double is
    // out_of_range ("[json.exception.out_of_range.406] number overflow ...").
    std::string what = error.what();
    // "[json.exception.parse_error.101] parse error at line 3, column 4: ..."
    size_t start = what.find("] ");
    throw RuntimeError(
        source + ": not valid JSON (" +
        (start == std::string::npos ? what : what.substr(start + 2)) + ")");
  }
  try {
    return PlanBuilder(root, text, source, options).build();
  } catch (const Json::exception &error) {
    throw RuntimeError(source + ": malformed plan (" + error.what() + ")");
  }
}

Plan readPlan(const std::string &path, const PlanReadOptions &options) {
  return parsePlan(readRegularFile(path, kMaxPlanFileBytes, "the plan"), path,
                   options);
}

void checkRankCount(const Plan &plan, int ranks) {
  if (ranks != plan.world)
    throw RuntimeError(
        plan.source + ": the plan was compiled for " +
        std::to_string(plan.world) + " ranks, not " + std::to_string(ranks) +
        " (recompile with --world=" + std::to_string(ranks) + ")");
}

} // namespace zerosbp::runtime
