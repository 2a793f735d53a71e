// Starts a binary as a child process (fork + exec, stdout and stderr to files in a scratch
// directory) and collects its exit, for end-to-end tests that must signal the process while it
// runs (SIGINT mid-run). For a plain run-and-wait, run_command.h (through the shell) suffices.
#pragma once

#include <fcntl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <ostream>
#include <string>
#include <vector>

namespace co_up::test {

struct Exit {
  int code = -1;  // exit status, or 1000 + the signal that ended it
  std::string out, err;
};

inline std::ostream& operator<<(std::ostream& os, const Exit& e) {
  return os << "exit " << e.code << "\n--- stdout ---\n" << e.out << "--- stderr ---\n" << e.err;
}

// Runs `binary args...` with stdout in dir/out.txt and stderr in dir/err.txt; returns its pid.
// A `binary` without a slash is searched on PATH.
inline pid_t spawn_process(const std::string& binary, const std::vector<std::string>& args,
                           const std::filesystem::path& dir) {
  std::vector<std::string> strings = {binary};
  strings.insert(strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  const std::string out = (dir / "out.txt").string(), err = (dir / "err.txt").string();
  const pid_t pid = fork();
  if (pid == 0) {  // the child: only async-signal-safe calls until exec
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || e < 0) _exit(126);
    dup2(o, 1);
    dup2(e, 2);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

// Waits for `pid` (from spawn_process with the same `dir`) and reads what it printed.
inline Exit finish_process(pid_t pid, const std::filesystem::path& dir) {
  int status = 0;
  waitpid(pid, &status, 0);
  const auto slurp = [](const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  Exit e;
  e.code = WIFEXITED(status) ? WEXITSTATUS(status) : 1000 + WTERMSIG(status);
  e.out = slurp(dir / "out.txt");
  e.err = slurp(dir / "err.txt");
  return e;
}

}  // namespace co_up::test
