//===- _zerosbp.cpp - the zerosbp extension module ------------------------===//
//
// pybind11 bindings of the graph capture and compile (python_api/capture)
// and of the runtime's training session, for the Python package around
// them. Errors arrive as zerosbp.Error (a RuntimeError) with the C++
// message unchanged.
//
//===----------------------------------------------------------------------===//

#include "passes/common/TrainingEnums.h"
#include "python_api/capture/GraphCapture.h"
#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/comm/MpiComm.h"
#include "runtime/core/Error.h"
#include "runtime/core/Limits.h"
#include "runtime/exec/Distribution.h"
#include "runtime/exec/StepTrace.h"
#include "runtime/io/DurableFile.h"
#include "runtime/kernels/Kernel.h"
#include "runtime/plan/Plan.h"
#include "runtime/train/ModelData.h"
#include "runtime/train/MpiTraining.h"
#include "runtime/train/MpirunSupervisor.h"
#include "runtime/train/TrainingSession.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <type_traits>

namespace py = pybind11;
using namespace zerosbp;
using namespace zerosbp::runtime;

namespace {

using DoubleArray =
    py::array_t<double, py::array::c_style | py::array::forcecast>;

std::vector<double> toVector(const DoubleArray &array) {
  return std::vector<double>(array.data(), array.data() + array.size());
}

py::array_t<float> toArray(const std::vector<double> &values,
                           const std::vector<int64_t> &shape) {
  std::vector<py::ssize_t> dims(shape.begin(), shape.end());
  py::array_t<float> array(dims);
  float *out = array.mutable_data();
  for (py::ssize_t i = 0; i < array.size(); ++i)
    out[i] = static_cast<float>(values[i]);
  return array;
}

/// What a checkpoint's manifest says about where it came from.
py::dict manifestInfo(const std::string &directory,
                      const CheckpointManifest &manifest) {
  py::dict info;
  info["path"] = directory;
  info["step"] = manifest.step;
  info["world"] = manifest.world;
  info["stage"] = manifest.stage ? py::cast(*manifest.stage) : py::none();
  info["seed"] = manifest.seed;
  return info;
}

/// MPI for the process, started on first use and finished at exit.
struct MpiProcess {
  std::unique_ptr<MpiSession> session;
  std::unique_ptr<Communicator> comm;
};
MpiProcess mpi;
MpiProcess &startMpi() {
  if (!mpi.session) {
    mpi.session = std::make_unique<MpiSession>();
    mpi.comm = mpi.session->communicator();
  }
  return mpi;
}

/// A compiled plan trained step by step, in process or as this MPI rank.
class PySession {
public:
  PySession(const std::string &planFile, const std::string &backend,
            double timeoutSeconds, int threads)
      : plan(readPlan(planFile)) {
    int ranksHere = plan.world;
    // The plan's placement says where it runs (cpu, or cuda: a GPU per rank).
    if (backend == "inprocess") {
      session =
          std::make_unique<TrainingSession>(plan, timeoutSeconds, plan.device);
    } else if (backend == "mpi") {
      MpiSession *mpiSession = startMpi().session.get();
      gather = [mpiSession, timeoutSeconds](const std::vector<double> &mine) {
        return mpiSession->gatherRecords(
            mine, std::chrono::milliseconds(
                      static_cast<int64_t>(timeoutSeconds * 1000)));
      };
      session = std::make_unique<TrainingSession>(plan, *mpi.comm, gather,
                                                  timeoutSeconds, plan.device);
      ranksHere = mpiRanksOnThisMachine();
    } else {
      throw RuntimeError("unknown backend '" + backend +
                         "' (expected inprocess or mpi)");
    }
    pickKernelThreads(threads, ranksHere);
    // A bad batch raises without spoiling the state
    // (docs/runtime.md#non-finite-numbers).
    session->setSkipNonfiniteSteps(!plan.inference);
  }

  void initialize(const std::map<std::string, DoubleArray> &values) {
    std::map<std::string, std::vector<double>> model;
    for (const auto &[name, array] : values)
      model[name] = toVector(array);
    InitialModel initial(plan, std::move(model));
    session->initialize([&](const PlanVariable &variable) {
      return initial.valuesOf(variable);
    });
  }

  double step(const std::vector<DoubleArray> &inputs) {
    std::vector<std::vector<double>> values = checkedInputs(inputs);
    double loss;
    {
      py::gil_scoped_release release;
      loss = session->step([&](int index) { return values[index]; });
    }
    if (!session->lastSkip().empty())
      throw RuntimeError(session->lastSkip() +
                         "; the step was skipped (parameters, optimizer "
                         "state and step count unchanged)");
    return loss;
  }

