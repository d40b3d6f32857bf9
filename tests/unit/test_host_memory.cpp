// available_host_bytes: MemAvailable, and the headroom of the process's
// memory cgroups (v1 and v2), on fake /proc and /sys trees.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "solver/cpu/cpu_backend.hpp"

namespace fs = std::filesystem;
using tdsolve::index_t;
using tdsolve::cpu::available_host_bytes_under;

namespace {

class HostMemory : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("tdsolve_mem_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
             "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "proc/self");
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const std::string& rel, const std::string& text) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << text;
  }
  index_t available(int ranks = 1) { return available_host_bytes_under(root_.string(), ranks); }
  fs::path root_;
};

constexpr index_t kGiB = index_t(1) << 30;

}  // namespace

TEST_F(HostMemory, MemAvailableWithoutCgroups) {
  write("proc/meminfo", "MemTotal:  33554432 kB\nMemFree: 100 kB\nMemAvailable:   16777216 kB\n");
  EXPECT_EQ(available(), 16 * kGiB);
  EXPECT_EQ(available(4), 4 * kGiB);
}

TEST_F(HostMemory, CgroupV2LimitOfTheJobAndItsParent) {
  write("proc/meminfo", "MemAvailable:   16777216 kB\n");  // 16 GiB on the node
  write("proc/self/cgroup", "0::/slurm/job_7/step_0\n");
  write("sys/fs/cgroup/slurm/job_7/step_0/memory.max", "max\n");
  write("sys/fs/cgroup/slurm/job_7/memory.max", std::to_string(3 * kGiB) + "\n");
  write("sys/fs/cgroup/slurm/job_7/memory.current", std::to_string(kGiB) + "\n");
  EXPECT_EQ(available(), 2 * kGiB);  // the job's --mem, less what it uses
  write("sys/fs/cgroup/slurm/memory.max", std::to_string(kGiB + kGiB / 2) + "\n");
  write("sys/fs/cgroup/slurm/memory.current", std::to_string(kGiB) + "\n");
  EXPECT_EQ(available(), kGiB / 2);  // the tighter parent
  EXPECT_EQ(available(2), kGiB / 4);
}

TEST_F(HostMemory, CgroupV1LimitAndUnlimited) {
  write("proc/meminfo", "MemAvailable:   16777216 kB\n");
  write("proc/self/cgroup", "9:pids:/\n4:memory:/docker/abc\n1:cpu,cpuacct:/\n");
  write("sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes", "9223372036854771712\n");
  write("sys/fs/cgroup/memory/docker/abc/memory.usage_in_bytes", "4841574400\n");
  EXPECT_EQ(available(), 16 * kGiB);  // "unlimited": the node's figure
  write("sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes", std::to_string(4 * kGiB) + "\n");
  write("sys/fs/cgroup/memory/docker/abc/memory.usage_in_bytes", std::to_string(kGiB) + "\n");
  EXPECT_EQ(available(), 3 * kGiB);
}

TEST_F(HostMemory, ContainerSeesItsCgroupAsTheRoot) {
  // /proc/self/cgroup names a path the container's mount does not show: the
  // mount's own files are the process's cgroup.
  write("proc/meminfo", "MemAvailable:   16777216 kB\n");
  write("proc/self/cgroup", "0::/kubepods/pod1/ctr\n");
  write("sys/fs/cgroup/memory.max", std::to_string(2 * kGiB) + "\n");
  write("sys/fs/cgroup/memory.current", "0\n");
  EXPECT_EQ(available(), 2 * kGiB);
}

TEST_F(HostMemory, NoMeminfoAssumesFourGiB) {
  EXPECT_EQ(available(), 4 * kGiB);
}
