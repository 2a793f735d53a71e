// The production backends (cpu-xnnpack, npu-int8, opencl) running a small network in pipeline
// mode through the real co_up binary. Small enough for every suite; its purpose is the
// ThreadSanitizer build, where these are the only tests that put the shipped backends' threads
// (executor threads, pthreadpool workers, PoCL's) under TSan together. A data race makes the
// instrumented co_up exit non-zero with TSan's report on stderr (TSAN_OPTIONS=halt_on_error=1 in
// scripts/test.sh), which fails the test below with that report.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include "tests/cli/scratch_dir.h"
#include "tests/plugins/run_command.h"

namespace co_up::test {
namespace {

using ::testing::HasSubstr;

std::string co_up_run(const std::vector<std::string>& args) {
  std::vector<std::string> words{CO_UP_BINARY};
  words.insert(words.end(), args.begin(), args.end());
  return join_quoted(words);
}

std::string slurp(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The --profile=1 table's row for one sub-graph: "<index>  <letter>  <backend>  <first>-<last>".
void expect_row(const CommandResult& r, int index, char letter, const std::string& backend,
                const std::string& layers) {
  const std::regex row("\\n  " + std::to_string(index) + " +" + std::string(1, letter) + " +" +
                       backend + " +" + layers + " ");
  EXPECT_TRUE(std::regex_search(r.out, row))
      << "no sub-graph row " << index << " " << letter << " " << backend << " " << layers << "\n"
      << r;
}

// B|L: two pinned executor threads on cpu-xnnpack, frames overlapping. The last frame's output
// must be bit-identical to all-B (cpu-xnnpack computes the same per layer whatever the split).
TEST(ProductionPipeline, XnnpackBigLittleMatchesBigAlone) {
  ScratchDir dir;
  const std::vector<std::string> common{"--graph=squeezenet", "--image-size=64", "--n=8",
                                        "--profile=1"};
  auto args = common;
  args.insert(args.end(), {"--order=BBBBBLLLLL", "--mode=pipeline",
                           "--output=" + (dir / "bl.npy").string()});
  const CommandResult split = run_command(co_up_run(args), dir.path());
  ASSERT_EQ(split.exit_code, 0) << split;
  EXPECT_THAT(split.out, HasSubstr("order BBBBBLLLLL, mode pipeline, platform host: 8/8 frames"));
  expect_row(split, 0, 'B', "cpu-xnnpack", "0-4");
  expect_row(split, 1, 'L', "cpu-xnnpack", "5-9");

  args = common;
  args.insert(args.end(), {"--order=BBBBBBBBBB", "--mode=switch",
                           "--output=" + (dir / "b.npy").string()});
  const CommandResult alone = run_command(co_up_run(args), dir.path());
  ASSERT_EQ(alone.exit_code, 0) << alone;
  const std::string a = slurp(dir / "bl.npy");
  ASSERT_GT(a.size(), 1000u * sizeof(float));  // 1000 class scores and the .npy header
  EXPECT_TRUE(a == slurp(dir / "b.npy")) << "B|L pipeline output differs from all-B";
}

// One 2-core cluster whose pool has 2 threads (so pthreadpool workers run our kernels), hosting
// the GPU thread (opencl, PoCL in CI) and the NPU thread (npu-int8, int8 after 2 calibration
// frames, on its own pool): four sub-graphs on three executor threads, frames overlapping.
TEST(ProductionPipeline, XnnpackPoolWithGpuAndNpu) {
  ScratchDir dir;
#if defined(CO_UP_HAVE_OPENCL_PLUGIN)
  const std::string gpu_row = R"(    {"letter": "G", "name": "OpenCL device", "kind": "gpu", "backend": "opencl", "host": "B"},
)";
  const std::string order = "BBGGGNNNNB";
#else
  const std::string gpu_row;
  const std::string order = "BBBBBNNNNB";
#endif
  const auto platform = dir.write("pools.json", R"({
  "name": "pools",
  "description": "one 2-core CPU cluster with 2 pool threads, hosting the GPU and NPU threads",
  "processors": [
    {"letter": "B", "name": "CPU cores 0-1", "kind": "cpu", "backend": "cpu-xnnpack", "cores": [0, 1], "threads": 2},
)" + gpu_row + R"(    {"letter": "N", "name": "int8 accelerator", "kind": "npu", "backend": "npu-int8", "host": "B"}
  ]
})");
  const CommandResult r = run_command(
      co_up_run({"--platform=" + platform.string(), "--graph=squeezenet", "--image-size=64",
                 "--order=" + order, "--mode=pipeline", "--n=6", "--calibration=2", "--profile=1"}),
      dir.path());
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr("order " + order + ", mode pipeline, platform pools: 6/6 frames"));
  expect_row(r, 0, 'B', "cpu-xnnpack", "0-1");
#if defined(CO_UP_HAVE_OPENCL_PLUGIN)
  expect_row(r, 1, 'G', "opencl", "2-4");
  expect_row(r, 2, 'N', "npu-int8", "5-8");
  expect_row(r, 3, 'B', "cpu-xnnpack", "9-9");
#else
  expect_row(r, 1, 'N', "npu-int8", "5-8");
  expect_row(r, 2, 'B', "cpu-xnnpack", "9-9");
#endif
  // Four frames ran in int8 after calibration and were compared with f32.
  EXPECT_THAT(r.out, HasSubstr("frames compared   4 (frames 2-5, after 2 calibration frame(s))"));
}

}  // namespace
}  // namespace co_up::test
