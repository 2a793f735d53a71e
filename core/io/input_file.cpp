#include "core/io/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace co_up::io {
namespace {

std::string describe(const std::filesystem::path& path, std::string_view what) {
  return std::string(what) + " '" + path.string() + "'";
}

std::string errno_text(int err) {
  const char* name = strerrorname_np(err);
  return std::string(name != nullptr ? name : "E?") + " (" + std::strerror(err) + ")";
}

std::string mib(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

}  // namespace

InputFd::~InputFd() {
  if (fd_ >= 0) ::close(fd_);
}

const char* file_type_name(unsigned mode) {
  switch (mode & S_IFMT) {
    case S_IFREG: return "a regular file";
    case S_IFDIR: return "a directory";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFIFO: return "a FIFO";
    case S_IFSOCK: return "a socket";
    case S_IFLNK: return "a symbolic link";
  }
  return "not a regular file";
}

InputFd open_input_file(const std::filesystem::path& path, std::string_view what) {
  if (path.empty()) throw InputError(std::string(what) + ": empty path (give a file)");
  // O_NONBLOCK: opening a FIFO without a writer returns at once instead of waiting for one.
  InputFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0) {
    const int err = errno;
    throw InputError("cannot read " + describe(path, what) + ": " + errno_text(err) +
                     (err == ENOENT ? " (check the path)" : ""));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    throw InputError("cannot read " + describe(path, what) + ": " + errno_text(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    throw InputError("cannot read " + describe(path, what) + ": it is " +
                     file_type_name(st.st_mode) + ", not a regular file (give a file)");
  }
  // Back to blocking reads: a regular file never blocks, but a later reader may not expect EAGAIN.
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags >= 0) ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

std::string read_input_file(const std::filesystem::path& path, std::string_view what,
                            uint64_t max_bytes) {
  const InputFd fd = open_input_file(path, what);
  struct stat st {};
  if (::fstat(fd.get(), &st) == 0 && static_cast<uint64_t>(st.st_size) > max_bytes) {
    throw InputError("cannot read " + describe(path, what) + ": it has " +
                     std::to_string(st.st_size) + " bytes, more than the " + mib(max_bytes) +
                     " such a file may have (is it the right file?)");
  }
  std::string bytes;
  bytes.reserve(static_cast<size_t>(st.st_size));
  char chunk[1 << 16];
  for (;;) {
    const ssize_t got = ::read(fd.get(), chunk, sizeof chunk);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw InputError("cannot read " + describe(path, what) + ": " + errno_text(errno));
    }
    if (got == 0) break;
    if (bytes.size() + static_cast<uint64_t>(got) > max_bytes) {
      throw InputError("cannot read " + describe(path, what) + ": it goes on past " +
                       mib(max_bytes) + ", more than such a file may have (is it the right file?)");
    }
    bytes.append(chunk, static_cast<size_t>(got));
  }
  return bytes;
}

std::string read_attribute(const std::filesystem::path& path) {
  const InputFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  struct stat st {};
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
  char page[4096];
  ssize_t got = 0;
  do {
    got = ::read(fd.get(), page, sizeof page);
  } while (got < 0 && errno == EINTR);
  return got > 0 ? std::string(page, static_cast<size_t>(got)) : std::string();
}

std::string read_attribute_word(const std::filesystem::path& path) {
  const std::string text = read_attribute(path);
  const size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return {};
  return text.substr(begin, text.find_first_of(" \t\r\n", begin) - begin);
}

}  // namespace co_up::io
