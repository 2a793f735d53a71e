// The same network and mapping through the C++ API, the C API and the co_up command line gives
// bitwise identical outputs (cpu-reference is deterministic), in both modes; and errors cross
// every boundary with the command line's message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "co_up/co_up.h"
#include "co_up/co_up.hpp"
#include "tests/api/api_test_support.h"
#include "tests/api/c_api_run.h"
#include "tests/api/run_co_up.h"
#include "tests/plugins/run_command.h"

namespace co_up::test {
namespace {

using ::testing::HasSubstr;

// co_up's one-line error without its "co_up: error: " prefix.
std::string cli_error(const CommandResult& r) {
  const std::string prefix = "co_up: error: ";
  const auto lines = lines_of(r.err);
  if (lines.size() != 1 || lines[0].rfind(prefix, 0) != 0) return "(not one error line) " + r.err;
  return lines[0].substr(prefix.size());
}

CommandResult run_cli(const ApiWorld& world, const std::vector<std::string>& args) {
  std::vector<std::string> words = {"--image-size=" + std::to_string(kImageSize),
                                    "--platform=" + world.platform.string(),
                                    "--plugins=" + world.plugins.string()};
  words.insert(words.end(), args.begin(), args.end());
  return run_co_up(world.scratch.path(), words);
}

std::vector<Tensor> run_c_api(const ApiWorld& world, const std::string& order, const char* mode,
                              const Tensor& input) {
  co_up_options* options = nullptr;
  EXPECT_EQ(co_up_options_create(&options), nullptr);
  const std::pair<const char*, std::string> settings[] = {
      {"platform", world.platform.string()}, {"plugins", world.plugins.string()},
      {"image-size", std::to_string(kImageSize)}, {"order", order}, {"mode", mode}};
  for (const auto& [key, value] : settings) EXPECT_EQ(co_up_options_set(options, key, value.c_str()), nullptr);
  co_up_session* session = nullptr;
  co_up_error* error = co_up_session_open_zoo(kNetwork, options, &session);
  co_up_options_release(options);
  EXPECT_EQ(error, nullptr) << co_up_error_message(error);
  if (error != nullptr) {
    co_up_error_release(error);
    return {};
  }
  std::vector<Tensor> outputs = run_through_c_api(session, input);
  co_up_session_release(session);
  return outputs;
}

class ApiOutputsTest : public ::testing::TestWithParam<Mode> {};

TEST_P(ApiOutputsTest, CppApiCApiAndCliAgreeBitwise) {
  const ApiWorld world;
  const size_t layers = Session::open_zoo(kNetwork, world.options("")).order().size();
  const std::string order = three_stage_order(layers);
  const Mode mode = GetParam();
  const char* mode_text = mode == Mode::kPipeline ? "pipeline" : "switch";

  Session session = Session::open_zoo(kNetwork, world.options(order, mode));
  ASSERT_EQ(session.inputs().size(), 1u);
  EXPECT_EQ(session.order(), order);
  const Tensor input = random_input(session.inputs()[0].shape, 7);
  const std::vector<Tensor> cpp = session.run(input);
  ASSERT_EQ(cpp.size(), 1u);
  EXPECT_EQ(cpp[0].shape(), session.outputs()[0].shape);

  const std::vector<Tensor> c = run_c_api(world, order, mode_text, input);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_TRUE(bitwise_equal(cpp[0], c[0]));

  const auto in_file = world.scratch / "in.npy";
  const auto out_file = world.scratch / "out.npy";
  write_npy(in_file, input);
  const CommandResult r = run_cli(world, {"--order=" + order, std::string("--mode=") + mode_text,
                                          "--n=1", "--input=" + in_file.string(),
                                          "--output=" + out_file.string()});
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_TRUE(bitwise_equal(cpp[0], read_npy(out_file)));

  // The same session again: a second run gives the same bits (no state kept between frames).
  EXPECT_TRUE(bitwise_equal(session.run(input)[0], cpp[0]));
  // And a different input gives different outputs (the comparison can fail).
  EXPECT_FALSE(bitwise_equal(session.run(random_input(input.shape(), 8))[0], cpp[0]));
}

INSTANTIATE_TEST_SUITE_P(Modes, ApiOutputsTest, ::testing::Values(Mode::kPipeline, Mode::kSwitch),
                         [](const auto& info) { return info.param == Mode::kPipeline ? "pipeline" : "switch"; });

// The error of opening `what` through the C++ API, or "" when it opened.
std::pair<ErrorKind, std::string> open_error(const std::function<void()>& open) {
  try {
    open();
  } catch (const Error& e) {
    return {e.kind(), e.what()};
  }
  return {ErrorKind::kRuntime, ""};
}

std::pair<co_up_error_code, std::string> c_open_error(const ApiWorld& world, const char* model,
                                                      const char* zoo, const std::string& order) {
  co_up_options* options = nullptr;
  EXPECT_EQ(co_up_options_create(&options), nullptr);
  EXPECT_EQ(co_up_options_set(options, "platform", world.platform.c_str()), nullptr);
  EXPECT_EQ(co_up_options_set(options, "plugins", world.plugins.c_str()), nullptr);
  if (zoo != nullptr) {
    EXPECT_EQ(co_up_options_set(options, "image-size", std::to_string(kImageSize).c_str()), nullptr);
  }
  if (!order.empty()) {
    EXPECT_EQ(co_up_options_set(options, "order", order.c_str()), nullptr);
  }
  co_up_session* session = nullptr;
  co_up_error* error = model != nullptr ? co_up_session_open_model(model, options, &session)
                                        : co_up_session_open_zoo(zoo, options, &session);
  co_up_options_release(options);
  co_up_session_release(session);
  if (error == nullptr) return {CO_UP_ERROR_RUNTIME, ""};
  std::pair<co_up_error_code, std::string> out{co_up_error_code_of(error), co_up_error_message(error)};
  co_up_error_release(error);
  return out;
}

TEST(ApiErrors, BadOrderSameMessageEverywhere) {
  const ApiWorld world;
  const std::string order = "BBX";
  const auto [kind, message] =
      open_error([&] { Session::open_zoo(kNetwork, world.options(order)); });
  EXPECT_EQ(kind, ErrorKind::kInput);
  EXPECT_THAT(message, HasSubstr("'BBX'"));
  const auto [code, c_message] = c_open_error(world, nullptr, kNetwork, order);
  EXPECT_EQ(code, CO_UP_ERROR_INPUT);
  EXPECT_EQ(c_message, message);
  const CommandResult r = run_cli(world, {"--order=" + order, "--n=1"});
  EXPECT_EQ(r.exit_code, 2) << r;
  EXPECT_EQ(cli_error(r), message);
}

TEST(ApiErrors, MissingModelSameMessageEverywhere) {
  const ApiWorld world;
  const std::string model = (world.scratch / "absent.onnx").string();
  SessionOptions options;
  options.set_platform_file(world.platform.string()).set_plugins_dir(world.plugins.string());
  const auto [kind, message] = open_error([&] { Session::open_model(model, options); });
  EXPECT_EQ(kind, ErrorKind::kInput);
  EXPECT_THAT(message, HasSubstr("absent.onnx"));
  const auto [code, c_message] = c_open_error(world, model.c_str(), nullptr, "");
  EXPECT_EQ(code, CO_UP_ERROR_INPUT);
  EXPECT_EQ(c_message, message);
  const CommandResult r = run_command(
      join_quoted({CO_UP_BINARY, "--model=" + model, "--platform=" + world.platform.string(),
                   "--plugins=" + world.plugins.string(), "--n=1"}),
      world.scratch.path());
  EXPECT_EQ(r.exit_code, 2) << r;
  EXPECT_EQ(cli_error(r), message);
}

TEST(ApiErrors, UnknownNetworkAndOptionSameMessage) {
  const ApiWorld world;
  const auto [kind, message] = open_error([&] { Session::open_zoo("no_such_net", world.options("")); });
  EXPECT_EQ(kind, ErrorKind::kInput);
  const CommandResult r = run_command(
      join_quoted({CO_UP_BINARY, "--graph=no_such_net", "--n=1", "--platform=" + world.platform.string()}),
      world.scratch.path());
  EXPECT_EQ(r.exit_code, 2) << r;
  EXPECT_EQ(cli_error(r), message);

  const auto [option_kind, option_message] =
      open_error([&] { SessionOptions().set("image-size", "big"); });
  EXPECT_EQ(option_kind, ErrorKind::kInput);
  EXPECT_EQ(option_message, "--image-size='big' is not an integer");
  const auto [unknown_kind, unknown_message] = open_error([&] { SessionOptions().set("colour", "red"); });
  EXPECT_EQ(unknown_kind, ErrorKind::kInput);
  EXPECT_THAT(unknown_message, HasSubstr("unknown session option 'colour'"));
}

TEST(ApiErrors, WrongInputShapeThroughCppAndC) {
  const ApiWorld world;
  Session session = Session::open_zoo(kNetwork, world.options(""));
  const std::vector<int64_t> wrong = {1, 3, kImageSize, kImageSize + 1};
  const auto [kind, message] = open_error([&] { session.run(Tensor(wrong)); });
  EXPECT_EQ(kind, ErrorKind::kInput);
  EXPECT_EQ(message, "input '" + session.inputs()[0].name + "' needs shape " +
                         Tensor::shape_text(session.inputs()[0].shape) + " but got " +
                         Tensor::shape_text(wrong));
  const auto [submit_kind, submit_message] = open_error([&] { session.submit(Tensor(wrong)); });
  EXPECT_EQ(submit_kind, ErrorKind::kInput);
  EXPECT_EQ(submit_message, message);
  EXPECT_EQ(session.in_flight(), 0u);

  co_up_options* options = nullptr;
  ASSERT_EQ(co_up_options_create(&options), nullptr);
  ASSERT_EQ(co_up_options_set(options, "platform", world.platform.c_str()), nullptr);
  ASSERT_EQ(co_up_options_set(options, "plugins", world.plugins.c_str()), nullptr);
  ASSERT_EQ(co_up_options_set(options, "image-size", std::to_string(kImageSize).c_str()), nullptr);
  co_up_session* c_session = nullptr;
  ASSERT_EQ(co_up_session_open_zoo(kNetwork, options, &c_session), nullptr);
  co_up_options_release(options);
  std::vector<float> values(static_cast<size_t>(3 * kImageSize * (kImageSize + 1)));
  const co_up_tensor_view view{sizeof(co_up_tensor_view), values.data(), values.size(), wrong.data(), wrong.size()};
  co_up_result* result = nullptr;
  co_up_error* error = co_up_session_run(c_session, &view, 1, &result);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(result, nullptr);
  EXPECT_EQ(co_up_error_code_of(error), CO_UP_ERROR_INPUT);
  EXPECT_EQ(std::string(co_up_error_message(error)), message);
  co_up_error_release(error);
  // NULL arguments are errors, not crashes.
  error = co_up_session_run(c_session, nullptr, 1, &result);
  ASSERT_NE(error, nullptr);
  EXPECT_EQ(std::string(co_up_error_message(error)), "inputs is NULL");
  co_up_error_release(error);
  co_up_session_release(c_session);
}

TEST(ApiVersion, HeaderAndLibraryAgree) {
  EXPECT_EQ(co_up_api_version(), (CO_UP_API_VERSION_MAJOR << 16) | CO_UP_API_VERSION_MINOR);
  EXPECT_EQ(api_version() >> 16, kApiVersionMajor);
}

}  // namespace
}  // namespace co_up::test
