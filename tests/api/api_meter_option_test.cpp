// The external meter is command-line only: its alignment table is printed by co_up and nothing of
// it reaches a Session's profile, so the API refuses its keys with one line saying so rather than
// opening the device for nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "co_up/co_up.h"
#include "co_up/co_up.hpp"

namespace co_up::test {
namespace {

TEST(ApiMeterOption, MeterKeysAreRefusedAsCommandLineOnly) {
  for (const std::string key : {"meter", "meter-log", "meter-window"}) {
    const std::string expected = "--" + key +
                                 " is command-line only (the meter's report is printed by co_up; a "
                                 "Session does not expose it)";
    SessionOptions options;
    try {
      options.set(key, "1");
      ADD_FAILURE() << key << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInput);
      EXPECT_EQ(std::string(e.what()), expected);
    }
    co_up_options* c_options = nullptr;
    ASSERT_EQ(co_up_options_create(&c_options), nullptr);
    co_up_error* error = co_up_options_set(c_options, key.c_str(), "1");
    ASSERT_NE(error, nullptr) << key;
    EXPECT_EQ(co_up_error_code_of(error), CO_UP_ERROR_INPUT);
    EXPECT_EQ(std::string(co_up_error_message(error)), expected);
    co_up_error_release(error);
    co_up_options_release(c_options);
  }
}

}  // namespace
}  // namespace co_up::test
