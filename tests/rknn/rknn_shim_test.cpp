// The rknn shim (backends/rknn) against the fake librknnrt.so (tests/rknn/fake_rknnrt.cpp), which
// implements the RKNN C API over an exported ONNX partition computed with the cpu-reference
// kernels and logs every call. Checked exactly:
//  - the call sequence: init, query IN_OUT_NUM, INPUT_ATTR x n, OUTPUT_ATTR x m; per frame
//    inputs_set, run, outputs_get, outputs_release; destroy when the sub-graph is released;
//  - the terminal conversions: the input bytes the shim hands over (f32/f16/int8/uint8, NCHW or
//    NHWC, the model's zero point and scale) against the test's own conversion, and outputs
//    delivered NHWC or NCHW back in co_up's NCHW;
//  - a zoo network with an N partition gives the all-CPU output;
//  - naming end to end: `co_up --export-partitions` writes <graph>_<s>_<e>.onnx, the "converter"
//    (a copy) makes the .rknn the plugin then finds by the same name;
//  - errors: no runtime library (the plugin declines, saying why, in --list-plugins), a missing
//    or mismatched .rknn file (named, with how to make it).
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cli/export_partitions.h"
#include "core/error.h"
#include "core/executor.h"
#include "core/network.h"
#include "core/partition.h"
#include "core/plugin.h"
#include "core/plugin_registry.h"
#include "core/subgraph_desc.h"
#include "graph/builder.h"
#include "graph/npy.h"
#include "rknn_marshal.h"
#include "tests/cli/scratch_dir.h"
#include "tests/core/test_support.h"
#include "tests/rknn/graph_runner.h"

extern char** environ;

namespace co_up {
namespace {

using ::testing::HasSubstr;
using test::ScratchDir;

const std::filesystem::path kFakeLibrary = CO_UP_FAKE_RKNNRT;

// ctest sets $CO_UP_PLUGIN_PATH; run by hand, the build tree's plugins.
std::filesystem::path plugin_dir() {
  const char* dir = std::getenv("CO_UP_PLUGIN_PATH");
  return dir != nullptr ? dir : CO_UP_PLUGIN_DIR;
}

// One logged RKNN call: the function and its key=value fields.
struct Call {
  std::string function;
  std::map<std::string, std::string> fields;
  std::string at(const std::string& key) const {
    auto it = fields.find(key);
    return it == fields.end() ? "<missing " + key + ">" : it->second;
  }
};

std::vector<Call> read_log(const std::filesystem::path& path) {
  std::vector<Call> calls;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    Call call;
    words >> call.function;
    for (std::string word; words >> word;) {
      const auto eq = word.find('=');
      if (eq != std::string::npos) call.fields[word.substr(0, eq)] = word.substr(eq + 1);
    }
    calls.push_back(std::move(call));
  }
  return calls;
}

std::string functions(const std::vector<Call>& calls) {
  std::string text;
  for (const Call& c : calls) {
    text += c.function.substr(5);  // without "rknn_"
    if (c.function == "rknn_query") {
      text += '(';
      text += c.at("cmd");
      text += ')';
    }
    text += ' ';
  }
  return text;
}

std::string hex_fnv1a(const void* data, size_t size) {
  uint64_t hash = 1469598103934665603ull;
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) hash = (hash ^ bytes[i]) * 1099511628211ull;
  std::ostringstream s;
  s << std::hex << hash;
  return s.str();
}

void copy_to_rknn(const std::vector<cli::ExportedPartition>& exported) {
  for (const cli::ExportedPartition& e : exported) {
    std::filesystem::path rknn = e.path;
    rknn.replace_extension(".rknn");
    std::filesystem::copy_file(e.path, rknn, std::filesystem::copy_options::overwrite_existing);
  }
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, double relative,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  const auto [lo, hi] = std::minmax_element(want.begin(), want.end());
  const double range = std::max(static_cast<double>(*hi - *lo), 1e-6);
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - want[i]));
  EXPECT_LE(worst, relative * range) << what << ": max |diff| " << worst << ", range " << range;
}

