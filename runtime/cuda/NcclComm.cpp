//===- NcclComm.cpp - collectives between GPUs over NCCL ------------------===//

#include "runtime/cuda/NcclComm.h"

#include "runtime/core/Error.h"

#include <nccl.h>

#include <cstring>

namespace zerosbp::runtime {

/// A group and its NCCL communicator.
class NcclGroup : public CommGroup {
public:
  NcclGroup(std::vector<int> members, int myIndex, ncclComm_t comm)
      : CommGroup(std::move(members), myIndex), comm(comm) {}
  ncclComm_t comm;
};

namespace {

[[noreturn]] void failNccl(const std::string &what, ncclResult_t status,
                           ncclComm_t comm = nullptr) {
  std::string detail = ncclGetErrorString(status);
  const char *last = ncclGetLastError(comm);
  if (last && *last)
    detail += " (" + std::string(last) + ")";
  throw RuntimeError("nccl: " + what + ": " + detail);
}

void checkNccl(const std::string &what, ncclResult_t status,
               ncclComm_t comm = nullptr) {
  if (status != ncclSuccess)
    failNccl(what, status, comm);
}

ncclDataType_t ncclType(DType type) {
  switch (type) {
  case DType::F32:
    return ncclFloat32;
  case DType::F16:
    return ncclFloat16;
  case DType::BF16:
    return ncclBfloat16;
  case DType::F64:
    return ncclFloat64;
  case DType::I64:
    return ncclInt64;
  case DType::I32:
    return ncclInt32;
  case DType::I1:
    return ncclUint8;
  case DType::I8:
    return ncclInt8;
  }
  return ncclUint8;
}

ncclRedOp_t ncclOp(ReduceOp op) {
  return op == ReduceOp::Max ? ncclMax : ncclSum;
}

ncclComm_t commOf(CommGroup &group) {
  ncclComm_t comm = static_cast<NcclGroup &>(group).comm;
  if (!comm)
    throw RuntimeError("nccl: the group " + formatRanks(group.ranks()) +
                       " was aborted after a failure");
  return comm;
}

} // namespace

NcclComm::NcclComm(Communicator &host, cudaStream_t stream)
    : host(host), stream(stream) {
  std::vector<int> everyone(host.worldSize());
  for (int r = 0; r < host.worldSize(); ++r)
    everyone[r] = r;
  hostWorld = &host.createGroup(everyone);
}

NcclComm::~NcclComm() {
  for (auto &group : groups) {
    // A communicator with failed work cannot be destroyed cleanly; aborting
    // it frees its resources either way.
    if (group->comm && ncclCommDestroy(group->comm) != ncclSuccess)
      (void)ncclCommAbort(group->comm);
  }
}

CommGroup &NcclComm::createGroup(const std::vector<int> &ranks) {
  int myIndex = memberIndex(ranks, rank(), worldSize(), "nccl group");
  // Every rank offers an id slot; each group's first rank fills its own.
  constexpr int64_t kIdWords = NCCL_UNIQUE_ID_BYTES / sizeof(int64_t);
  std::vector<int64_t> mine(kIdWords, 0);
  if (myIndex == 0) {
    ncclUniqueId id;
    checkNccl("cannot make a unique id", ncclGetUniqueId(&id));
    std::memcpy(mine.data(), &id, sizeof(id));
  }
  std::vector<int64_t> all(kIdWords * worldSize());
  host.allGather(*hostWorld, DType::I64, mine.data(), all.data(), kIdWords);
  ncclUniqueId id;
  std::memcpy(&id, all.data() + kIdWords * ranks[0], sizeof(id));
  ncclComm_t comm = nullptr;
  checkNccl(
      "cannot join the group " + formatRanks(ranks),
      ncclCommInitRank(&comm, static_cast<int>(ranks.size()), id, myIndex));
  groups.push_back(std::make_unique<NcclGroup>(ranks, myIndex, comm));
  return *groups.back();
}

void NcclComm::allReduce(CommGroup &group, DType type, void *data,
                         int64_t count, ReduceOp op) {
  ncclComm_t comm = commOf(group);
  checkNccl(describeCollective(CollectiveKind::AllReduce, type, count),
            ncclAllReduce(data, data, count, ncclType(type), ncclOp(op), comm,
                          stream),
            comm);
  countCollective(CollectiveKind::AllReduce, type, count, group);
}

void NcclComm::reduceScatter(CommGroup &group, DType type, const void *send,
                             void *recv, int64_t count, ReduceOp op) {
  ncclComm_t comm = commOf(group);
  checkNccl(describeCollective(CollectiveKind::ReduceScatter, type, count),
            ncclReduceScatter(send, recv, count, ncclType(type), ncclOp(op),
                              comm, stream),
            comm);
  countCollective(CollectiveKind::ReduceScatter, type, count, group);
}

void NcclComm::allGather(CommGroup &group, DType type, const void *send,
                         void *recv, int64_t count) {
  ncclComm_t comm = commOf(group);
  checkNccl(describeCollective(CollectiveKind::AllGather, type, count),
            ncclAllGather(send, recv, count, ncclType(type), comm, stream),
            comm);
  countCollective(CollectiveKind::AllGather, type, count, group);
}

void NcclComm::allToAll(CommGroup &group, DType type, const void *send,
                        void *recv, int64_t count) {
  ncclComm_t comm = commOf(group);
  size_t partBytes = count * dtypeBytes(type);
  std::string what = describeCollective(CollectiveKind::AllToAll, type, count);
  checkNccl(what, ncclGroupStart());
  for (int peer = 0; peer < group.size(); ++peer) {
    checkNccl(what,
              ncclSend(static_cast<const char *>(send) + peer * partBytes,
                       count, ncclType(type), peer, comm, stream),
              comm);
    checkNccl(what,
              ncclRecv(static_cast<char *>(recv) + peer * partBytes, count,
                       ncclType(type), peer, comm, stream),
              comm);
  }
  checkNccl(what, ncclGroupEnd(), comm);
  countCollective(CollectiveKind::AllToAll, type, count, group);
}

void NcclComm::send(CommGroup &group, DType type, const void *data,
                    int64_t count, int peerIndex) {
  ncclComm_t comm = commOf(group);
  checkNccl(describeCollective(CollectiveKind::SendRecv, type, count),
            ncclSend(data, count, ncclType(type), peerIndex, comm, stream),
            comm);
  countCollective(CollectiveKind::SendRecv, type, count, group, group.index());
}

void NcclComm::recv(CommGroup &group, DType type, void *data, int64_t count,
                    int peerIndex) {
  ncclComm_t comm = commOf(group);
  checkNccl(describeCollective(CollectiveKind::SendRecv, type, count),
            ncclRecv(data, count, ncclType(type), peerIndex, comm, stream),
            comm);
  countCollective(CollectiveKind::SendRecv, type, count, group, peerIndex);
}

void NcclComm::abort(const std::string &reason) {
  abortGroups();
  host.abort(reason);
}

void NcclComm::abortGroups() {
  for (auto &group : groups) {
    if (group->comm)
      (void)ncclCommAbort(group->comm);
    group->comm = nullptr;
  }
}

void NcclComm::checkAsyncErrors() {
  for (auto &group : groups) {
    if (!group->comm)
      throw RuntimeError("nccl: the group " + formatRanks(group->ranks()) +
                         " was aborted");
    ncclResult_t status = ncclSuccess;
    checkNccl("cannot query the group " + formatRanks(group->ranks()),
              ncclCommGetAsyncError(group->comm, &status), group->comm);
    if (status != ncclSuccess && status != ncclInProgress)
      failNccl("group " + formatRanks(group->ranks()), status, group->comm);
  }
}

} // namespace zerosbp::runtime
