// NumPy .npy files: reference inputs and outputs for tests, the CLI and the examples.
//
// Format: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
// Errors: both functions throw co_up::InputError (core/error.h) with a message that names the file,
// says what is wrong and what to do. Both are thread-safe for distinct paths.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

namespace co_up::graph {

// A dense C-order array. data.size() is the product of shape (1 for a 0-d array, shape {}).
struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

// Reads a C-order .npy file, format version 1.0, 2.0 or 3.0. float32 ('<f4') is read as is; float64
// and signed/unsigned integers of 8, 16, 32 and 64 bits are converted to float (large integers and
// float64 values round to the nearest float). Little-endian only ('<', '|' or '=' byte order).
// Throws InputError on a missing or unreadable file, bad magic, truncated header or data, trailing
// bytes after the data, fortran_order True, an unsupported dtype, or a malformed header.
NpyArray read_npy(const std::filesystem::path& path);

// Writes data as '<f4', format version 1.0, C order, the header padded with spaces to a multiple of
// 64 bytes as numpy does. Throws InputError when a dimension is negative, when the product of shape
// differs from data.size(), or when the file cannot be written (the message has the path and the
// errno text). A failed write may leave a partial file behind.
void write_npy(const std::filesystem::path& path, std::span<const int64_t> shape,
               std::span<const float> data);

}  // namespace co_up::graph