// Every test runs with the fake as the runtime and its own call log; the environment is set
// before any plugin loads (the factory opens the library).
class RknnShim : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("CO_UP_RKNN_LIBRARY", kFakeLibrary.c_str(), 1);
    setenv("FAKE_RKNNRT_LOG", log_.c_str(), 1);
    unsetenv("FAKE_RKNNRT_INPUT");
    unsetenv("FAKE_RKNNRT_OUTPUT");
  }

  const PluginRegistry& plugins() {
    if (!registry_) {
      // Only the two plugins these tests use: the others (opencl: ICD loader, CLBlast) add
      // nothing here, and under TSan dlopen'ing CLBlast at this point fails to map its shadow.
      const std::filesystem::path dir = dir_.path() / "plugins";
      std::filesystem::create_directories(dir);
      for (const char* name : {"libco_up_rknn.so", "libco_up_cpu_reference.so"}) {
        std::filesystem::copy_file(plugin_dir() / name, dir / name,
                                   std::filesystem::copy_options::overwrite_existing);
      }
      registry_ = std::make_unique<PluginRegistry>(PluginRegistry::load_directory(dir));
    }
    return *registry_;
  }

  // This host's platform with B and L on cpu-reference (deterministic, like the fake's kernels)
  // and N on the rknn shim reading models from the scratch directory.
  Platform platform() const {
    Platform p = testing::host_platform();
    for (ProcessorSpec& spec : p.processors) {
      if (spec.is_cpu()) spec.backends = {"cpu-reference"};
      if (spec.letter == 'N') {
        spec.backends = {"rknn"};
        spec.options = {{"model_dir", dir_.path().string()}};
      }
    }
    return p;
  }

  std::vector<float> run(const graph::Graph& g, const std::string& order, uint64_t frames,
                         ExecutionMode mode = ExecutionMode::kPipeline) {
    ExecutorOptions options;
    options.mode = mode;
    Executor executor(g, Partition::create(g, order), platform(), plugins(), options);
    RunRequest request;
    request.frames = frames;
    request.input_sets = {seeded_inputs(g, 7)};
    RunResult result = executor.run(request);
    EXPECT_EQ(result.profile.frames_completed, frames);
    return result.last_outputs.at(0);
  }

  // Exports the accelerator partitions of `order` and "converts" them (a copy to .rknn).
  void export_and_convert(const graph::Graph& g, const std::string& order) {
    copy_to_rknn(cli::export_partitions(g, Partition::create(g, order), platform(), dir_.path()));
  }

  ScratchDir dir_;
  std::filesystem::path log_ = dir_ / "rknn_calls.log";
  std::unique_ptr<PluginRegistry> registry_;
};

graph::Graph small_zoo(const std::string& name) { return build_network({name, "layers", 64, 1, ""}); }

TEST_F(RknnShim, LoadsAsAnAcceleratorWithTheFakeRuntime) {
  auto plugin = plugins().find("rknn");
  ASSERT_NE(plugin, nullptr) << plugins().summary();
  EXPECT_EQ(plugin->api().kind, CO_UP_BACKEND_ACCELERATOR);
}

TEST_F(RknnShim, SqueezenetWithAnNpuPartitionMatchesTheCpuAndCallsInOrder) {
  const graph::Graph g = small_zoo("squeezenet");
  const std::string order = "BBBNNNNBBB";
  export_and_convert(g, order);
  ASSERT_TRUE(std::filesystem::exists(dir_ / "squeezenet_3_6.rknn"));
  const std::vector<float> cpu = run(g, std::string(order.size(), 'B'), 1);
  std::filesystem::remove(log_);
  const std::vector<float> npu = run(g, order, 3);
  expect_close(npu, cpu, 1e-5, "squeezenet " + order);

  const std::vector<Call> calls = read_log(log_);
  EXPECT_EQ(functions(calls),
            "init query(IN_OUT_NUM) query(INPUT_ATTR) query(OUTPUT_ATTR) "
            "inputs_set run outputs_get outputs_release inputs_set run outputs_get outputs_release "
            "inputs_set run outputs_get outputs_release destroy ");
  ASSERT_GE(calls.size(), 5u);
  // The attributes the fake declared (f32 NCHW) for fire4's input, the partition boundary.
  const graph::Tensor& boundary = g.tensor(Partition::create(g, order).subgraphs()[1].inputs.at(0));
  const Call& input_attr = calls[2];
  EXPECT_EQ(input_attr.at("name"), boundary.name);
  EXPECT_EQ(input_attr.at("fmt"), "NCHW");
  EXPECT_EQ(input_attr.at("type"), "FLOAT32");
  std::string dims;
  for (int64_t d : boundary.desc.shape) {
    if (!dims.empty()) dims += ',';
    dims += std::to_string(d);
  }
  EXPECT_EQ(input_attr.at("dims"), dims);
  // The shim passes f32 NCHW through without a copy and lets the runtime write the output in place.
  EXPECT_EQ(calls[4].at("in0.type"), "FLOAT32");
  EXPECT_EQ(calls[4].at("in0.fmt"), "NCHW");
  EXPECT_EQ(calls[4].at("in0.size"), std::to_string(boundary.desc.byte_size()));
  EXPECT_EQ(calls[4].at("in0.pass_through"), "0");
  EXPECT_EQ(calls[6].at("out0.want_float"), "1");
  EXPECT_EQ(calls[6].at("out0.is_prealloc"), "1");
}

