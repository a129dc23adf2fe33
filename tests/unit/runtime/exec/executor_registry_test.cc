//===- executor_registry_test.cc - executors by device name ---------------===//
//
// A binary without the CUDA executor linked in runs on the CPU and refuses
// `cuda` with a message that says why, not as an unknown name.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Error.h"
#include "runtime/exec/Executor.h"

#include <gtest/gtest.h>

using namespace zerosbp::runtime;

namespace {

std::string errorOf(const std::string &device) {
  try {
    findExecutor(device);
  } catch (const RuntimeError &error) {
    return error.what();
  }
  return "";
}

TEST(ExecutorRegistry, CpuIsAlwaysThere) {
  EXPECT_TRUE(static_cast<bool>(findExecutor("cpu")));
  EXPECT_EQ(executorDevices(), std::vector<std::string>{"cpu"});
}

TEST(ExecutorRegistry, CudaWithoutTheCudaExecutorSaysSo) {
  EXPECT_EQ(errorOf("cuda"),
            "device cuda: this binary was built without CUDA (no CUDA "
            "toolkit at /usr/local/cuda when it was built)");
}

TEST(ExecutorRegistry, UnknownDeviceListsTheKnownOnes) {
  EXPECT_EQ(errorOf("tpu"), "unknown device 'tpu' (this binary runs on cpu)");
}

TEST(ExecutorRegistry, RegisteredDeviceIsFound) {
  bool called = false;
  registerExecutor("fake", [&](const Plan &, int, Communicator &) {
    called = true;
    return std::unique_ptr<Executor>();
  });
  Plan plan;
  const ExecutorFactory &factory = findExecutor("fake");
  EXPECT_EQ(executorDevices(), (std::vector<std::string>{"cpu", "fake"}));
  struct NoComm : Communicator {
    int rank() const override { return 0; }
    int worldSize() const override { return 1; }
    CommGroup &createGroup(const std::vector<int> &) override { throw 0; }
    void allReduce(CommGroup &, DType, void *, int64_t, ReduceOp) override {}
    void reduceScatter(CommGroup &, DType, const void *, void *, int64_t,
                       ReduceOp) override {}
    void allGather(CommGroup &, DType, const void *, void *, int64_t) override {
    }
    void allToAll(CommGroup &, DType, const void *, void *, int64_t) override {}
    void send(CommGroup &, DType, const void *, int64_t, int) override {}
    void recv(CommGroup &, DType, void *, int64_t, int) override {}
    void abort(const std::string &) override {}
  } comm;
  factory(plan, 0, comm);
  EXPECT_TRUE(called);
}

} // namespace
