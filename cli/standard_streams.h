// The CLI's standard streams: what co_up prints is its result, so losing it is an error too.
#pragma once

#include <memory>
#include <streambuf>
#include <string>
#include <string_view>

namespace co_up::cli {

// Call first in main(). A standard descriptor (0, 1, 2) that is closed would be handed to the
// next file co_up opens (a profile, a plugin), and the report would then be written into that
// file: each closed one is held open on /dev/null. Returns false when standard output was closed
// (the caller refuses to run: the report would be lost).
bool hold_closed_standard_streams();

// Routes std::cout through write(2) on descriptor 1 while it lives, remembering the first failed
// write's errno (iostreams keep only a failbit, and stdio's errno is long overwritten by the time
// main() looks). A terminal keeps std::cout as it is, line-buffered through stdio.
class StandardOutput {
 public:
  StandardOutput();
  ~StandardOutput();  // flushes and gives std::cout its own buffer back
  StandardOutput(const StandardOutput&) = delete;
  StandardOutput& operator=(const StandardOutput&) = delete;

  // Flushes. Returns 0 when everything printed reached standard output, else the errno of the
  // first failed write (EIO when none was recorded).
  int flush();

 private:
  class Buffer;
  std::unique_ptr<Buffer> buffer_;
  std::streambuf* previous_ = nullptr;
};

// What to exit with when standard output failed with `err` after a command that returned `code`:
// EPIPE (the reader went away: co_up ... | head) exits quietly as a SIGPIPE death would, 128 + 13;
// anything else prints one line on stderr and exits 1 (or `code`, if that already says failure).
int exit_code_after_stdout_error(int err, int code);

// `text` on one line: control characters (a newline in a file name or a file's header) become
// escapes such as \n and \x1b, so that every error stays the one line scripts read.
std::string one_line(std::string_view text);

}  // namespace co_up::cli