// A one-layer network whose only layer runs on N: the graph input is the partition's input.
graph::Graph relu_network() {
  graph::SeededWeights weights(3);
  graph::GraphBuilder b("tiny", weights);
  graph::TensorId x = b.input("data", {1, 3, 5, 4});  // C, H, W all different: transposes show
  b.begin_layer("act");
  x = b.relu(x, "act");
  b.output(x);
  return b.finish();
}

struct Marshalling {
  const char* input;   // FAKE_RKNNRT_INPUT
  const char* output;  // FAKE_RKNNRT_OUTPUT
  rknn::rknn_tensor_type type;
  bool nhwc_in;
  float scale;
  int32_t zero_point;
};

class RknnMarshalling : public RknnShim, public ::testing::WithParamInterface<Marshalling> {};

// Through the ABI directly (map, write, run, map): input bytes as the model declares them,
// output back in NCHW.
TEST_P(RknnMarshalling, InputBytesAndOutputsAreConvertedExactly) {
  const Marshalling m = GetParam();
  setenv("FAKE_RKNNRT_INPUT", m.input, 1);
  setenv("FAKE_RKNNRT_OUTPUT", m.output, 1);
  const graph::Graph g = relu_network();
  const Partition partition = Partition::create(g, "N");
  copy_to_rknn(cli::export_partitions(g, partition, platform(), dir_.path()));

  auto plugin = plugins().find("rknn");
  ASSERT_NE(plugin, nullptr) << plugins().summary();
  auto device = Device::create(plugin, {{"processor", "N"}, {"model_dir", dir_.path().string()}}, "test");
  const SubGraphDesc desc(g, partition.subgraphs()[0]);
  std::vector<float> input(60);
  for (size_t i = 0; i < input.size(); ++i) input[i] = 0.37f * (static_cast<float>(i) - 29.5f) + 0.01f;
  std::vector<float> output(60);
  {
    CompiledSubGraph compiled(device, desc.get(), "tiny_0_0");
    auto* in = static_cast<float*>(compiled.map(CO_UP_IO_INPUT, 0));
    std::copy(input.begin(), input.end(), in);
    compiled.unmap(CO_UP_IO_INPUT, 0);
    compiled.run(nullptr);
    const auto* out = static_cast<const float*>(compiled.map(CO_UP_IO_OUTPUT, 0));
    std::copy(out, out + output.size(), output.begin());
    compiled.unmap(CO_UP_IO_OUTPUT, 0);
  }

  // The expected bytes, converted here independently of the shim; and what the fake computes
  // from them: relu of the value each byte stands for.
  std::vector<unsigned char> bytes;
  std::vector<float> expected(60);
  auto position = [&](int c, int h, int w) { return m.nhwc_in ? (h * 4 + w) * 3 + c : (c * 5 + h) * 4 + w; };
  const size_t width = rknn::element_size(m.type);
  bytes.resize(60 * width);
  for (int c = 0; c < 3; ++c) {
    for (int h = 0; h < 5; ++h) {
      for (int w = 0; w < 4; ++w) {
        const int nchw = (c * 5 + h) * 4 + w;
        const float x = input[static_cast<size_t>(nchw)];
        float represented = x;
        unsigned char* at = bytes.data() + static_cast<size_t>(position(c, h, w)) * width;
        if (m.type == rknn::RKNN_TENSOR_FLOAT32) {
          std::memcpy(at, &x, 4);
        } else if (m.type == rknn::RKNN_TENSOR_FLOAT16) {
          const uint16_t half = rknn::float_to_half(x);
          std::memcpy(at, &half, 2);
          represented = x;  // exact enough: checked by tolerance below
        } else {
          const float lo = m.type == rknn::RKNN_TENSOR_INT8 ? -128.0f : 0.0f;
          const float hi = m.type == rknn::RKNN_TENSOR_INT8 ? 127.0f : 255.0f;
          const float q = std::clamp(std::nearbyint(x / m.scale) + static_cast<float>(m.zero_point), lo, hi);
          if (m.type == rknn::RKNN_TENSOR_INT8) {
            *reinterpret_cast<int8_t*>(at) = static_cast<int8_t>(q);
          } else {
            *at = static_cast<unsigned char>(q);
          }
          represented = (q - static_cast<float>(m.zero_point)) * m.scale;
        }
        expected[static_cast<size_t>(nchw)] = std::max(represented, 0.0f);
      }
    }
  }
  const std::vector<Call> calls = read_log(log_);
  ASSERT_EQ(functions(calls),
            "init query(IN_OUT_NUM) query(INPUT_ATTR) query(OUTPUT_ATTR) inputs_set run "
            "outputs_get outputs_release destroy ");
  const Call& set = calls[4];
  EXPECT_EQ(set.at("in0.size"), std::to_string(bytes.size()));
  EXPECT_EQ(set.at("in0.fmt"), m.nhwc_in ? "NHWC" : "NCHW");
  EXPECT_EQ(set.at("in0.fnv"), hex_fnv1a(bytes.data(), bytes.size())) << "input bytes differ";
  EXPECT_EQ(calls[2].at("dims"), m.nhwc_in ? "1,5,4,3" : "1,3,5,4");
  // NHWC outputs come from the runtime's own buffer; NCHW ones are written in place.
  EXPECT_EQ(calls[6].at("out0.is_prealloc"), std::string(m.output) == "nhwc" ? "0" : "1");
  if (m.type == rknn::RKNN_TENSOR_FLOAT16) {
    expect_close(output, expected, 1e-3, "f16");
  } else {
    EXPECT_EQ(output, expected);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Formats, RknnMarshalling,
    ::testing::Values(Marshalling{"f32,nchw", "nchw", rknn::RKNN_TENSOR_FLOAT32, false, 1, 0},
                      Marshalling{"f32,nhwc", "nhwc", rknn::RKNN_TENSOR_FLOAT32, true, 1, 0},
                      Marshalling{"f16,nhwc", "nchw", rknn::RKNN_TENSOR_FLOAT16, true, 1, 0},
                      Marshalling{"int8,nhwc,0.0625,-3", "nhwc", rknn::RKNN_TENSOR_INT8, true, 0.0625f, -3},
                      Marshalling{"uint8,nhwc,0.05,128", "nchw", rknn::RKNN_TENSOR_UINT8, true, 0.05f, 128},
                      Marshalling{"int8,nchw,0.01,5", "nchw", rknn::RKNN_TENSOR_INT8, false, 0.01f, 5}),
    [](const ::testing::TestParamInfo<Marshalling>& info) {
      std::string name = std::string(info.param.input) + "_out_" + info.param.output;
      for (char& c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return name;
    });

TEST_F(RknnShim, QuantisedNhwcPartitionRunsThroughTheExecutor) {
  const graph::Graph g = small_zoo("squeezenet");
  const std::string order = "BBBNNNNBBB";
  // uint8 input covering the boundary tensor's range, as a converter calibrates it (the tensor
  // is post-ReLU, so zero point 0), and the 4-D output delivered NHWC.
  const Partition partition = Partition::create(g, order);
  test::ReferenceGraphRunner runner(g);
  std::copy_n(seeded_inputs(g, 7).at(0).begin(), runner.values(g.inputs()[0]).size(),
              runner.values(g.inputs()[0]).begin());
  runner.run();
  const std::span<float> boundary = runner.values(partition.subgraphs()[1].inputs.at(0));
  const float scale = *std::max_element(boundary.begin(), boundary.end()) / 255.0f;
  const std::string input_spec = "uint8,nhwc," + std::to_string(scale) + ",0";
  setenv("FAKE_RKNNRT_INPUT", input_spec.c_str(), 1);
  setenv("FAKE_RKNNRT_OUTPUT", "nhwc", 1);
  export_and_convert(g, order);
  const std::vector<float> cpu = run(g, std::string(order.size(), 'B'), 1, ExecutionMode::kSwitch);
  const std::vector<float> npu = run(g, order, 2, ExecutionMode::kSwitch);
  // Input quantisation is the only difference: close, not equal.
  expect_close(npu, cpu, 0.02, "squeezenet " + order + ", uint8 NHWC input");
  EXPECT_NE(npu, cpu);
  const std::vector<Call> calls = read_log(log_);
  ASSERT_GE(calls.size(), 7u);
  EXPECT_EQ(calls[2].at("type"), "UINT8");
  EXPECT_EQ(calls[2].at("qnt"), "AFFINE");
  EXPECT_EQ(calls[3].at("fmt"), "NHWC");
  EXPECT_EQ(calls[4].at("in0.type"), "UINT8");
  EXPECT_EQ(calls[4].at("in0.fmt"), "NHWC");
  EXPECT_EQ(calls[6].at("out0.is_prealloc"), "0");
}

TEST_F(RknnShim, MissingModelFileIsNamedWithHowToMakeIt) {
  const graph::Graph g = small_zoo("squeezenet");
  try {
    run(g, "BBBNNNNBBB", 1);
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    const std::string message = e.what();
    EXPECT_THAT(message, HasSubstr((dir_ / "squeezenet_3_6.rknn").string()));
    EXPECT_THAT(message, HasSubstr("not found"));
    EXPECT_THAT(message, HasSubstr("--export-partitions"));
    EXPECT_THAT(message, HasSubstr("rknn-toolkit2"));
    EXPECT_THAT(message, HasSubstr("model_dir"));
  }
}

TEST_F(RknnShim, ModelOfAnotherPartitionIsRefused) {
  const graph::Graph g = small_zoo("squeezenet");
  export_and_convert(g, "BBBBBBBNNN");  // squeezenet_7_9
  std::filesystem::copy_file(dir_ / "squeezenet_7_9.rknn", dir_ / "squeezenet_3_6.rknn");
  try {
    run(g, "BBBNNNNBBB", 1);
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_THAT(e.what(), HasSubstr("squeezenet_3_6.rknn"));
    EXPECT_THAT(e.what(), HasSubstr("does not fit partition input"));
    EXPECT_THAT(e.what(), HasSubstr("re-export and re-convert"));
  }
}

TEST_F(RknnShim, DeclinesWithoutTheRuntimeLibrarySayingWhy) {
  setenv("CO_UP_RKNN_LIBRARY", (dir_ / "missing" / "librknnrt.so").c_str(), 1);
  const PluginRecord* rknn = nullptr;
  for (const PluginRecord& r : plugins().records()) {
    if (r.backend == "rknn") rknn = &r;
  }
  ASSERT_NE(rknn, nullptr) << plugins().summary();
  EXPECT_EQ(rknn->outcome, PluginRecord::Outcome::kDeclined);
  EXPECT_THAT(rknn->reason, HasSubstr("cannot load the NPU runtime"));
  EXPECT_THAT(rknn->reason, HasSubstr("No such file or directory"));  // dlerror's text
  EXPECT_THAT(rknn->reason, HasSubstr("install Rockchip's RKNPU2 runtime"));
  EXPECT_EQ(plugins().find("rknn"), nullptr);
  EXPECT_NE(plugins().find("cpu-reference"), nullptr);  // the others load regardless
}

// ---------------------------------------------------------------------------------------------
// The command line: export, "convert", run; and the export's errors.

struct Exit {
  int code = -1;
  std::string out, err;
};

Exit run_co_up(const std::vector<std::string>& args, const std::vector<std::string>& env_overrides,
               const std::filesystem::path& scratch) {
  static int counter = 0;
  const std::filesystem::path out = scratch / ("cli" + std::to_string(counter) + ".out");
  const std::filesystem::path err = scratch / ("cli" + std::to_string(counter++) + ".err");
  std::vector<std::string> argv_strings = {CO_UP_BINARY};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<std::string> env_strings = env_overrides;
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);  // first wins
  std::vector<char*> argv, envp;
  for (std::string& s : argv_strings) argv.push_back(s.data());
  for (std::string& s : env_strings) envp.push_back(s.data());
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  Exit result;
  if (posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), envp.data()) == 0) {
    int status = 0;
    waitpid(pid, &status, 0);
    result.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  posix_spawn_file_actions_destroy(&actions);
  result.out = test::read_file(out);
  result.err = test::read_file(err);
  return result;
}

