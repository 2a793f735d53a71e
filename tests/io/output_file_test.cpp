// io::OutputFile: what each kind of output path gets (core/io/output_file.h). Device nodes, FIFOs
// and symlinks are made under the test's own directory.
#include "core/io/output_file.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "core/error.h"
#include "tests/io/test_files.h"

namespace co_up::io {
namespace {

namespace fs = std::filesystem;
using test::expect_input_error;
using test::read_bytes;
using test::TempDir;
using test::write_bytes;

size_t entries(const fs::path& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

TEST(OutputFile, NewFileIsWrittenWithUmaskPermissions) {
  TempDir dir;
  const mode_t old_mask = ::umask(022);
  OutputFile::check(dir / "p.json", "--profile-out").write({"{\"a\":", "1}\n"});
  ::umask(old_mask);
  EXPECT_EQ(read_bytes(dir / "p.json"), "{\"a\":1}\n");
  EXPECT_EQ(fs::status(dir / "p.json").permissions(),
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                fs::perms::others_read);
  EXPECT_EQ(entries(dir.path()), 1u) << "no temporary file left behind";
}

TEST(OutputFile, CheckChangesNothing) {
  TempDir dir;
  write_bytes(dir / "p.json", "earlier profile");
  const OutputFile out = OutputFile::check(dir / "p.json", "--profile-out");
  EXPECT_EQ(read_bytes(dir / "p.json"), "earlier profile");
  EXPECT_EQ(entries(dir.path()), 1u) << "the directory probe is removed at once";
  OutputFile::check(dir / "new.json", "--profile-out");
  EXPECT_FALSE(fs::exists(dir / "new.json"));
  out.write("new profile");
  EXPECT_EQ(read_bytes(dir / "p.json"), "new profile");
}

TEST(OutputFile, ReplacementKeepsPermissionBits) {
  TempDir dir;
  write_bytes(dir / "p.json", "old");
  fs::permissions(dir / "p.json", fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  OutputFile::check(dir / "p.json", "--profile-out").write("new");
  EXPECT_EQ(read_bytes(dir / "p.json"), "new");
  EXPECT_EQ(fs::status(dir / "p.json").permissions(),
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
}

TEST(OutputFile, SymlinkStaysALinkAndItsTargetIsReplaced) {
  TempDir dir;
  fs::create_directories(dir / "real");
  write_bytes(dir / "real" / "p.json", "old");
  fs::create_symlink("real/p.json", dir / "link.json");
  const OutputFile out = OutputFile::check(dir / "link.json", "--profile-out");
  EXPECT_EQ(out.target(), dir / "real" / "p.json");
  out.write("new");
  EXPECT_TRUE(fs::is_symlink(dir / "link.json"));
  EXPECT_EQ(read_bytes(dir / "real" / "p.json"), "new");
  EXPECT_EQ(entries(dir.path()), 2u);
  EXPECT_EQ(entries(dir / "real"), 1u);
}

TEST(OutputFile, DanglingSymlinkCreatesItsTarget) {
  TempDir dir;
  fs::create_symlink("made.json", dir / "link.json");
  OutputFile::check(dir / "link.json", "--trace-out").write("trace");
  EXPECT_TRUE(fs::is_symlink(dir / "link.json"));
  EXPECT_EQ(read_bytes(dir / "made.json"), "trace");
}

TEST(OutputFile, CharacterDeviceIsWrittenInPlaceNeverReplaced) {
  // A node of /dev/null's numbers in the test's own directory (as root, like CI).
  if (::geteuid() != 0) GTEST_SKIP() << "creating a device node needs root";
  TempDir dir;
  const fs::path node = dir / "null";
  ASSERT_EQ(::mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
  const OutputFile out = OutputFile::check(node, "--profile-out");
  EXPECT_TRUE(out.is_device());
  out.write("profile text");
  struct stat st {};
  ASSERT_EQ(::stat(node.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "the device node was replaced by a regular file";
  EXPECT_EQ(st.st_rdev, makedev(1, 3));
  EXPECT_EQ(entries(dir.path()), 1u);
}

TEST(OutputFile, WriteErrorOnADeviceIsARuntimeError) {
  const OutputFile out = OutputFile::check("/dev/full", "--profile-out");
  try {
    out.write("x");
    ADD_FAILURE() << "writing /dev/full succeeded";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("ENOSPC"), std::string::npos) << e.what();
  }
}

TEST(OutputFile, RefusesWhatItCannotWriteSafely) {
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0644), 0);
  expect_input_error([&] { OutputFile::check(dir / "fifo", "--profile-out"); }, "--profile-out",
                     "fifo", "it is a FIFO");
  fs::create_directories(dir / "sub");
  expect_input_error([&] { OutputFile::check(dir / "sub", "--trace-out"); }, "it is a directory");
  expect_input_error([&] { OutputFile::check(dir / "none" / "p.json", "--power-csv"); },
                     "--power-csv", "does not exist");
  expect_input_error([&] { OutputFile::check("/proc/co_up_x.json", "--trace-out"); },
                     "cannot create files in '/proc'");
  expect_input_error([&] { OutputFile::check("", "--output"); }, "--output", "empty path");
  fs::create_symlink("loop2", dir / "loop1");
  fs::create_symlink("loop1", dir / "loop2");
  expect_input_error([&] { OutputFile::check(dir / "loop1", "--output"); }, "symbolic links");
  EXPECT_TRUE(fs::is_fifo(dir / "fifo"));
}

TEST(OutputFile, FailedWriteLeavesTheEarlierFileAndNoTemporary) {
  TempDir dir;
  write_bytes(dir / "p.json", "earlier profile");
  const OutputFile out = OutputFile::check(dir / "p.json", "--profile-out");
  // A file-size limit makes the write fail part-way (EFBIG) as a full disk would.
  ::signal(SIGXFSZ, SIG_IGN);
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  rlimit small = old;
  small.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  bool threw = false;
  try {
    out.write(std::string(100000, 'x'));
  } catch (const RuntimeError& e) {
    threw = true;
    EXPECT_NE(std::string(e.what()).find("EFBIG"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("earlier file there is unchanged"), std::string::npos);
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  EXPECT_TRUE(threw);
  EXPECT_EQ(read_bytes(dir / "p.json"), "earlier profile");
  EXPECT_EQ(entries(dir.path()), 1u) << "the temporary file is removed";
}

}  // namespace
}  // namespace co_up::io
