//===- zero-checkpoint.cpp - inspects and converts checkpoints ------------===//
//
//   zero-checkpoint inspect DIR
//   zero-checkpoint to-fp32 DIR OUT.safetensors
//
// `inspect` prints what a checkpoint (a step directory, or a directory with
// `latest`) holds: the run it came from, every file with its size and
// whether its CRC-32 checks, and every tensor with its role, dtype, model
// shape, SBP (of the rows, for a flat partition split along a model dim:
// `[S(1),S(0)] of 2 parts of dim 1`) and the ranks that hold it, and any
// partial directory beside it. It exits 1 if a file does not check.
//
// `to-fp32` writes the full parameters as one safetensors file of float32
// tensors under their PyTorch names (from the fp32 master where the run
// kept one), as DeepSpeed's zero_to_fp32 does. It holds one tensor at a
// time and writes OUT atomically; an OUT inside the checkpoint, or holding
// it, is refused.
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/core/Error.h"
#include "runtime/core/Tensor.h"
#include "runtime/exec/Distribution.h"
#include "runtime/io/DurableFile.h"
#include "runtime/io/Npy.h"
#include "runtime/io/Safetensors.h"
#include "runtime/tools/common/OutputPaths.h"

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

using namespace zerosbp::runtime;

namespace {

const char *const kUsage = "usage: zero-checkpoint inspect DIR\n"
                           "       zero-checkpoint to-fp32 DIR OUT.safetensors";

std::string joined(const std::vector<std::string> &parts) {
  std::string text;
  for (size_t i = 0; i < parts.size(); ++i)
    text += (i ? "," : "") + parts[i];
  return "[" + text + "]";
}

/// "Adam, fp32" from the compile configuration.
std::string trainingText(const std::string &configJson) {
  nlohmann::json config =
      nlohmann::json::parse(configJson, nullptr, /*allow_exceptions=*/false);
  std::string optimizer = "-";
  std::string precision = "fp32";
  if (config.is_object()) {
    if (config.contains("optimizer") && config["optimizer"].is_object() &&
        config["optimizer"].value("type", "").size())
      optimizer = config["optimizer"]["type"].get<std::string>();
    for (const char *key : {"bf16", "fp16"})
      if (config.contains(key) && config[key].is_object() &&
          config[key].value("enabled", false))
        precision = key;
  }
  return optimizer + ", " + precision;
}

int inspect(const std::string &path) {
  OpenedCheckpoint checkpoint = openCheckpoint(path);
  const CheckpointManifest &manifest = checkpoint.manifest;
  std::printf("checkpoint  %s\n", checkpoint.directory.c_str());
  std::printf("format      zerosbp-checkpoint version %d\n", manifest.version);
  std::printf("step        %lld\n", static_cast<long long>(manifest.step));
  std::printf("world       %d ranks %s on %s\n", manifest.world,
              npyShapeText(manifest.hierarchy).c_str(),
              manifest.device.c_str());
  std::printf("stage       %s\n",
              manifest.stage ? std::to_string(*manifest.stage).c_str() : "-");
  std::printf("function    %s\n", manifest.function.c_str());
  std::printf("training    %s\n", trainingText(manifest.configJson).c_str());
  std::printf("data seed   %llu\n",
              static_cast<unsigned long long>(manifest.seed));
  // Partial directories sit beside the step directories.
  std::string step = checkpoint.directory;
  while (step.size() > 1 && step.back() == '/')
    step.pop_back();
  std::string root = std::filesystem::path(step).parent_path().string();
  for (const auto &[name, bytes] :
       partialCheckpoints(root.empty() ? "." : root))
    std::printf("partial     %s (%lld bytes): a save under way or "
                "interrupted; the next save here removes it\n",
                name.c_str(), static_cast<long long>(bytes));

  int bad = 0;
  std::printf("\n%-34s %12s  %-8s  %s\n", "file", "bytes", "crc32", "check");
  for (const CheckpointFile &file : manifest.files) {
    std::string check = "ok";
    try {
      verifyCheckpointFile(checkpoint, file.rank);
    } catch (const RuntimeError &error) {
      check = std::string("BAD: ") + error.what();
      ++bad;
    }
    std::printf("%-34s %12lld  %08x  %s\n", file.name.c_str(),
                static_cast<long long>(file.bytes), file.crc32, check.c_str());
  }

  std::printf("\n%-40s %-9s %-5s %-16s %-10s %s\n", "tensor", "role", "dtype",
              "shape", "sbp", "ranks");
  int64_t parameters = 0;
  for (const CheckpointTensor &tensor : manifest.tensors) {
    std::string ranks;
    for (const CheckpointPiece &piece : tensor.pieces)
      ranks += (ranks.empty() ? "" : ",") + std::to_string(piece.rank);
    // A model split's SBP is of its [parts, N] rows, not of the shape.
    std::string sbp = joined(tensor.sbp);
    if (const std::optional<SplitParts> &split = tensor.layout.modelSplit)
      sbp += " of " + std::to_string(split->parts) + " parts of dim " +
             std::to_string(split->dim);
    std::printf("%-40s %-9s %-5s %-16s %-10s %s\n", tensor.name.c_str(),
                roleName(tensor.role), dtypeName(tensor.dtype),
                npyShapeText(tensor.layout.modelShape).c_str(), sbp.c_str(),
                ranks.c_str());
    if (tensor.role == Role::Param)
      parameters += numElements(tensor.layout.modelShape);
  }
  std::printf("\n%zu tensors, %lld parameters\n", manifest.tensors.size(),
              static_cast<long long>(parameters));
  if (bad) {
    std::fprintf(stderr, "zero-checkpoint: %d of %zu files do not check\n", bad,
                 manifest.files.size());
    return 1;
  }
  return 0;
}

int toFp32(const std::string &path, const std::string &out) {
  // OUT is renamed into place: over a file of the checkpoint, or over the
  // checkpoint, it would replace what it converts.
  tools::CommandPath output{"the output", out};
  tools::checkApart(output, {"the checkpoint", path});
  OpenedCheckpoint checkpoint = openCheckpoint(path);
  tools::checkApart(output, {"the checkpoint", checkpoint.directory});
  const CheckpointManifest &manifest = checkpoint.manifest;
  for (const CheckpointFile &file : manifest.files)
    verifyCheckpointFile(checkpoint, file.rank);
  CheckpointReader reader(checkpoint);
  std::vector<SafetensorsTensor> tensors;
  for (const CheckpointTensor &param : manifest.tensors) {
    if (param.role != Role::Param)
      continue;
    const CheckpointTensor *source = &param;
    for (const CheckpointTensor &tensor : manifest.tensors)
      if (tensor.copyOf == param.name)
        source = &tensor;
    SafetensorsTensor tensor;
    tensor.name = param.name;
    tensor.dtype = DType::F32;
    tensor.shape = param.layout.modelShape;
    tensor.produce = [&reader, source](const SafetensorsTensor::Sink &sink) {
      // One model tensor at a time, widened to float32.
      int64_t count = numElements(source->layout.modelShape);
      std::vector<float> values(static_cast<size_t>(count));
      reader.read(*source, {{0, 0, count}},
                  [&](int64_t element, const void *data, int64_t n) {
                    TensorRef stored;
                    stored.data = const_cast<void *>(data);
                    stored.dtype = source->dtype;
                    stored.shape = {n};
                    std::vector<double> wide = loadElements(stored);
                    for (int64_t i = 0; i < n; ++i)
                      values[element + i] = static_cast<float>(wide[i]);
                  });
      sink(values.data(), count * 4);
    };
    tensors.push_back(std::move(tensor));
  }
  std::string temporary =
      out + ".tmp-" + std::to_string(static_cast<long>(::getpid()));
  try {
    writeSafetensors(
        temporary, tensors,
        {{"format", "pt"}, {"zerosbp_step", std::to_string(manifest.step)}});
    renamePath(temporary, out);
  } catch (...) {
    ::unlink(temporary.c_str());
    throw;
  }
  std::printf("wrote %zu fp32 parameters of step %lld to %s\n", tensors.size(),
              static_cast<long long>(manifest.step), out.c_str());
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
      std::cout << kUsage << "\n";
      return 0;
    }
    if (args.size() == 2 && args[0] == "inspect")
      return inspect(args[1]);
    if (args.size() == 3 && args[0] == "to-fp32")
      return toFp32(args[1], args[2]);
    std::cerr << "zero-checkpoint: "
              << (args.empty() ? std::string("no command given")
                               : "bad arguments for '" + args[0] + "'")
              << "\n"
              << kUsage << std::endl;
    return 2;
  } catch (const std::exception &error) {
    std::cerr << "zero-checkpoint: " << error.what() << std::endl;
    return 1;
  }
}
