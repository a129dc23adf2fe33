//===- hostfile_test.cc - OpenMPI hostfiles and where ranks land ----------===//

#include "runtime/train/Hostfile.h"

#include "runtime/core/Error.h"

#include <gtest/gtest.h>

namespace zerosbp::runtime {
namespace {

std::string errorOf(const std::string &text) {
  try {
    parseHostfile(text, "hosts");
  } catch (const RuntimeError &error) {
    return error.what();
  }
  return "(no error)";
}

TEST(Hostfile, ParsesOpenMpiLines) {
  std::vector<HostSlots> hosts = parseHostfile(
      "# two nodes\n\nnode0 slots=4 max_slots=8\n  node1   slots=2  # gpu\n"
      "node2\n",
      "hosts");
  ASSERT_EQ(hosts.size(), 3u);
  EXPECT_EQ(hosts[0].host, "node0");
  EXPECT_EQ(hosts[0].slots, 4);
  EXPECT_EQ(hosts[1].host, "node1");
  EXPECT_EQ(hosts[1].slots, 2);
  EXPECT_EQ(hosts[2].host, "node2");
  EXPECT_EQ(hosts[2].slots, 1);
}

TEST(Hostfile, RefusesWithTheLine) {
  EXPECT_EQ(errorOf("node0 slots=0\n"),
            "hosts:1: slots: expected an integer in [1, 1048576], got '0'");
  EXPECT_EQ(errorOf("node0\nnode1 cpus=4\n"),
            "hosts:2: expected slots=N or max_slots=N, got 'cpus=4'");
  EXPECT_EQ(errorOf("slots=2 node0\n"),
            "hosts:1: expected a host name first, got 'slots=2'");
  EXPECT_EQ(errorOf("node0 slots=2\nnode0 slots=2\n"),
            "hosts:2: host 'node0' is listed twice; give it one line with "
            "its slots");
  EXPECT_EQ(errorOf("# nothing\n\n"), "hosts: no hosts");
}

TEST(Hostfile, FillsSlotsInOrder) {
  std::vector<HostSlots> hosts = {{"a", 2}, {"b", 3}};
  EXPECT_EQ(ranksToHosts(hosts, 4, "hosts"), (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(ranksToHosts(hosts, 5, "hosts"), (std::vector<int>{0, 0, 1, 1, 1}));
  try {
    ranksToHosts(hosts, 6, "hosts");
    FAIL() << "6 ranks on 5 slots";
  } catch (const RuntimeError &error) {
    EXPECT_STREQ(error.what(), "hosts: 5 slots for 6 ranks");
  }
}

TEST(Hostfile, GroupsOfTheInnerAxisStayOnAHost) {
  std::vector<HostSlots> even = {{"a", 4}, {"b", 4}};
  std::vector<int> hostOf = ranksToHosts(even, 8, "hosts");
  EXPECT_EQ(groupsAcrossHosts(hostOf, even, 4), std::nullopt);
  EXPECT_EQ(groupsAcrossHosts(hostOf, even, 2), std::nullopt);
  EXPECT_EQ(groupsAcrossHosts(hostOf, even, 8),
            "ranks 0-7, one group of the plan's inner axis (8 ranks), span "
            "hosts a and b; give every host a multiple of 8 slots");
  std::vector<HostSlots> uneven = {{"a", 3}, {"b", 5}};
  EXPECT_EQ(groupsAcrossHosts(ranksToHosts(uneven, 8, "hosts"), uneven, 2),
            "ranks 2-3, one group of the plan's inner axis (2 ranks), span "
            "hosts a and b; give every host a multiple of 2 slots");
  // A flat plan has no groups to keep together.
  EXPECT_EQ(groupsAcrossHosts(ranksToHosts(uneven, 8, "hosts"), uneven, 1),
            std::nullopt);
}

TEST(Hostfile, LocalHosts) {
  EXPECT_TRUE(hostsAreLocal({{"localhost", 2}, {"127.0.0.1", 2}}));
  EXPECT_FALSE(hostsAreLocal({{"localhost", 2}, {"node7.cluster", 2}}));
}

} // namespace
} // namespace zerosbp::runtime
