// io::read_input_file / open_input_file: regular files only, never blocking, bounded
// (core/io/input_file.h).
#include "core/io/input_file.h"

#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "tests/io/test_files.h"

namespace co_up::io {
namespace {

namespace fs = std::filesystem;
using test::expect_input_error;
using test::TempDir;
using test::write_bytes;

TEST(InputFile, ReadsARegularFileAndASymlinkToIt) {
  TempDir dir;
  const std::string text(200000, 'a');
  write_bytes(dir / "f.txt", text);
  fs::create_symlink("f.txt", dir / "link.txt");
  EXPECT_EQ(read_input_file(dir / "f.txt", "labels file", 200000), text);
  EXPECT_EQ(read_input_file(dir / "link.txt", "labels file", 200000), text);
  EXPECT_EQ(read_input_file(write_bytes(dir / "empty", ""), "labels file", 10), "");
}

TEST(InputFile, RefusesAFileOverTheBound) {
  TempDir dir;
  write_bytes(dir / "f.txt", std::string(1001, 'a'));
  expect_input_error([&] { read_input_file(dir / "f.txt", "platform file", 1000); },
                     "platform file", "f.txt", "1001 bytes");
}

TEST(InputFile, BoundsAFileWhoseSizeSaysNothing) {
  // /proc files report size 0 and are read to their end: the bound still holds.
  expect_input_error([] { read_input_file("/proc/self/maps", "labels file", 16); },
                     "/proc/self/maps", "goes on past");
}

TEST(InputFile, RefusesFifoAtOnceEvenWithoutAWriter) {
  TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0644), 0);
  const auto start = std::chrono::steady_clock::now();
  expect_input_error([&] { read_input_file(dir / "fifo", ".npy file", 1 << 20); }, ".npy file",
                     "it is a FIFO, not a regular file");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(InputFile, RefusesDevicesAndDirectories) {
  TempDir dir;
  expect_input_error([] { read_input_file("/dev/zero", "image", 1 << 20); }, "'/dev/zero'",
                     "it is a character device");
  expect_input_error([&] { read_input_file(dir.path(), "platform file", 1 << 20); },
                     "it is a directory");
  expect_input_error([&] { read_input_file(dir / "missing.json", "platform file", 1 << 20); },
                     "ENOENT (No such file or directory)");
}

TEST(Attribute, ReadsOnePageAtMostAndNeverBlocks) {
  TempDir dir;
  write_bytes(dir / "scaling_governor", "schedutil\n");
  EXPECT_EQ(read_attribute(dir / "scaling_governor"), "schedutil\n");
  EXPECT_EQ(read_attribute_word(dir / "scaling_governor"), "schedutil");
  write_bytes(dir / "long", std::string(10000, 'x'));
  EXPECT_EQ(read_attribute(dir / "long").size(), 4096u);
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0644), 0);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(read_attribute(dir / "fifo"), "");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(read_attribute("/dev/zero"), "") << "a device is not an attribute";
  EXPECT_EQ(read_attribute(dir / "missing"), "");
  EXPECT_EQ(read_attribute_word(write_bytes(dir / "blank", " \n")), "");
}

}  // namespace
}  // namespace co_up::io
