#include "graph/npy.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/io/test_files.h"

namespace co_up::graph {
namespace {

using test::expect_input_error;
using test::read_bytes;
using test::TempDir;
using test::write_bytes;

// The raw bytes of values as stored on a little-endian machine.
template <typename T>
std::string raw(std::initializer_list<T> values) {
  std::string bytes;
  for (T value : values) {
    char buf[sizeof(T)];
    std::memcpy(buf, &value, sizeof(T));
    bytes.append(buf, sizeof(T));
  }
  return bytes;
}

// A version 1.0 file the way numpy.save writes it: magic, version, 2-byte length, the dict padded
// with spaces and a '\n' to a multiple of 64 bytes, then the data.
std::string npy_v1(const std::string& dict, const std::string& data) {
  std::string header = dict;
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string bytes("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  return bytes + header + data;
}

// Version 2.0 and 3.0: a 4-byte length, alignment counted from a 12-byte preamble.
std::string npy_v2(const std::string& dict, const std::string& data, char major = '\x02') {
  std::string header = dict;
  header.append((64 - (12 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string bytes("\x93NUMPY", 6);
  bytes += major;
  bytes += '\0';
  bytes += raw<uint32_t>({static_cast<uint32_t>(header.size())});
  return bytes + header + data;
}

// numpy.save("a.npy", numpy.array([1, 2, 3], dtype=numpy.float32)), spelled out byte by byte.
const std::string kFloat32Vector =
    std::string("\x93NUMPY\x01\x00\x76\x00", 10) +
    "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }" + std::string(60, ' ') + "\n" +
    std::string("\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x40\x40", 12);

TEST(Npy, ReadsNumpyFloat32Vector) {
  TempDir dir;
  ASSERT_EQ(kFloat32Vector.size(), 128u + 12u);
  NpyArray array = read_npy(write_bytes(dir / "a.npy", kFloat32Vector));
  EXPECT_EQ(array.shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(array.data, (std::vector<float>{1, 2, 3}));
}

TEST(Npy, WritesWhatNumpyWrites) {
  TempDir dir;
  std::vector<int64_t> shape{3};
  std::vector<float> data{1, 2, 3};
  write_npy(dir / "a.npy", shape, data);
  EXPECT_EQ(read_bytes(dir / "a.npy"), kFloat32Vector);
}

TEST(Npy, ReadsScalar) {
  TempDir dir;
  std::string bytes = npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", raw<float>({2.5f}));
  ASSERT_EQ(bytes.size(), 128u + 4u);
  NpyArray array = read_npy(write_bytes(dir / "s.npy", bytes));
  EXPECT_TRUE(array.shape.empty());
  EXPECT_EQ(array.data, (std::vector<float>{2.5f}));
}

TEST(Npy, ReadsNchwFloat32) {
  TempDir dir;
  std::vector<float> values(12);
  for (int i = 0; i < 12; ++i) values[i] = static_cast<float>(i) * 0.5f - 1.0f;
  std::string data(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  NpyArray array = read_npy(write_bytes(
      dir / "x.npy", npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 2, 2), }", data)));
  EXPECT_EQ(array.shape, (std::vector<int64_t>{1, 3, 2, 2}));
  EXPECT_EQ(array.data, values);
}

TEST(Npy, ReadsFloat64) {
  TempDir dir;
  NpyArray array = read_npy(write_bytes(
      dir / "d.npy", npy_v1("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }",
                            raw<double>({1.0, -2.5, 1e-3, 3.0e38}))));
  EXPECT_EQ(array.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(array.data, (std::vector<float>{1.0f, -2.5f, 1e-3f, 3.0e38f}));
}

TEST(Npy, ReadsIntegerTypes) {
  TempDir dir;
  auto read = [&](const char* descr, const std::string& data) {
    std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (3,), }";
    return read_npy(write_bytes(dir / "i.npy", npy_v1(dict, data))).data;
  };
  const std::vector<float> mixed{-128, 0, 127};
  EXPECT_EQ(read("|i1", raw<int8_t>({-128, 0, 127})), mixed);
  EXPECT_EQ(read("|u1", raw<uint8_t>({0, 1, 255})), (std::vector<float>{0, 1, 255}));
  EXPECT_EQ(read("<i2", raw<int16_t>({-128, 0, 127})), mixed);
  EXPECT_EQ(read("<u2", raw<uint16_t>({0, 1, 65535})), (std::vector<float>{0, 1, 65535}));
  EXPECT_EQ(read("<i4", raw<int32_t>({-128, 0, 127})), mixed);
  EXPECT_EQ(read("<u4", raw<uint32_t>({0, 7, 1u << 24})), (std::vector<float>{0, 7, 16777216.0f}));
  EXPECT_EQ(read("<i8", raw<int64_t>({-128, 0, 127})), mixed);
  EXPECT_EQ(read("<u8", raw<uint64_t>({0, 1, 1ull << 40})), (std::vector<float>{0, 1, 1099511627776.0f}));
}

TEST(Npy, ReadsVersion2And3) {
  TempDir dir;
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 2, 2), }";
  std::vector<float> values{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  std::string data(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  std::string v2 = npy_v2(dict, data);
  ASSERT_EQ((v2.size() - data.size()) % 64, 0u);
  NpyArray array = read_npy(write_bytes(dir / "v2.npy", v2));
  EXPECT_EQ(array.shape, (std::vector<int64_t>{1, 3, 2, 2}));
  EXPECT_EQ(array.data, values);
  EXPECT_EQ(read_npy(write_bytes(dir / "v3.npy", npy_v2(dict, data, '\x03'))).data, values);
}

TEST(Npy, HeaderToleratesWhitespaceQuotesOrderAndNumpyGrowthPadding) {
  TempDir dir;
  std::string data = raw<float>({1, 2, 3, 4, 5, 6});
  NpyArray a = read_npy(write_bytes(
      dir / "a.npy",
      npy_v1("  {\n \"shape\" :( 2 ,\t3 , ) ,\"fortran_order\":False,'descr':'<f4'}  ", data)));
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  // numpy >= 1.24 leaves room for the first axis to grow: 20 extra spaces before the padding.
  NpyArray b = read_npy(write_bytes(
      dir / "b.npy", npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }" +
                                std::string(20, ' '), data)));
  EXPECT_EQ(b.shape, (std::vector<int64_t>{2, 3}));
  // Python 2 numpy wrote longs with an L suffix.
  NpyArray c = read_npy(write_bytes(
      dir / "c.npy", npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }", data)));
  EXPECT_EQ(c.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(c.data, a.data);
}

TEST(Npy, RoundTrip) {
  TempDir dir;
  struct Case {
    std::vector<int64_t> shape;
    std::vector<float> data;
  };
  std::vector<Case> cases{
      {{}, {42.0f}},
      {{3}, {1.0f, -0.0f, 3.5f}},
      {{1, 3, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}},
      {{0}, {}},
      {{2, 0, 3}, {}},
      {{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2}, {1, 2}},
  };
  for (const Case& c : cases) {
    std::filesystem::path path = dir / "r.npy";
    write_npy(path, c.shape, c.data);
    std::string bytes = read_bytes(path);
    ASSERT_GE(bytes.size(), 10u);
    std::size_t header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
    EXPECT_EQ((10 + header_len) % 64, 0u) << "header is not padded to 64 bytes";
    EXPECT_EQ(bytes[10 + header_len - 1], '\n');
    EXPECT_EQ(bytes.size(), 10 + header_len + c.data.size() * sizeof(float));
    NpyArray back = read_npy(path);
    EXPECT_EQ(back.shape, c.shape);
    EXPECT_EQ(back.data, c.data);
  }
}

TEST(Npy, WritesNumpyShapeSpelling) {
  TempDir dir;
  std::vector<int64_t> shape{1, 3, 2, 2};
  std::vector<float> data(12, 0.0f);
  write_npy(dir / "x.npy", shape, data);
  std::string bytes = read_bytes(dir / "x.npy");
  EXPECT_EQ(bytes.substr(10, 65), "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 2, 2), }");
  write_npy(dir / "s.npy", std::vector<int64_t>{}, std::vector<float>{1.0f});
  EXPECT_EQ(read_bytes(dir / "s.npy").substr(10, 55), "{'descr': '<f4', 'fortran_order': False, 'shape': (), }");
}

// ----------------------------------------------------------------------------------------- errors

const std::string kDict3 = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";

TEST(NpyErrors, MissingFile) {
  TempDir dir;
  expect_input_error([&] { read_npy(dir / "absent.npy"); }, "absent.npy", "No such file or directory");
}

TEST(NpyErrors, Directory) {
  TempDir dir;
  expect_input_error([&] { read_npy(dir.path()); }, "it is a directory");
}

TEST(NpyErrors, EmptyFile) {
  TempDir dir;
  expect_input_error([&] { read_npy(write_bytes(dir / "e.npy", "")); }, "e.npy", "truncated header");
}

TEST(NpyErrors, BadMagic) {
  TempDir dir;
  std::string bytes = kFloat32Vector;
  bytes[1] = 'n';
  expect_input_error([&] { read_npy(write_bytes(dir / "m.npy", bytes)); }, "m.npy", "not a .npy file");
}

TEST(NpyErrors, UnsupportedVersion) {
  TempDir dir;
  std::string bytes = kFloat32Vector;
  bytes[6] = '\x04';
  expect_input_error([&] { read_npy(write_bytes(dir / "v.npy", bytes)); }, "version 4.0");
}

TEST(NpyErrors, TruncatedHeader) {
  TempDir dir;
  expect_input_error([&] { read_npy(write_bytes(dir / "h.npy", kFloat32Vector.substr(0, 9))); },
                     "truncated header");
  expect_input_error([&] { read_npy(write_bytes(dir / "h.npy", kFloat32Vector.substr(0, 60))); },
                     "truncated header", "expected 118 bytes");
}

TEST(NpyErrors, MalformedHeader) {
  TempDir dir;
  auto read_dict = [&](const std::string& dict) { read_npy(write_bytes(dir / "d.npy", npy_v1(dict, raw<float>({1, 2, 3})))); };
  expect_input_error([&] { read_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), "); },
                     "malformed .npy header");
  expect_input_error([&] { read_dict("{'descr': '<f4', 'fortran_order': Nope, 'shape': (3,), }"); },
                     "expected True or False");
  expect_input_error([&] { read_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (-3,), }"); },
                     "non-negative integer");
  expect_input_error([&] { read_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (3,) }x"); },
                     "after the closing");
  expect_input_error([&] { read_dict("{'descr': '<f4', 'fortran_order': False}"); }, "lacks 'shape'");
  expect_input_error([&] { read_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'x': 1}"); },
                     "unknown key 'x'");
  expect_input_error([&] { read_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}"); },
                     "too large");
}

TEST(NpyErrors, FortranOrder) {
  TempDir dir;
  std::string bytes = npy_v1("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", raw<float>({1, 2, 3, 4}));
  expect_input_error([&] { read_npy(write_bytes(dir / "f.npy", bytes)); }, "f.npy", "Fortran order");
}

TEST(NpyErrors, UnsupportedDtype) {
  TempDir dir;
  auto read_descr = [&](const std::string& descr) {
    read_npy(write_bytes(dir / "t.npy",
                         npy_v1("{'descr': '" + descr + "', 'fortran_order': False, 'shape': (1,), }",
                                std::string(8, '\0'))));
  };
  expect_input_error([&] { read_descr("<c8"); }, "dtype '<c8'", "not supported", "float32");
  expect_input_error([&] { read_descr(">f4"); }, "dtype '>f4'", "big-endian");
  expect_input_error([&] { read_descr("<f2"); }, "dtype '<f2'");
  expect_input_error([&] { read_descr("<U16"); }, "dtype '<U16'");
  expect_input_error([&] { read_descr("|b1"); }, "dtype '|b1'");
}

TEST(NpyErrors, TruncatedData) {
  TempDir dir;
  std::string bytes = kFloat32Vector.substr(0, kFloat32Vector.size() - 1);
  expect_input_error([&] { read_npy(write_bytes(dir / "t.npy", bytes)); }, "t.npy", "truncated data",
                     "need 12 bytes", "has 11");
}

TEST(NpyErrors, SizeMismatch) {
  TempDir dir;
  std::string bytes = kFloat32Vector + std::string(4, '\0');
  expect_input_error([&] { read_npy(write_bytes(dir / "t.npy", bytes)); }, "size mismatch", "has 16");
}

TEST(NpyErrors, HugeShapeIsRejectedWithoutAllocating) {
  TempDir dir;
  std::string bytes = npy_v1("{'descr': '<f4', 'fortran_order': False, 'shape': (4000000000, 4000000000), }", "");
  expect_input_error([&] { read_npy(write_bytes(dir / "h.npy", bytes)); }, "h.npy");
}

TEST(NpyErrors, WriteToMissingDirectory) {
  TempDir dir;
  std::vector<int64_t> shape{1};
  std::vector<float> data{1};
  std::filesystem::path path = dir / "no_such_dir" / "x.npy";
  expect_input_error([&] { write_npy(path, shape, data); }, path.string(), "does not exist");
}

TEST(NpyErrors, WriteShapeMismatch) {
  TempDir dir;
  std::vector<float> data{1, 2, 3};
  expect_input_error([&] { write_npy(dir / "x.npy", std::vector<int64_t>{2, 2}, data); },
                     "4 elements", "data has 3");
  expect_input_error([&] { write_npy(dir / "x.npy", std::vector<int64_t>{-1}, data); }, "negative");
}

}  // namespace
}  // namespace co_up::graph
