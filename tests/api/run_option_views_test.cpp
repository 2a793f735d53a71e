// The run options have one table (api/run_options.h) and three views of it: the command line's
// parser (cli/options.cpp), SessionOptions::set, and the Python keywords (SessionOptions::known(),
// checked from Python in tests/python/test_option_views.py). Each view knows exactly the table's
// keys for its scope, and the command line's --help lists each of its run options.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "api/run_options.h"
#include "api/session_internal.h"
#include "cli/options.h"
#include "co_up/co_up.hpp"
#include "core/error.h"

namespace co_up {
namespace {

// What the command line says about `--name=x` (or `--name` for a flag): "" when it was taken.
std::string cli_says(const RunOption& option) {
  const std::string arg = "--" + std::string(option.name) + (option.kind == RunOptionKind::kFlag ? "" : "=x");
  try {
    cli::parse_options({arg});
    return "";
  } catch (const InputError& e) {
    return e.what();
  }
}

std::string session_says(const std::string& key) {
  try {
    SessionOptions().set(key, "x");
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

TEST(RunOptionViews, CommandLineKnowsEveryRunOptionButTheApiOnlyOnes) {
  for (const RunOption& option : run_options()) {
    const std::string unknown = "unknown option '--" + std::string(option.name) + "' (see co_up --help)";
    if (option.scope == RunOptionScope::kApi) {
      EXPECT_EQ(cli_says(option), unknown);
    } else {
      EXPECT_NE(cli_says(option), unknown) << option.name;
    }
  }
}

TEST(RunOptionViews, SessionOptionsKnowsTheSameKeysAndRefusesTheCommandLineOnes) {
  std::vector<std::string> expected;
  for (const RunOption& option : run_options()) {
    const std::string name(option.name);
    if (option.scope == RunOptionScope::kCommandLine) {
      EXPECT_THAT(session_says(name), ::testing::HasSubstr(" is command-line only")) << name;
    } else {
      EXPECT_THAT(session_says(name), ::testing::Not(::testing::StartsWith("unknown session option"))) << name;
      expected.push_back(name);
    }
  }
  // The unknown-key message lists every key set() takes: exactly the table's.
  const std::string message = session_says("no-such-option");
  const std::string prefix = "unknown session option 'no-such-option' (known: ";
  ASSERT_THAT(message, ::testing::StartsWith(prefix));
  std::vector<std::string> listed;
  std::string list = message.substr(prefix.size(), message.size() - prefix.size() - 1);
  for (size_t at = 0; at <= list.size();) {
    const size_t comma = std::min(list.find(", ", at), list.size());
    listed.push_back(list.substr(at, comma - at));
    at = comma + 2;
  }
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(listed, expected);
}

TEST(RunOptionViews, KnownListsTheTableWithUniqueKeywords) {
  const std::vector<SessionOptions::Key> keys = SessionOptions::known();
  const auto table = run_options();
  ASSERT_EQ(keys.size(), table.size());
  std::set<std::string> keywords;
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_EQ(keys[i].name, table[i].name);
    EXPECT_EQ(keys[i].keyword, table[i].keyword);
    EXPECT_EQ(keys[i].flag, table[i].kind == RunOptionKind::kFlag);
    EXPECT_EQ(keys[i].command_line_only, table[i].scope == RunOptionScope::kCommandLine);
    EXPECT_FALSE(keys[i].help.empty()) << keys[i].name;
    EXPECT_TRUE(keywords.insert(keys[i].keyword).second) << "keyword twice: " << keys[i].keyword;
  }
}

TEST(RunOptionViews, CommandLineHelpListsEveryRunOption) {
  const std::string help = cli::usage();
  for (const RunOption& option : run_options()) {
    if (option.scope == RunOptionScope::kApi) continue;
    EXPECT_THAT(help, ::testing::HasSubstr("--" + std::string(option.name))) << option.name;
  }
}

TEST(RunOptionViews, OneParseGivesTheCommandLineAndTheSessionTheSameValues) {
  const cli::Options o = cli::parse_options({"--order=BBLL", "--mode=switch", "--buffers=3", "--power",
                                             "--threads_little=2", "--split-cluster=B:C", "--data=dir"});
  SessionOptions options;
  options.set("order", "BBLL").set("mode", "switch").set("buffers", "3").set("power", "1");
  options.set("threads_little", "2").set("split-cluster", "B:C").set("data", "dir");
  const SessionOptions::Values& v = options.values();
  EXPECT_EQ(o.order, v.order);
  EXPECT_EQ(o.mode, v.mode);
  EXPECT_EQ(o.buffers, v.buffers);
  EXPECT_EQ(o.power, v.power);
  EXPECT_EQ(o.threads_little, v.threads_little);
  EXPECT_EQ(o.split_cluster.has_value(), v.split_cluster.has_value());
  EXPECT_EQ(o.data, v.data);
}

TEST(RunOptionViews, TheTypedSetterAndTheKeySetTheSameValue) {
  EXPECT_TRUE(SessionOptions().values().share_boundaries);
  EXPECT_FALSE(SessionOptions().set_share_boundaries(false).values().share_boundaries);
  EXPECT_FALSE(SessionOptions().set("share-boundaries", "0").values().share_boundaries);
  EXPECT_TRUE(SessionOptions().set_share_boundaries(false).set_share_boundaries(true).values().share_boundaries);
}

}  // namespace
}  // namespace co_up
