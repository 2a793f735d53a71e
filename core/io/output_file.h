// Where a result goes: --profile-out, --trace-out, --power-csv, --output, `co_up profile
// --profile-out`. Checked before a run starts, written when it ends.
//
// What each kind of path gets (symlinks are followed to their target, which stays a symlink's
// target):
//   - a regular file, or a path not there yet: replaced atomically. The bytes go to a new file
//     beside the target, are flushed to disk, and are renamed over it, so a reader or a crash never
//     sees half a file and an earlier file survives a failed or killed run. The new file keeps the
//     old one's permission bits (a new path gets 0666 less the umask).
//   - a regular file in a directory co_up cannot create files in, but which is itself writable:
//     written in place (truncated, then written).
//   - a character device (/dev/null, a terminal, /dev/full): written in place, never replaced.
//   - anything else (a directory, FIFO, socket, block device): refused by check().
// check() changes nothing: it probes the directory with a temporary file it removes at once.
//
// Errors: check() throws InputError (bad path: exit 2), write() throws RuntimeError (the write
// failed: exit 1), each one line naming the flag's file, the reason and what to do.
// Thread-safe: distinct objects may be used from distinct threads.
#pragma once

#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>

namespace co_up::io {

class OutputFile {
 public:
  // `what` names the file in messages: "--profile-out", "profile".
  static OutputFile check(const std::filesystem::path& path, std::string what);

  // Writes the concatenation of `parts` as the file's whole content.
  void write(std::initializer_list<std::string_view> parts) const;
  void write(std::string_view text) const { write({text}); }

  const std::filesystem::path& path() const { return path_; }
  // The path written: symlinks followed.
  const std::filesystem::path& target() const { return target_; }
  // True when written in place on a character device (two outputs may share /dev/null).
  bool is_device() const { return kind_ == Kind::kDevice; }

 private:
  enum class Kind { kReplace, kInPlace, kDevice };
  OutputFile(std::filesystem::path path, std::filesystem::path target, std::string what, Kind kind)
      : path_(std::move(path)), target_(std::move(target)), what_(std::move(what)), kind_(kind) {}

  std::filesystem::path path_;
  std::filesystem::path target_;
  std::string what_;
  Kind kind_;
};

}  // namespace co_up::io