  std::vector<std::vector<double>>
  checkedInputs(const std::vector<DoubleArray> &inputs) {
    if (inputs.size() != plan.inputs.size())
      throw RuntimeError("the graph takes " +
                         std::to_string(plan.inputs.size()) + " inputs, got " +
                         std::to_string(inputs.size()));
    std::vector<std::vector<double>> values;
    for (size_t i = 0; i < inputs.size(); ++i) {
      int64_t expected = numElements(plan.inputs[i].globalShape);
      if (inputs[i].size() != expected)
        throw RuntimeError("input '" + plan.inputs[i].name + "' has " +
                           std::to_string(expected) + " elements, got " +
                           std::to_string(inputs[i].size()));
      values.push_back(toVector(inputs[i]));
    }
    return values;
  }

  /// Runs an inference plan on one batch; returns its outputs as float32
  /// arrays of their global shapes.
  py::list evaluate(const std::vector<DoubleArray> &inputs) {
    std::vector<std::vector<double>> values = checkedInputs(inputs);
    std::vector<std::vector<double>> outputs;
    {
      py::gil_scoped_release release;
      outputs = session->evaluate([&](int index) { return values[index]; });
    }
    py::list arrays;
    for (size_t k = 0; k < outputs.size(); ++k)
      arrays.append(toArray(outputs[k], plan.values[plan.outputs[k]].shape));
    return arrays;
  }

  /// Runs this inference plan on `owner`'s parameters from now on.
  void shareParametersWith(PySession &owner) {
    session->shareVariablesWith(*owner.session);
  }

  /// The trained value of a parameter (from its fp32 master if any).
  py::array_t<float> parameter(const std::string &name) {
    const SavedParameter &saved = savedParameter(name);
    std::vector<double> global;
    {
      py::gil_scoped_release release;
      global = session->globalValue(saved.source);
    }
    return toArray(global, plan.variables[saved.param].modelShape());
  }

  /// Sets a parameter and its fp32 master; optimizer state is kept.
  void setParameter(const std::string &name, const DoubleArray &values) {
    const SavedParameter &saved = savedParameter(name);
    const PlanVariable &param = plan.variables[saved.param];
    if (values.size() != numElements(param.modelShape()))
      throw RuntimeError("parameter '" + name + "' has " +
                         std::to_string(numElements(param.modelShape())) +
                         " elements, got " + std::to_string(values.size()));
    std::vector<double> model = toVector(values);
    session->setVariable(saved.source, model);
    if (saved.source != saved.param)
      session->setVariable(saved.param, model);
  }

  py::list parameters() const {
    py::list names;
    for (const SavedParameter &saved : savedParameters(plan)) {
      const PlanVariable &param = plan.variables[saved.param];
      names.append(
          py::make_tuple(param.name, param.modelShape(), !param.frozen));
    }
    return names;
  }

  py::list inputs() const {
    py::list list;
    for (const PlanInput &input : plan.inputs)
      list.append(py::make_tuple(input.name, input.globalShape,
                                 dtypeName(input.dtype)));
    return list;
  }

  /// Per rank: memory peaks by role and per step times and bytes sent.
  py::list records() const {
    py::list ranks;
    for (const RankRecord &record : session->records()) {
      py::dict byRole;
      for (int role = 0; role < kNumRoles; ++role)
        byRole[roleName(static_cast<Role>(role))] = record.peaks.byRole[role];
      py::dict peaks;
      peaks["total"] = record.peaks.total;
      peaks["model_states"] = record.peaks.modelStates;
      peaks["high_water"] = record.peaks.highWater;
      peaks["by_role"] = byRole;
      py::list steps;
      for (size_t s = 0; s < record.times.size(); ++s) {
        const StepTimes &t = record.times[s];
        py::dict sent;
        for (int kind = 0; kind < kNumCollectiveKinds; ++kind)
          sent[collectiveKindName(static_cast<CollectiveKind>(kind))] =
              record.bytesSent[s][kind];
        py::dict step;
        step["step_ms"] = t.step;
        step["forward_ms"] = t.forward;
        step["backward_ms"] = t.backward;
        step["optimizer_ms"] = t.optimizer;
        step["comm_wait_ms"] = t.commWait;
        step["comm_busy_ms"] = t.commBusy;
        step["bytes_sent"] = sent;
        steps.append(step);
      }
      py::dict entry;
      entry["peak_bytes"] = peaks;
      entry["steps"] = steps;
      ranks.append(entry);
    }
    return ranks;
  }

