// Helpers shared by the io tests: a scratch directory per test and byte-exact file writing.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "core/error.h"
#include "tests/cli/scratch_dir.h"

namespace co_up::test {

// A directory unique to the running test, removed when it ends (one scratch-dir type for all tests).
using TempDir = ScratchDir;

inline std::filesystem::path write_bytes(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  EXPECT_TRUE(out.good()) << "cannot write test file " << path;
  return path;
}

inline std::string read_bytes(const std::filesystem::path& path) { return read_file(path); }

// Runs `fn`, expects InputError whose message contains every one of `parts`.
template <typename Fn, typename... Parts>
void expect_input_error(Fn&& fn, const Parts&... parts) {
  try {
    fn();
    ADD_FAILURE() << "expected co_up::InputError, nothing was thrown";
  } catch (const co_up::InputError& error) {
    std::string message = error.what();
    for (std::string_view part : {std::string_view(parts)...}) {
      EXPECT_NE(message.find(part), std::string::npos)
          << "message \"" << message << "\" lacks \"" << part << "\"";
    }
  }
}

}  // namespace co_up::test
