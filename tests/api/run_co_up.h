// The co_up binary on the API tests' network, for the tests that compare a client of the API with
// the command line: `co_up --graph=<kNetwork> ARGS...` (each argument one word), run in `scratch`.
// Needs CO_UP_BINARY (tests/api/CMakeLists.txt's api_test_definitions).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "tests/api/api_test_support.h"
#include "tests/plugins/run_command.h"

namespace co_up::test {

inline CommandResult run_co_up(const std::filesystem::path& scratch, const std::vector<std::string>& args) {
  return run_program(CO_UP_BINARY, [&] {
    std::vector<std::string> words = {"--graph=" + std::string(kNetwork)};
    words.insert(words.end(), args.begin(), args.end());
    return words;
  }(), scratch);
}

}  // namespace co_up::test