  /// Saves the whole training state into `directory` (created if needed),
  /// recording `seed` as the data seed, and returns the checkpoint's path. Rank
  /// 0 holds the directory's lock for the save only, so another process may
  /// save there between saves. Collective under MPI.
  std::string saveCheckpoint(const std::string &directory, int keep,
                             uint64_t seed) {
    if (keep < 0)
      throw py::value_error("keep must be 0 (keep all) or positive, got " +
                            std::to_string(keep));
    py::gil_scoped_release release;
    std::unique_ptr<DirectoryLock> lock;
    std::string error;
    if (session->rank() == 0) {
      try {
        createDirectories(directory);
        lock = std::make_unique<DirectoryLock>(directory);
      } catch (const std::exception &failure) {
        error = failure.what();
      }
    }
    // Every process learns whether rank 0 got the lock, so that none waits
    // in the save for a rank that gave up.
    if (gather && gather({error.empty() ? 0.0 : 1.0})[0] != 0 && error.empty())
      error = directory + ": rank 0 could not take the lock to save";
    if (!error.empty())
      throw RuntimeError(error);
    std::string path = session->saveCheckpoint(directory, keep, seed);
    // Only rank 0 commits, and so knows the path; the name is the same.
    return path.empty() ? directory + "/" + checkpointName(session->stepsRun())
                        : path;
  }

  /// Loads a checkpoint of any world size and stage; everything is checked
  /// before anything is written. Collective under MPI.
  py::dict loadCheckpoint(const std::string &path) {
    // The step directory itself, so that the one reported is the one read
    // even if a save moves `latest` meanwhile; its read lock, held to the
    // end, keeps a writer's pruning off it until it is loaded.
    std::string directory = path;
    OpenedCheckpoint held;
    try {
      held = openCheckpoint(path);
      directory = held.directory;
    } catch (const std::exception &) {
      // loadCheckpoint reports it, on every rank together.
    }
    CheckpointManifest manifest;
    {
      py::gil_scoped_release release;
      manifest = session->loadCheckpoint(directory);
    }
    return manifestInfo(directory, manifest);
  }

  void setTracing(bool on) { session->setTracing(on); }
  /// The last traced step of this process's ranks, as Chrome trace JSON.
  std::string traceJson() const {
    return chromeTraceJson(session->lastStepTraces());
  }

  int64_t stepsRun() const { return session->stepsRun(); }
  int world() const { return plan.world; }
  int rank() const { return session->rank(); }
  int64_t arenaBytes() const { return plan.arenaBytes; }
  int64_t arenaBytesHeld() const { return session->arenaBytesHeld(); }
  int64_t evaluationsRun() const { return session->evaluationsRun(); }
  bool inference() const { return plan.inference; }

private:
  const SavedParameter &savedParameter(const std::string &name) {
    if (saved.empty())
      saved = savedParameters(plan);
    for (const SavedParameter &entry : saved)
      if (plan.variables[entry.param].name == name)
        return entry;
    throw RuntimeError("the graph has no parameter '" + name + "'");
  }

  Plan plan;
  GatherFn gather; // Over MPI: every rank's values, on every rank.
  std::unique_ptr<TrainingSession> session;
  std::vector<SavedParameter> saved;
};

python::OpAttrs opAttrs(const py::kwargs &kwargs) {
  python::OpAttrs attrs;
  for (auto item : kwargs) {
    std::string key = py::str(item.first);
    py::handle value = item.second;
    if (key == "transpose_lhs")
      attrs.transposeLhs = value.cast<bool>();
    else if (key == "transpose_rhs")
      attrs.transposeRhs = value.cast<bool>();
    else if (key == "causal")
      attrs.causal = value.cast<bool>();
    else if (key == "keepdim")
      attrs.keepdim = value.cast<bool>();
    else if (key == "axis")
      attrs.axis = value.cast<int64_t>();
    else if (key == "scalar")
      attrs.scalar = value.cast<double>();
    else if (key == "ints")
      attrs.ints = value.cast<std::vector<int64_t>>();
    else if (key == "ints2")
      attrs.ints2 = value.cast<std::vector<int64_t>>();
    else if (key == "dtype")
      attrs.dtype = value.cast<std::string>();
    else
      throw py::type_error("unknown op attribute '" + key + "'");
  }
  return attrs;
}

/// A config field's Python value as the spec holds it: an enum by name.
template <typename T> GraphConfigSpec::Value readSetting(py::handle value) {
  if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double> ||
                std::is_same_v<T, bool>)
    return value.cast<T>();
  else if constexpr (std::is_same_v<T, ZeroStage>)
    return value.cast<int64_t>();
  else
    return value.cast<std::string>();
}

