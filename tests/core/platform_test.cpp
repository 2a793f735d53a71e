// Platform descriptions: shipped JSON files, validation, host detection from a simulated sysfs.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/platform.h"

namespace co_up {
namespace {

namespace fs = std::filesystem;

fs::path source_dir() { return CO_UP_SOURCE_DIR; }

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text << "\n";
}

std::string error_of(const std::string& json) {
  try {
    parse_platform(json, "test.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(PlatformTest, ShippedPlatformsLoad) {
  for (const char* name : {"rk3399pro", "a311d", "host-2core"}) {
    const Platform p = load_platform(source_dir() / "platforms" / (std::string(name) + ".json"));
    EXPECT_EQ(p.name, name);
    for (char letter : std::string("BLGN")) ASSERT_NE(p.find(letter), nullptr) << name << letter;
    EXPECT_TRUE(p.find('B')->is_cpu());
    EXPECT_FALSE(p.find('G')->is_cpu());
    EXPECT_EQ(&p.host_cores('G'), &p.host_cores(p.find('G')->host));
  }
  const Platform rk = load_platform(source_dir() / "platforms/rk3399pro.json");
  EXPECT_EQ(rk.find('B')->cores, (std::vector<int>{4, 5}));
  EXPECT_EQ(rk.find('L')->cores, (std::vector<int>{0, 1, 2, 3}));
}

TEST(PlatformTest, MalformedDescriptionsSayWhatIsWrong) {
  EXPECT_NE(error_of("{ not json").find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of("{}").find("processors"), std::string::npos);
  EXPECT_NE(error_of(R"({"processors":[{"letter":"B","backend":"x"}]})").find("cores"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"processors":[{"letter":"B","backend":"x","cores":[0]},
                                       {"letter":"L","backend":"x","cores":[0,1]}]})")
                .find("core 0 belongs to both"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"processors":[{"letter":"B","backend":"x","cores":[0]},
                                       {"letter":"B","backend":"x","cores":[1]}]})")
                .find("defined twice"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"processors":[{"letter":"G","kind":"gpu","backend":"opencl","host":"B"}]})")
                .find("not a CPU cluster"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"processors":[{"letter":"b","backend":"x","cores":[0]}]})")
                .find("upper-case"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"processors":[{"letter":"B","backend":"x","cores":[0],"threads":2}]})")
                .find("threads 2 for 1 core(s)"),
            std::string::npos);
  EXPECT_THROW(load_platform("/nonexistent/platform.json"), InputError);
}

TEST(PlatformTest, DetectsBigLittleFromSimulatedSysfs) {
  // A simulated RK3399: policy0 = cores 0-3 at 1.4 GHz, policy4 = cores 4-5 at 1.8 GHz.
  const fs::path root = fs::temp_directory_path() / "co_up_sysfs_bl";
  fs::remove_all(root);
  write(root / "devices/system/cpu/cpufreq/policy0/related_cpus", "0 1 2 3");
  write(root / "devices/system/cpu/cpufreq/policy0/cpuinfo_max_freq", "1416000");
  write(root / "devices/system/cpu/cpufreq/policy4/related_cpus", "4-5");
  write(root / "devices/system/cpu/cpufreq/policy4/cpuinfo_max_freq", "1800000");
  const Platform p = detect_host_platform(root);
  fs::remove_all(root);
  ASSERT_NE(p.find('B'), nullptr);
  ASSERT_NE(p.find('L'), nullptr);
  EXPECT_EQ(p.find('B')->cores, (std::vector<int>{4, 5}));
  EXPECT_EQ(p.find('L')->cores, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(p.find('G')->host, 'B');
  EXPECT_EQ(p.find('N')->host, 'L');
}

TEST(PlatformTest, SymmetricHostIsSplitIntoHalves) {
  const fs::path root = fs::temp_directory_path() / "co_up_sysfs_sym";
  fs::remove_all(root);
  write(root / "devices/system/cpu/cpufreq/policy0/related_cpus", "0");
  write(root / "devices/system/cpu/cpufreq/policy0/cpuinfo_max_freq", "3000000");
  write(root / "devices/system/cpu/cpufreq/policy1/related_cpus", "1");
  write(root / "devices/system/cpu/cpufreq/policy1/cpuinfo_max_freq", "3000000");
  const Platform p = detect_host_platform(root);
  fs::remove_all(root);
  EXPECT_EQ(p.find('B')->cores, (std::vector<int>{0}));
  EXPECT_EQ(p.find('L')->cores, (std::vector<int>{1}));
}

TEST(PlatformTest, OverridesFollowTableTwo) {
  Platform p = parse_platform(R"({"name":"t","processors":[
      {"letter":"B","backend":"x","cores":[4,5]},
      {"letter":"L","backend":"x","cores":[0,1,2,3]},
      {"letter":"G","kind":"gpu","backend":"opencl","host":"B"}]})", "t");
  apply_overrides(p, {1, std::nullopt, 2, 3, 'L', std::nullopt});
  EXPECT_EQ(p.find('B')->threads, 1);
  EXPECT_EQ(p.find('L')->cores, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(p.find('L')->threads, 2);
  EXPECT_EQ(p.find('G')->host, 'L');
  Platform q = p;
  EXPECT_THROW(apply_overrides(q, {3, std::nullopt, std::nullopt, std::nullopt, std::nullopt,
                                   std::nullopt}),
               InputError);  // 3 threads on 2 big cores
  EXPECT_THROW(apply_overrides(q, {std::nullopt, 5, std::nullopt, std::nullopt, std::nullopt,
                                   std::nullopt}),
               InputError);
  EXPECT_THROW(apply_overrides(q, {std::nullopt, std::nullopt, std::nullopt, std::nullopt, 'G',
                                   std::nullopt}),
               InputError);
}

TEST(PlatformTest, CoresThatDoNotExistAreRejected) {
  const Platform p = parse_platform(
      R"({"name":"big","processors":[{"letter":"B","backend":"x","cores":[1000]}]})", "t");
  try {
    check_cores_exist(p);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("core 1000"), std::string::npos);
  }
}

}  // namespace
}  // namespace co_up
