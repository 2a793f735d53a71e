// Sizes of long tests in sanitizer builds.
//
// A sanitizer finds a race or a memory error in the first frames as well as in the 500th, and it
// makes every frame 5-40 times slower. So a long test may run fewer frames, images or repetitions
// in a sanitizer build (ASan+UBSan or TSan: the compiler defines __SANITIZE_ADDRESS__ or
// __SANITIZE_THREAD__), as long as the smaller run takes the same code paths; the Release suite
// runs the size the specification asks for ("three networks, 500 frames each"). This header is
// the one place that tells the two builds apart for that purpose, and every reduction says so in
// the test's output, so a log never hides that a sanitizer ran less than the Release suite.
#pragma once

#include <gtest/gtest.h>

#include <iostream>
#include <sstream>
#include <string>

namespace co_up::test {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitizerBuild = true;
#else
inline constexpr bool kSanitizerBuild = false;
#endif

// `full` in a build without a sanitizer; `reduced` in a sanitizer build, where it prints
// "[ REDUCED  ] WHAT: REDUCED (FULL without a sanitizer)" and records the test property
// "reduced_size" with the same text (it shows in --gtest_output=xml).
template <typename T>
T size_for_this_build(const std::string& what, T full, T reduced) {
  if constexpr (!kSanitizerBuild) {
    return full;
  } else {
    std::ostringstream line;
    line << what << ": " << reduced << " (" << full << " without a sanitizer)";
    std::cout << "[ REDUCED  ] " << line.str() << std::endl;
    ::testing::Test::RecordProperty("reduced_size", line.str());
    return reduced;
  }
}

}  // namespace co_up::test
