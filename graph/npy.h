// NumPy .npy files: reference inputs and outputs for tests, the CLI and the examples.
//
// Format: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
// Errors: co_up::InputError (core/error.h) for bad files and arrays, with a message that names the
// file, says what is wrong and what to do; RuntimeError when a checked output cannot be written.
// Thread-safe for distinct paths.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "core/io/output_file.h"

namespace co_up::graph {

// A dense C-order array. data.size() is the product of shape (1 for a 0-d array, shape {}).
struct NpyArray {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

// Reads a C-order .npy file, format version 1.0, 2.0 or 3.0. float32 ('<f4') is read as is; float64
// and signed/unsigned integers of 8, 16, 32 and 64 bits are converted to float (large integers and
// float64 values round to the nearest float). Little-endian only ('<', '|' or '=' byte order).
// Throws InputError on a missing or unreadable file, one that is not a regular file, bad magic, truncated header or data, trailing
// bytes after the data, fortran_order True, an unsupported dtype, or a malformed header.
NpyArray read_npy(const std::filesystem::path& path);

// Writes data as '<f4', format version 1.0, C order, the header padded with spaces to a multiple of
// 64 bytes as numpy does, through `out` (core/io/output_file.h: a regular file is replaced
// atomically, so a failed write leaves the earlier file as it was). Throws InputError when a
// dimension is negative or the product of shape differs from data.size(), RuntimeError when the
// write fails.
void write_npy(const io::OutputFile& out, std::span<const int64_t> shape,
               std::span<const float> data);
// The same to `path`, checked first (io::OutputFile::check: InputError for a path that cannot be
// written).
void write_npy(const std::filesystem::path& path, std::span<const int64_t> shape,
               std::span<const float> data);

}  // namespace co_up::graph
