#include "cli/standard_streams.h"

#include "core/message_text.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>

namespace co_up::cli {

bool hold_closed_standard_streams() {
  bool stdout_open = true;
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    if (fd == STDOUT_FILENO) stdout_open = false;
    // open() returns the lowest free descriptor: this one, since the lower ones are open by now.
    const int held = ::open("/dev/null", O_RDWR);
    if (held >= 0 && held != fd) ::close(held);
  }
  return stdout_open;
}

class StandardOutput::Buffer : public std::streambuf {
 public:
  Buffer() { setp(data_, data_ + sizeof data_); }
  int error() const { return error_; }

 protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    *pptr() = traits_type::to_char_type(c);
    pbump(1);
    return c;
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  // Writes what is buffered; after a failure keeps discarding, so that one error is reported once.
  bool drain() {
    const char* p = pbase();
    while (p < pptr() && error_ == 0) {
      const ssize_t n = ::write(STDOUT_FILENO, p, static_cast<size_t>(pptr() - p));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error_ = n < 0 ? errno : EIO;
        break;
      }
      p += n;
    }
    setp(data_, data_ + sizeof data_);
    return error_ == 0;
  }

  char data_[1 << 16];
  int error_ = 0;
};

StandardOutput::StandardOutput() {
  if (::isatty(STDOUT_FILENO) == 1) return;
  std::cout.flush();
  buffer_ = std::make_unique<Buffer>();
  previous_ = std::cout.rdbuf(buffer_.get());
}

StandardOutput::~StandardOutput() {
  if (buffer_ == nullptr) return;
  std::cout.flush();
  std::cout.rdbuf(previous_);
}

int StandardOutput::flush() {
  errno = 0;
  std::cout.flush();
  int err = buffer_ != nullptr ? buffer_->error() : errno;
  if (err == 0 && std::cout) return 0;
  return err != 0 ? err : EIO;
}

int exit_code_after_stdout_error(int err, int code) {
  if (err == EPIPE) return code != 0 ? code : 128 + SIGPIPE;
  const char* name = strerrorname_np(err);
  std::cerr << "co_up: error: cannot write to standard output: " << (name != nullptr ? name : "E?")
            << " (" << std::strerror(err)
            << "); what co_up printed is incomplete (check the disk, or the program reading it)\n";
  return code != 0 ? code : 1;
}

std::string one_line(std::string_view text) { return co_up::one_line(text); }

}  // namespace co_up::cli