std::ostream& operator<<(std::ostream& os, const Exit& e) {
  return os << "exit " << e.code << "\n--- stdout ---\n" << e.out << "--- stderr ---\n" << e.err;
}

class RknnCli : public ::testing::Test {
 protected:
  Exit co_up(const std::vector<std::string>& args) {
    return run_co_up(args, {"CO_UP_RKNN_LIBRARY=" + kFakeLibrary.string(), "FAKE_RKNNRT_LOG="}, dir_.path());
  }
  ScratchDir dir_;
};

TEST_F(RknnCli, ExportConvertRunGivesTheCpuOutput) {
  const std::filesystem::path models = dir_ / "npu_models";
  const Exit exported = co_up({"--graph=squeezenet", "--image-size=64", "--order=BBBNNNNBBB",
                               "--export-partitions=" + models.string()});
  ASSERT_EQ(exported.code, 0) << exported;
  EXPECT_EQ(std::count(exported.out.begin(), exported.out.end(), '\n'), 1) << exported;
  EXPECT_THAT(exported.out, HasSubstr((models / "squeezenet_3_6.onnx").string()));
  EXPECT_THAT(exported.out, HasSubstr("layers 3-6"));
  std::filesystem::copy_file(models / "squeezenet_3_6.onnx", models / "squeezenet_3_6.rknn");

  const std::filesystem::path platform = dir_ / "board.json";
  std::ofstream(platform) << R"({"name": "fake-rk", "processors": [
      {"letter": "B", "name": "CPU", "kind": "cpu", "backend": "cpu-reference", "cores": [0], "threads": 1},
      {"letter": "N", "name": "fake RKNPU2", "kind": "npu", "backend": "rknn", "host": "B",
       "options": {"model_dir": ")" << models.string() << R"("}}]})";
  const std::vector<std::string> common = {"--graph=squeezenet", "--image-size=64", "--n=2",
                                           "--platform=" + platform.string(),
                                           "--plugins=" + plugin_dir().string()};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), common.begin(), common.end());
    return extra;
  };
  const Exit npu = co_up(with({"--order=BBBNNNNBBB", "--output=" + (dir_ / "npu.npy").string()}));
  ASSERT_EQ(npu.code, 0) << npu;
  const Exit cpu = co_up(with({"--order=BBBBBBBBBB", "--output=" + (dir_ / "cpu.npy").string()}));
  ASSERT_EQ(cpu.code, 0) << cpu;
  expect_close(graph::read_npy(dir_ / "npu.npy").data, graph::read_npy(dir_ / "cpu.npy").data, 1e-5,
               "co_up --order=BBBNNNNBBB");
}

