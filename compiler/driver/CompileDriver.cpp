//===- CompileDriver.cpp - a captured graph to a plan, pass by pass -------===//

#include "compiler/driver/CompileDriver.h"

#include "compiler/driver/ActivationBudget.h"

#include "compiler/driver/PassRecorder.h"
#include "compiler/estimator/DeepSpeedEstimate.h"
#include "compiler/estimator/PlanReport.h"
#include "compiler/pipeline/Pipeline.h"
#include "dialects/nn/IR/NNOps.h"
#include "passes/common/SbpUtils.h"
#include "passes/common/ZeroAttrNames.h"
#include "passes/memory/PlanAttrs.h"

#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;

namespace zerosbp {

namespace {

llvm::Error driverError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// A configured train_batch_size must be the graph's batch: every input's
/// leading axis (inputs are the global batch, split along axis 0).
llvm::Error checkTrainBatchSize(func::FuncOp func, const ZeroConfig &config) {
  if (config.trainBatchSize == 0)
    return llvm::Error::success();
  for (auto input : func.getOps<nn::InputOp>()) {
    auto type = dyn_cast<RankedTensorType>(input.getType());
    if (!type || type.getRank() == 0)
      continue;
    if (type.getDimSize(0) != config.trainBatchSize)
      return driverError(llvm::formatv(
          "train_batch_size {0} != the graph's batch {1} (input '{2}', axis "
          "0)",
          config.trainBatchSize, type.getDimSize(0), input.getName()));
  }
  return llvm::Error::success();
}

/// The model-parallel size of a graph whose inputs are annotated: its ranks
/// over those that split the inputs' batch (docs/design.md#tensor-
/// parallelism). A config that counts batch sizes over another number of
/// data-parallel ranks is refused; one that leaves it at 1 takes the
/// graph's.
llvm::Error adoptModelParallelSize(func::FuncOp func, ZeroConfig &config) {
  for (auto input : func.getOps<nn::InputOp>()) {
    auto encoding = sbp::getGlobalEncoding(input.getType());
    if (!encoding)
      continue;
    int64_t ranks = encoding.getPlacement().getNumRanks();
    int64_t data = 1;
    for (auto [sbp, size] : llvm::zip_equal(
             encoding.getSbp(), encoding.getPlacement().getHierarchyShape()))
      if (sbp.isSplit())
        data *= size;
    int64_t model = ranks / data;
    if (config.modelParallelSize == model)
      return llvm::Error::success();
    if (config.modelParallelSize == 1 && config.trainBatchSize == 0) {
      config.modelParallelSize = model;
      return llvm::Error::success();
    }
    return driverError(llvm::formatv(
        "model-parallel-size {0}, but input '{1}' is split over {2} of the "
        "graph's {3} ranks (model-parallel size {4}); the batch sizes count "
        "its data-parallel ranks",
        config.modelParallelSize, input.getName(), data, ranks, model));
  }
  return llvm::Error::success();
}

/// Fails with `what` and the first error when `module` does not verify.
llvm::Error verifyGraph(ModuleOp module, llvm::StringRef what) {
  std::string first;
  ScopedDiagnosticHandler handler(module->getContext(), [&](Diagnostic &d) {
    if (first.empty() && d.getSeverity() == DiagnosticSeverity::Error)
      first = d.str();
    return success();
  });
  if (succeeded(verify(module)))
    return llvm::Error::success();
  return driverError(llvm::formatv("{0} does not verify: {1}", what, first));
}

/// Where `op` is, as `file:line:col: ` (empty for other locations).
std::string locationPrefix(Operation *op) {
  auto loc = dyn_cast<FileLineColLoc>(op->getLoc());
  if (!loc)
    return "";
  return llvm::formatv("{0}:{1}:{2}: ", loc.getFilename(), loc.getLine(),
                       loc.getColumn());
}

/// Every tensor and the parameters together must fit in a plan
/// (kMaxPlanBytes): the passes' byte arithmetic would wrap past int64 long
/// before the memory plan could refuse the arena.
llvm::Error checkSizes(func::FuncOp func) {
  int64_t parameters = 0;
  for (Operation &op : func.getBody().front()) {
    for (OpResult result : op.getResults()) {
      auto type = dyn_cast<RankedTensorType>(result.getType());
      if (!type || !type.hasStaticShape())
        continue;
      std::optional<int64_t> bytes = checkedTensorBytes(type);
      if (!bytes || *bytes > kMaxPlanBytes) {
        // The logical type without its encoding, and the name where the
        // value has one.
        std::string what;
        llvm::raw_string_ostream os(what);
        os << op.getName();
        if (auto variable = dyn_cast<nn::VariableOp>(op))
          os << " '" << variable.getName() << "'";
        else if (auto input = dyn_cast<nn::InputOp>(op))
          os << " '" << input.getName() << "'";
        else
          os << " result #" << result.getResultNumber();
        os << " of type "
           << RankedTensorType::get(type.getShape(), type.getElementType());
        return driverError(
            llvm::formatv("{0}{1} holds more than 2^53 bytes ({2}), the most "
                          "a plan addresses",
                          locationPrefix(&op), what, kMaxPlanBytes));
      }
      auto variable = dyn_cast<nn::VariableOp>(op);
      if (!variable || variable.getRole() != sbp::Role::param)
        continue;
      // Each term is at most 2^53, so the sum cannot wrap before the check.
      parameters += type.getNumElements();
      if (parameters > kMaxPlanBytes)
        return driverError(llvm::formatv(
            "{0}the parameters number more than 2^53 ({1}) elements, the "
            "most a plan addresses",
            locationPrefix(&op), kMaxPlanBytes));
    }
  }
  return llvm::Error::success();
}

} // namespace

llvm::Expected<llvm::json::Object> compileGraph(ModuleOp module,
                                                const ZeroConfig &givenConfig,
                                                const CompileOptions &options) {
  if (llvm::Error error = checkPipelineConfig(givenConfig))
    return std::move(error);
  ZeroConfig config = givenConfig;
  func::FuncOp func;
  for (auto candidate : module.getOps<func::FuncOp>())
    if (!candidate.isExternal()) {
      if (func)
        return driverError("the model has more than one graph function");
      func = candidate;
    }
  if (!func)
    return driverError("the model has no graph function");
  // The passes assume IR that verifies.
  if (llvm::Error error = verifyGraph(module, "the captured graph"))
    return std::move(error);
  if (llvm::Error error = adoptModelParallelSize(func, config))
    return std::move(error);
  // An inference graph's batch is its own, not the training step's.
  if (options.kind == GraphKind::Training)
    if (llvm::Error error = checkTrainBatchSize(func, config))
      return std::move(error);
  if (llvm::Error error = checkSizes(func))
    return std::move(error);

  std::optional<llvm::json::Object> budgetChoice;
  if (options.activationBudget > 0 && options.kind == GraphKind::Training) {
    auto choice =
        chooseCheckpointsForBudget(module, config, options.activationBudget);
    if (!choice)
      return choice.takeError();
    budgetChoice = std::move(*choice);
  }

  // One pass manager runs the whole pipeline; the recorder times each pass
  // and reads the global view before zero-partition.
  // Checkpointed segments (docs/design.md#activation-checkpointing) bring
  // zero-remat into the pipeline.
  bool checkpointed = false;
  func.walk(
      [&](Operation *op) { checkpointed |= op->hasAttr(nn::kCheckpointAttr); });
  PassManager pm(module->getContext());
  if (llvm::Error error = buildCompilePipeline(pm, config, options.kind,
                                               options.planFile, checkpointed))
    return std::move(error);
  pm.enableVerifier(options.verifyEachPass);
  auto recorder = std::make_unique<PassRecorder>(module, func, options);
  PassRecorder &passes = *recorder;
  pm.addInstrumentation(std::move(recorder));
  if (options.afterPass)
    options.afterPass("capture", module);
  LogicalResult result = pm.run(module);
  if (llvm::Error error = passes.takeError())
    return std::move(error);
  if (failed(result))
    return driverError("the pass pipeline failed");
  // Without a verifier after each pass, the compiled graph is verified once
  // (zero-export-plan verifies what it writes).
  if (!options.verifyEachPass && options.planFile.empty())
    if (llvm::Error error = verifyGraph(module, "the compiled graph"))
      return std::move(error);
  assert(passes.modelStates() && "zero-partition ran without the global view");
  const ModelStateReport &analysis = *passes.modelStates();
  auto plan = analyzePlan(func);
  if (failed(plan))
    return driverError("cannot read the plan off the compiled graph");

  llvm::json::Object json = analysis.toJson();
  // Bytes sent as scheduled: the global view counts a stage-3 parameter's
  // backward gather even where the schedule reuses the forward's copy.
  if (auto *comm = json.getObject("comm_bytes_per_step"))
    for (auto &entry : *comm) {
      auto it = plan->commBytesByKind.find(entry.first.str());
      entry.second = it == plan->commBytesByKind.end() ? 0.0 : it->second;
    }
  // The pipeline's stages, schedule and planned bubble
  // (docs/design.md#pipeline-parallelism).
  if (auto pipeline = func->getAttrOfType<DictionaryAttr>(kPipelineAttr)) {
    llvm::json::Object entry;
    for (NamedAttribute item : pipeline) {
      if (auto integer = dyn_cast<IntegerAttr>(item.getValue()))
        entry[item.getName().strref()] = integer.getInt();
      else if (auto number = dyn_cast<FloatAttr>(item.getValue()))
        entry[item.getName().strref()] = number.getValueAsDouble();
      else if (auto text = dyn_cast<StringAttr>(item.getValue()))
        entry[item.getName().strref()] = text.getValue();
      else if (auto loop = dyn_cast<DictionaryAttr>(item.getValue())) {
        // The micro-batch loop: its chunks, each run once per micro-batch
        // (docs/design.md#the-micro-batch-loop).
        auto chunks = loop.getAs<ArrayAttr>("chunks");
        entry["micro_batch_loop"] = llvm::json::Object{
            {"chunks", chunks ? static_cast<int64_t>(chunks.size()) : 0}};
      } else if (auto list = dyn_cast<ArrayAttr>(item.getValue())) {
        llvm::json::Array values;
        for (Attribute value : list)
          if (auto number = dyn_cast<FloatAttr>(value))
            values.push_back(number.getValueAsDouble());
        entry[item.getName().strref()] = std::move(values);
      }
    }
    json["pipeline"] = std::move(entry);
  }
  json["pass_ms"] = passes.takePassMs();
  json["compile_ms"] = passes.totalMs();
  json["config"] = config.toJson();
  llvm::json::Object planJson = plan->toJson();
  // The planned model states against the section-4 formula read off the
  // global IR; the bucket buffers come on top of them.
  int64_t formula = analysis.modelStateBytes();
  planJson["model_states_vs_formula"] = llvm::json::Object{
      {"planned_bytes", plan->modelStateBytes},
      {"formula_bytes", formula},
      {"equal", plan->modelStateBytes == formula},
      {"bucket_buffer_bytes", plan->peakBytesByRole.count("comm_buffer")
                                  ? plan->peakBytesByRole.at("comm_buffer")
                                  : 0}};
  json["plan"] = std::move(planJson);
  if (!options.planFile.empty())
    json["plan_file"] = options.planFile;
  // zero-remat counts the matmul FLOPs its copies add over the global
  // batch; each rank runs its share of the batch.
  auto flops = func->getAttrOfType<FloatAttr>(kRecomputeFlopsAttr);
  double total = flops ? flops.getValueAsDouble() : 0.0;
  double perRank =
      total / static_cast<double>(std::max<int64_t>(config.world, 1));
  if (flops)
    json["remat"] = llvm::json::Object{{"recompute_flops", total},
                                       {"recompute_flops_per_rank", perRank}};
  if (budgetChoice)
    (*budgetChoice)["recompute_flops_per_rank"] = perRank;
  if (budgetChoice)
    json["activation_checkpointing"] = std::move(*budgetChoice);
  // DeepSpeed's own estimates for this model on the same ranks, to read
  // beside the plan (docs/design.md#offload).
  json["deepspeed_estimates"] = deepSpeedEstimatesJson(
      analysis.params, largestLayerParams(func), config.world);
  return json;
}

} // namespace zerosbp