/// The config fields a Python graph's config sets, by their Python names:
/// ConfigOptions.def's Python column, with each field's type.
struct PythonSetting {
  const char *name;
  GraphConfigSpec::Value (*read)(py::handle);
};
const PythonSetting kPythonSettings[] = {
#define ZERO_OPTION(Group, Field, Type, Member, Default, Key, DeepSpeed,       \
                    Python, ...)                                               \
  {Python, &readSetting<Type>},
#include "compiler/config/ConfigOptions.def"
};

/// The graph's config dict (nn/graph_config.py) as a spec: the keys that
/// are no config field, then every field by its Python name.
python::ConfigSpec configSpec(const py::dict &dict) {
  python::ConfigSpec spec;
  for (auto item : dict) {
    std::string key = py::str(item.first);
    py::handle value = item.second;
    if (key == "deepspeed_json") {
      spec.deepspeedJson = value.cast<std::string>();
      continue;
    }
    if (key == "zero") {
      spec.zeroSet = value.cast<bool>();
      continue;
    }
    if (key == "zero_mode") {
      spec.zeroMode = value.cast<bool>();
      continue;
    }
    if (key == "overrides") {
      spec.overrides = value.cast<std::string>();
      continue;
    }
    if (key == "activation_memory_budget") {
      spec.activationMemoryBudget = value.cast<int64_t>();
      continue;
    }
    const PythonSetting *setting =
        std::find_if(std::begin(kPythonSettings), std::end(kPythonSettings),
                     [&](const PythonSetting &row) { return key == row.name; });
    if (key.empty() || setting == std::end(kPythonSettings))
      throw py::type_error("unknown config field '" + key + "'");
    spec.settings.emplace_back(key, setting->read(value));
  }
  return spec;
}

py::dict compiledDict(const python::CompiledGraph &compiled) {
  py::dict result;
  result["pass_ir"] = compiled.passIr;
  result["report"] = compiled.reportJson;
  result["summary"] = compiled.summary;
  result["config"] = compiled.config;
  return result;
}

/// Runs `compile(spec)` for the config dict with the GIL released (the
/// compile takes a while, and other threads may run meanwhile).
template <typename Compile>
py::dict compileWithoutGil(const py::dict &config, Compile compile) {
  python::ConfigSpec spec = configSpec(config);
  python::CompiledGraph compiled;
  {
    py::gil_scoped_release release;
    compiled = compile(spec);
  }
  return compiledDict(compiled);
}

} // namespace