TEST_F(RknnCli, ListPluginsShowsTheDeclineAndItsReason) {
  const Exit e = run_co_up({"--list-plugins", "--plugins=" + plugin_dir().string()},
                           {"CO_UP_RKNN_LIBRARY=/nonexistent/librknnrt.so"}, dir_.path());
  ASSERT_EQ(e.code, 0) << e;
  EXPECT_THAT(e.out, HasSubstr("declined"));
  EXPECT_THAT(e.out, HasSubstr("libco_up_rknn.so"));
  EXPECT_THAT(e.out, HasSubstr("/nonexistent/librknnrt.so: cannot open shared object file"));
  EXPECT_THAT(e.out, HasSubstr("install Rockchip's RKNPU2 runtime"));
}

TEST_F(RknnCli, ExportErrorsAreOneLineWithExitStatus2) {
  // DIR below a regular file cannot be created.
  test::ScratchDir& d = dir_;
  d.write("file", "x");
  const Exit unwritable = co_up({"--graph=squeezenet", "--image-size=64", "--order=BBBNNNNBBB",
                                 "--export-partitions=" + (d / "file" / "models").string()});
  EXPECT_EQ(unwritable.code, 2) << unwritable;
  EXPECT_EQ(std::count(unwritable.err.begin(), unwritable.err.end(), '\n'), 1) << unwritable;
  EXPECT_THAT(unwritable.err, HasSubstr("cannot create the directory"));
  EXPECT_TRUE(unwritable.out.empty()) << unwritable;

  const Exit no_npu = co_up({"--graph=squeezenet", "--image-size=64", "--order=BBBBBLLLLL",
                             "--export-partitions=" + (d / "models").string()});
  EXPECT_EQ(no_npu.code, 2) << no_npu;
  EXPECT_EQ(std::count(no_npu.err.begin(), no_npu.err.end(), '\n'), 1) << no_npu;
  EXPECT_THAT(no_npu.err, HasSubstr("maps no layer to an accelerator"));
}

}  // namespace
}  // namespace co_up
