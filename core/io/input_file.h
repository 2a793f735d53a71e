// Reading the files a user names (--platform, --labels, --image, --input, --model, --preprocess,
// a profile for `co_up plan`, a meter log, ...): regular files only, opened without blocking, and
// read up to a bound.
//
// Why: a FIFO with no writer blocks open() forever (and with signals blocked for the stop watcher,
// Ctrl-C alone cannot end it), and /dev/zero or /dev/urandom never end, so an unbounded read runs
// until memory does. A regular file has a size and an end; anything else is refused before a byte
// is read. Symlinks are followed.
//
// Errors: InputError (core/error.h), one line naming what the file is for, the path, and what to
// do: "cannot read labels file '/dev/zero': it is a character device, not a regular file (give a
// file)". Thread-safe for distinct paths.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace co_up::io {

// Bounds for the readers of text and small binary files, in bytes.
inline constexpr uint64_t kMaxConfigBytes = uint64_t{64} << 20;   // JSON, labels, logs
inline constexpr uint64_t kMaxImageBytes = uint64_t{512} << 20;   // PNG / JPEG / PPM
inline constexpr uint64_t kMaxLogBytes = uint64_t{1} << 30;       // an external meter's log

// An open file descriptor, closed on destruction.
class InputFd {
 public:
  explicit InputFd(int fd) noexcept : fd_(fd) {}
  ~InputFd();
  InputFd(InputFd&& other) noexcept : fd_(other.release()) {}
  InputFd& operator=(InputFd&&) = delete;
  InputFd(const InputFd&) = delete;
  InputFd& operator=(const InputFd&) = delete;

  int get() const noexcept { return fd_; }
  int release() noexcept {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

// Opens `path` for reading (O_RDONLY | O_NONBLOCK | O_CLOEXEC, then blocking again) and checks on
// the open descriptor that it is a regular file. `what` names the file for messages ("labels
// file"). Throws InputError when it does not exist, cannot be opened, or is not a regular file.
InputFd open_input_file(const std::filesystem::path& path, std::string_view what);

// The whole content of `path`, at most `max_bytes` of it: a file that is larger (or that grows
// past the bound while being read, as /proc files may) is refused with InputError.
std::string read_input_file(const std::filesystem::path& path, std::string_view what,
                            uint64_t max_bytes);

// A kernel attribute file (sysfs, procfs: cpufreq policies, CPU lists, DVFS nodes): its content,
// at most 4 KiB (one page, the most a sysfs attribute holds), opened without blocking; "" when it
// cannot be read or is not a regular file. For files co_up only peeks at, where "absent" is an
// answer rather than an error.
std::string read_attribute(const std::filesystem::path& path);
// The first whitespace-separated word of read_attribute ("" when there is none).
std::string read_attribute_word(const std::filesystem::path& path);

// "a FIFO", "a directory", "a character device", ... for st_mode's file type.
const char* file_type_name(unsigned mode);

}  // namespace co_up::io