PYBIND11_MODULE(_zerosbp, m) {
  m.doc() = "ZeroSBP's compiler and runtime (use the zerosbp package)";
  static py::exception<std::runtime_error> error(m, "Error",
                                                 PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr pointer) {
    try {
      if (pointer)
        std::rethrow_exception(pointer);
    } catch (const py::builtin_exception &) {
      throw; // pybind11's own (TypeError, ValueError, ...).
    } catch (const std::runtime_error &caught) {
      error(caught.what());
    }
  });

  // One bound on ranks for zero-run, the readers and Python (placements,
  // zerosbp.launch -n, and graphs here, whatever world MPI gives them).
  m.attr("MAX_RANKS") = kMaxRanks;

  py::class_<python::GraphCapture>(m, "GraphCapture")
      .def(py::init([](const std::string &name, int64_t world,
                       const std::string &device,
                       const std::vector<int64_t> &hierarchy,
                       int64_t pipelineStages) {
             if (world < 1 || world > kMaxRanks)
               throw RuntimeError("world: expected a number of ranks in [1, " +
                                  std::to_string(kMaxRanks) + "], got " +
                                  std::to_string(world));
             return std::make_unique<python::GraphCapture>(
                 name, world, device, hierarchy, pipelineStages);
           }),
           py::arg("name"), py::arg("world"), py::arg("device") = "cpu",
           py::arg("hierarchy") = std::vector<int64_t>(),
           py::arg("pipeline_stages") = 1)
      .def_property_readonly("world", &python::GraphCapture::world)
      .def("input", &python::GraphCapture::input, py::arg("name"),
           py::arg("shape"), py::arg("dtype"))
      .def("parameter", &python::GraphCapture::parameter, py::arg("name"),
           py::arg("shape"), py::arg("trainable"),
           py::arg("splits") = std::vector<int64_t>())
      .def(
          "apply",
          [](python::GraphCapture &self, const std::string &op,
             const std::vector<int> &operands, const py::kwargs &kwargs) {
            return self.apply(op, operands, opAttrs(kwargs));
          },
          py::arg("op"), py::arg("operands"))
      .def("split", &python::GraphCapture::split, py::arg("value"),
           py::arg("axis"), py::arg("sizes"))
      .def("begin_checkpoint", &python::GraphCapture::beginCheckpoint)
      .def("end_checkpoint", &python::GraphCapture::endCheckpoint)
      .def("set_pipeline_stage", &python::GraphCapture::setPipelineStage,
           py::arg("stage"))
      .def("shape", &python::GraphCapture::shape)
      .def("dtype", &python::GraphCapture::dtype)
      .def(
          "compile",
          [](python::GraphCapture &self, int loss, const py::dict &config,
             const std::string &planFile, bool keepIr) {
            return compileWithoutGil(config, [&](const auto &spec) {
              return self.compile(loss, spec, planFile, keepIr);
            });
          },
          py::arg("loss"), py::arg("config"), py::arg("plan_file"),
          py::arg("keep_ir") = true)
      .def(
          "compile_inference",
          [](python::GraphCapture &self, const std::vector<int> &outputs,
             const py::dict &config, const std::string &planFile, bool keepIr) {
            return compileWithoutGil(config, [&](const auto &spec) {
              return self.compileInference(outputs, spec, planFile, keepIr);
            });
          },
          py::arg("outputs"), py::arg("config"), py::arg("plan_file"),
          py::arg("keep_ir") = true);

  py::class_<PySession>(m, "Session")
      .def(py::init<const std::string &, const std::string &, double, int>(),
           py::arg("plan_file"), py::arg("backend") = "inprocess",
           py::arg("timeout") = 300.0, py::arg("threads") = 0)
      .def("initialize", &PySession::initialize)
      .def("step", &PySession::step)
      .def("evaluate", &PySession::evaluate)
      .def("share_parameters_with", &PySession::shareParametersWith,
           py::arg("owner"), py::keep_alive<1, 2>())
      .def("parameter", &PySession::parameter)
      .def("set_parameter", &PySession::setParameter)
      .def("parameters", &PySession::parameters)
      .def("inputs", &PySession::inputs)
      .def("records", &PySession::records)
      .def("save_checkpoint", &PySession::saveCheckpoint, py::arg("directory"),
           py::arg("keep") = 0, py::arg("seed") = 0)
      .def("load_checkpoint", &PySession::loadCheckpoint, py::arg("path"))
      .def("set_tracing", &PySession::setTracing)
      .def("trace_json", &PySession::traceJson)
      .def_property_readonly("steps_run", &PySession::stepsRun)
      .def_property_readonly("world", &PySession::world)
      .def_property_readonly("rank", &PySession::rank)
      .def_property_readonly("arena_bytes", &PySession::arenaBytes)
      .def_property_readonly("arena_bytes_held", &PySession::arenaBytesHeld)
      .def_property_readonly("evaluations_run", &PySession::evaluationsRun)
      .def_property_readonly("inference", &PySession::inference);

  m.def(
      "check_config",
      [](const py::dict &config, int64_t world) {
        return python::checkConfig(configSpec(config), world);
      },
      py::arg("config"), py::arg("world") = 1);
  m.def(
      "checkpoint_info",
      [](const std::string &path) {
        OpenedCheckpoint opened = openCheckpoint(path);
        return manifestInfo(opened.directory, opened.manifest);
      },
      py::arg("path"));
  m.def("launched_by_mpirun", &MpiSession::launchedByMpirun);
  m.def("mpi_rank_and_size", [] {
    MpiSession &session = *startMpi().session;
    return py::make_tuple(session.rank(), session.size());
  });
  m.def("mpi_finalize", [] {
    mpi.comm.reset(); // Communicators go before their session.
    mpi.session.reset();
  });
  m.def(
      "mpirun_command",
      [](int ranks, const std::string &dir, const std::string &hostfile) {
        MpiTraining::prepareMpirunEnvironment();
        return MpiTraining::mpirunCommand(ranks, dir, hostfile);
      },
      py::arg("ranks"), py::arg("dir"), py::arg("hostfile") = "");
  // zerosbp.launch: mpirun with signals forwarded and no rank left behind
  // (docs/runtime.md#signals). Returns (status, signal, killed,
  // mpirun_signal).
  m.def(
      "run_mpirun",
      [](const std::vector<std::string> &command, double graceSeconds) {
        MpirunOutcome outcome;
        {
          py::gil_scoped_release release;
          outcome = superviseMpirun(
              command, std::chrono::milliseconds(
                           static_cast<int64_t>(graceSeconds * 1000)));
        }
        return py::make_tuple(outcome.status, outcome.signal, outcome.killed,
                              outcome.mpirunSignal);
      },
      py::arg("command"), py::arg("grace") = 5.0);
}
