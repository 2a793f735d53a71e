#include "core/io/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/io/input_file.h"

namespace co_up::io {
namespace {

namespace fs = std::filesystem;

std::string errno_text(int err) {
  const char* name = strerrorname_np(err);
  return std::string(name != nullptr ? name : "E?") + " (" + std::strerror(err) + ")";
}

// Follows symlinks one hop at a time, so that a dangling link resolves to the path it names
// (std::filesystem::canonical needs the target to exist).
fs::path resolve_target(const fs::path& path, const std::string& where) {
  fs::path p = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    std::error_code ec;
    const fs::path link = fs::read_symlink(p, ec);
    if (ec) throw InputError(where + ": cannot read the symbolic link '" + p.string() + "': " + ec.message());
    p = link.is_absolute() ? link : p.parent_path() / link;
  }
  throw InputError(where + ": too many levels of symbolic links");
}

fs::path directory_of(const fs::path& target) {
  const fs::path dir = target.parent_path();
  return dir.empty() ? fs::path(".") : dir;
}

// Opens a new file beside `target` that no other process uses: ".NAME.co_up-PID-N".
int create_temporary(const fs::path& target, fs::path& out_path) {
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string name = ".";
    name += target.filename().string();
    name += ".co_up-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
    out_path = directory_of(target) / name;
    const int fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

bool write_all(int fd, std::initializer_list<std::string_view> parts) {
  for (std::string_view part : parts) {
    while (!part.empty()) {
      const ssize_t n = ::write(fd, part.data(), part.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return false;
      }
      part.remove_prefix(static_cast<size_t>(n));
    }
  }
  return true;
}

}  // namespace

OutputFile OutputFile::check(const fs::path& path, std::string what) {
  const std::string where = what + " '" + path.string() + "'";
  if (path.empty()) throw InputError(what + ": empty path (give a file name)");
  const fs::path target = resolve_target(path, where);
  struct stat st {};
  const bool exists = ::stat(target.c_str(), &st) == 0;
  if (!exists && errno != ENOENT) {
    throw InputError("cannot write " + where + ": " + errno_text(errno));
  }
  if (exists && S_ISCHR(st.st_mode)) {
    const int fd = ::open(target.c_str(), O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) throw InputError("cannot write " + where + ": " + errno_text(errno));
    ::close(fd);
    return OutputFile(path, target, std::move(what), Kind::kDevice);
  }
  if (exists && !S_ISREG(st.st_mode)) {
    throw InputError("cannot write " + where + ": it is " + file_type_name(st.st_mode) +
                     "; give a regular file (or a character device such as /dev/null)");
  }
  if (exists && ::access(target.c_str(), W_OK) != 0) {
    throw InputError("cannot write " + where + ": the file is not writable (" +
                     errno_text(errno) + "; check its permissions)");
  }
  const fs::path dir = directory_of(target);
  struct stat dir_st {};
  if (::stat(dir.c_str(), &dir_st) != 0 || !S_ISDIR(dir_st.st_mode)) {
    throw InputError("cannot write " + where + ": the directory '" + dir.string() +
                     "' does not exist (create it first)");
  }
  // Probe: the rename needs a new file in the target's directory.
  fs::path probe;
  const int fd = create_temporary(target, probe);
  if (fd >= 0) {
    ::close(fd);
    ::unlink(probe.c_str());
    return OutputFile(path, target, std::move(what), Kind::kReplace);
  }
  const int err = errno;
  if (exists) {
    return OutputFile(path, target, std::move(what), Kind::kInPlace);
  }
  throw InputError("cannot write " + where + ": cannot create files in '" + dir.string() + "': " +
                   errno_text(err) + " (choose a writable directory)");
}

void OutputFile::write(std::initializer_list<std::string_view> parts) const {
  const std::string where = what_ + " '" + path_.string() + "'";
  if (kind_ != Kind::kReplace) {
    const int flags = O_WRONLY | O_NOCTTY | O_CLOEXEC | (kind_ == Kind::kInPlace ? O_TRUNC : 0);
    const int fd = ::open(target_.c_str(), flags);
    int err = fd < 0 ? errno : 0;
    if (fd >= 0) {
      if (!write_all(fd, parts)) err = errno;
      if (::close(fd) != 0 && err == 0) err = errno;
    }
    if (err != 0) throw RuntimeError("cannot write " + where + ": " + errno_text(err));
    return;
  }
  fs::path temporary;
  const int fd = create_temporary(target_, temporary);
  if (fd < 0) {
    throw RuntimeError("cannot write " + where + ": cannot create a file in '" +
                       directory_of(target_).string() + "': " + errno_text(errno));
  }
  int err = 0;
  // The replacement keeps the replaced file's permissions and, where allowed, its owner.
  struct stat old {};
  if (::stat(target_.c_str(), &old) == 0 && S_ISREG(old.st_mode)) {
    if (::fchmod(fd, old.st_mode & 07777) != 0) err = errno;
    [[maybe_unused]] const int ignored = ::fchown(fd, old.st_uid, old.st_gid);
  }
  if (err == 0 && !write_all(fd, parts)) err = errno;
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && ::rename(temporary.c_str(), target_.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(temporary.c_str());
    throw RuntimeError("cannot write " + where + ": " + errno_text(err) +
                       " (an earlier file there is unchanged)");
  }
}

}  // namespace co_up::io
