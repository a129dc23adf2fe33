//===- GraphCapture.h - graph capture and compile for Python ----*- C++ -*-===//
//
// The compiler side of the Python `nn.Graph`, behind an interface of plain
// C++ types: the pybind11 module is built with RTTI and MLIR without, so
// no MLIR type crosses this header. Values are integer handles. Every
// method throws std::runtime_error with a one-line message on bad input;
// after a failed build step the capture is unusable.
//
//===----------------------------------------------------------------------===//

#ifndef ZEROSBP_PYTHON_API_CAPTURE_GRAPHCAPTURE_H
#define ZEROSBP_PYTHON_API_CAPTURE_GRAPHCAPTURE_H

#include "compiler/config/GraphConfigSpec.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace zerosbp::python {

/// The attributes an op may take; each op reads the ones it needs.
struct OpAttrs {
  bool transposeLhs = false;
  bool transposeRhs = false;
  bool causal = false;
  bool keepdim = false;
  int64_t axis = -1;
  double scalar = 0.0;
  std::vector<int64_t> ints;  // shape, permutation, offsets, axes
  std::vector<int64_t> ints2; // slice sizes
  std::string dtype;          // cast target, fill type
};

/// How the graph is configured (compiler/config/GraphConfigSpec.h).
using ConfigSpec = GraphConfigSpec;

struct CompiledGraph {
  /// The IR after each pass, "capture" first.
  std::vector<std::pair<std::string, std::string>> passIr;
  /// zero-compile's JSON report.
  std::string reportJson;
  /// One line per op of the global view after the last global pass: its
  /// result, operands, shape, dtype, SBP and role.
  std::string summary;
  /// The config as `key=value` pairs.
  std::string config;
};

/// The config `spec` gives on `world` ranks, as `key=value` pairs; throws
/// the error a compile would (so that config calls fail where they are
/// made).
std::string checkConfig(const ConfigSpec &spec, int64_t world);

class GraphCapture {
public:
  /// Starts graph `name` on ranks 0..world-1 of `device` ("cpu" or
  /// "cuda") cut into `pipelineStages` pipeline stages: the graph is
  /// captured on the first stage's ranks, 0..world/pipelineStages-1, laid
  /// out as `hierarchy` (row-major; empty: one axis), and zero-pipeline-
  /// stages adds the other stages (docs/design.md#pipeline-parallelism).
  GraphCapture(const std::string &name, int64_t world,
               const std::string &device = "cpu",
               const std::vector<int64_t> &hierarchy = {},
               int64_t pipelineStages = 1);
  ~GraphCapture();
  GraphCapture(const GraphCapture &) = delete;
  GraphCapture &operator=(const GraphCapture &) = delete;

  /// The ranks of every stage.
  int64_t world() const;

  /// A data input split along axis 0 over hierarchy axis 0 and broadcast
  /// over the others (`[S(0), B]`); dtype is f32 or i64.
  int input(const std::string &name, const std::vector<int64_t> &shape,
            const std::string &dtype);
  /// A parameter (f32); frozen ones get no gradient or update. `splits`
  /// holds, per hierarchy axis, the dim that axis splits into equal parts
  /// or -1 for broadcast; empty broadcasts it on every axis.
  int parameter(const std::string &name, const std::vector<int64_t> &shape,
                bool trainable, const std::vector<int64_t> &splits = {});
  /// Op `op` (matmul, add, layer_norm, ...; see GraphCapture.cpp) on
  /// `operands`, returning its result.
  int apply(const std::string &op, const std::vector<int> &operands,
            const OpAttrs &attrs);
  /// Splits `value` along `axis` into parts of `sizes`.
  std::vector<int> split(int value, int64_t axis,
                         const std::vector<int64_t> &sizes);

  /// Ops applied from here to endCheckpoint() form an activation-
  /// checkpointing segment, recomputed in the backward (zero-remat).
  void beginCheckpoint();
  void endCheckpoint();

  /// Ops applied from here on, parameters included, run on pipeline stage
  /// `stage` of the pipelineStages; stages do not decrease.
  void setPipelineStage(int64_t stage);

  std::vector<int64_t> shape(int value) const;
  /// f32, f16, bf16, i64, i32, ...
  std::string dtype(int value) const;

  /// Finishes the graph with `loss` as its result, compiles it for `spec`
  /// and writes the plan to `planFile`. With `keepIr`, the IR after each
  /// pass is returned. The capture cannot be used afterwards.
  CompiledGraph compile(int loss, const ConfigSpec &spec,
                        const std::string &planFile, bool keepIr);
  /// Finishes the graph with `outputs` as its results and compiles it for
  /// inference (no backward, no optimizer, dropout off; the parameters laid
  /// out as a training graph of `spec` lays them out), like compile().
  CompiledGraph compileInference(const std::vector<int> &outputs,
                                 const ConfigSpec &spec,
                                 const std::string &planFile, bool keepIr);

private:
  CompiledGraph compileGraph(const std::vector<int> &results,
                             const ConfigSpec &spec,
                             const std::string &planFile, bool keepIr,
                             bool inference);

  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace zerosbp::python

#endif // ZEROSBP_PYTHON_API_CAPTURE_GRAPHCAPTURE_H
