// Runs a shell command line for end-to-end tests (co_up, cmake, pkg-config), its stdout and stderr
// captured through files in a scratch directory, under coreutils' `timeout` so a hang fails the
// test instead of stalling ctest.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

namespace co_up::test {

struct CommandResult {
  std::string command;
  int exit_code = -1;  // -1 when the shell did not exit normally
  std::string out;
  std::string err;
};

inline std::ostream& operator<<(std::ostream& os, const CommandResult& r) {
  return os << "$ " << r.command << "\nexit " << r.exit_code << "\n--- stdout ---\n"
            << r.out << "--- stderr ---\n" << r.err;
}

// 'text' with single quotes made safe, for one shell word.
inline std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  quoted += '\'';
  return quoted;
}

inline std::string join_quoted(const std::vector<std::string>& words) {
  std::string line;
  for (const std::string& w : words) {
    if (!line.empty()) line += ' ';
    line += shell_quote(w);
  }
  return line;
}

// `command_line` is passed to /bin/sh as is (quote its words with shell_quote/join_quoted).
inline CommandResult run_command(const std::string& command_line,
                                 const std::filesystem::path& scratch, int timeout_s = 300) {
  static int counter = 0;
  const std::string stem = (scratch / ("cmd" + std::to_string(counter++))).string();
  CommandResult result;
  result.command = command_line;
  const std::string full = "timeout " + std::to_string(timeout_s) + " sh -c " +
                           shell_quote(command_line) + " >" + shell_quote(stem + ".out") +
                           " 2>" + shell_quote(stem + ".err") + " </dev/null";
  const int status = std::system(full.c_str());
  if (status != -1 && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  auto slurp = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  result.out = slurp(stem + ".out");
  result.err = slurp(stem + ".err");
  return result;
}

// Runs `program` with `args`, each passed as one word, as run_command runs a command line.
inline CommandResult run_program(const std::string& program, const std::vector<std::string>& args,
                                 const std::filesystem::path& scratch, int timeout_s = 300) {
  std::vector<std::string> words{program};
  words.insert(words.end(), args.begin(), args.end());
  return run_command(join_quoted(words), scratch, timeout_s);
}

// Non-empty lines of `text`.
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

}  // namespace co_up::test
