#include "graph/npy.h"

#include <array>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <string_view>

#include "core/error.h"
#include "core/io/input_file.h"
#include "core/io/output_file.h"

namespace co_up::graph {
namespace {

// Data is copied to and from memory without byte swapping.
static_assert(std::endian::native == std::endian::little, "npy I/O assumes a little-endian host");

constexpr std::array<char, 6> kMagic{'\x93', 'N', 'U', 'M', 'P', 'Y'};
// numpy aligns the start of the data to 64 bytes so that it can be memory-mapped.
constexpr std::size_t kAlign = 64;
// The largest header numpy itself will read; anything bigger is garbage, not a header.
constexpr std::size_t kMaxHeaderLen = 1 << 20;

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

std::string quoted(const std::filesystem::path& path) { return "'" + path.string() + "'"; }

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what) {
  throw InputError(quoted(path) + ": " + what);
}

enum class Kind { kFloat, kSigned, kUnsigned };

struct Dtype {
  Kind kind;
  std::size_t size;
};

// Reads exactly `size` bytes or says why not; `what` names the part being read for the message.
void read_exact(std::FILE* file, const std::filesystem::path& path, void* out, std::size_t size,
                const char* what) {
  if (size == 0) return;
  std::size_t got = std::fread(out, 1, size, file);
  if (got == size) return;
  if (std::ferror(file)) {
    fail(path, std::string("cannot read ") + what + ": " + std::strerror(errno));
  }
  fail(path, std::string("truncated ") + what + ": expected " + std::to_string(size) +
                 " bytes, file ends after " + std::to_string(got) +
                 " (the file is damaged or was not fully written; write it again)");
}

// A parser for the header, a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 2, 2), }
// Accepts what Python's literal syntax accepts for these three keys, with any whitespace.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::filesystem::path& path)
      : text_(text), path_(path) {}

  void parse(std::string& out_descr, bool& out_fortran_order, std::vector<int64_t>& out_shape) {
    bool have_descr = false, have_order = false, have_shape = false;
    skip_space();
    expect('{');
    skip_space();
    while (!at('}')) {
      std::string key = parse_string();
      skip_space();
      expect(':');
      skip_space();
      if (key == "descr") {
        out_descr = parse_string();
        have_descr = true;
      } else if (key == "fortran_order") {
        out_fortran_order = parse_bool();
        have_order = true;
      } else if (key == "shape") {
        out_shape = parse_shape();
        have_shape = true;
      } else {
        fail_here("unknown key '" + key + "' (expected 'descr', 'fortran_order', 'shape')");
      }
      skip_space();
      if (at(',')) {
        ++pos_;
        skip_space();
      } else if (!at('}')) {
        fail_here("expected ',' or '}'");
      }
    }
    ++pos_;
    skip_space();
    if (pos_ != text_.size()) fail_here("unexpected text after the closing '}'");
    if (!have_descr || !have_order || !have_shape) {
      fail(path_, "header lacks " + std::string(!have_descr ? "'descr'"
                                                : !have_order ? "'fortran_order'"
                                                              : "'shape'") +
                      ": not a valid .npy file (write it with numpy.save)");
    }
  }

 private:
  [[noreturn]] void fail_here(const std::string& what) const {
    // Enough of the header to see the mistake; a damaged file can have a megabyte of it.
    constexpr std::size_t kShown = 160;
    std::string shown(text_.substr(0, kShown));
    if (text_.size() > kShown) shown += "...";
    fail(path_, "malformed .npy header at offset " + std::to_string(pos_) + ": " + what +
                    " in \"" + shown + "\" (write the file with numpy.save)");
  }

  bool at(char c) const { return pos_ < text_.size() && text_[pos_] == c; }

  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  void expect(char c) {
    if (!at(c)) fail_here(std::string("expected '") + c + "'");
    ++pos_;
  }

  std::string parse_string() {
    if (!at('\'') && !at('"')) fail_here("expected a quoted string");
    char quote = text_[pos_++];
    std::size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos) fail_here("unterminated string");
    std::string value(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return value;
  }

  bool parse_bool() {
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    fail_here("expected True or False");
  }

  int64_t parse_dim() {
    if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9') {
      fail_here("expected a non-negative integer dimension");
    }
    int64_t value = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      int digit = text_[pos_++] - '0';
      if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) fail_here("dimension too large");
      value = value * 10 + digit;
    }
    if (at('L')) ++pos_;  // Python 2 wrote longs as 3L.
    return value;
  }

  // "()", "(3,)", "(1, 3, 2, 2)", "(1, 3, 2, 2,)"; also "(3)", which numpy never writes.
  std::vector<int64_t> parse_shape() {
    std::vector<int64_t> shape;
    expect('(');
    skip_space();
    while (!at(')')) {
      shape.push_back(parse_dim());
      skip_space();
      if (at(',')) {
        ++pos_;
        skip_space();
      } else if (!at(')')) {
        fail_here("expected ',' or ')' in shape");
      }
    }
    ++pos_;
    return shape;
  }

  std::string_view text_;
  const std::filesystem::path& path_;
  std::size_t pos_ = 0;
};

Dtype parse_dtype(const std::string& descr, const std::filesystem::path& path) {
  auto unsupported = [&](const std::string& why) -> Dtype {
    fail(path, "dtype '" + descr + "' is not supported (" + why +
                   "); save the array as little-endian float32, e.g. numpy.save(f, a.astype('<f4'))");
  };
  if (descr.size() < 3) return unsupported("not a simple type string");
  char order = descr[0];
  char kind = descr[1];
  std::string_view size_text = std::string_view(descr).substr(2);
  std::size_t size = 0;
  if (size_text == "1") size = 1;
  else if (size_text == "2") size = 2;
  else if (size_text == "4") size = 4;
  else if (size_text == "8") size = 8;
  else return unsupported("readable: f4, f8, i1/i2/i4/i8, u1/u2/u4/u8");
  if (order == '>' && size > 1) return unsupported("big-endian");
  if (order != '<' && order != '|' && order != '=' && order != '>') {
    return unsupported("unknown byte order");
  }
  if (kind == 'f' && (size == 4 || size == 8)) return {Kind::kFloat, size};
  if (kind == 'i') return {Kind::kSigned, size};
  if (kind == 'u') return {Kind::kUnsigned, size};
  return unsupported("readable: f4, f8, i1/i2/i4/i8, u1/u2/u4/u8");
}

template <typename T>
void convert(const std::vector<unsigned char>& bytes, std::vector<float>& out) {
  for (std::size_t i = 0; i < out.size(); ++i) {
    T value;
    std::memcpy(&value, bytes.data() + i * sizeof(T), sizeof(T));
    out[i] = static_cast<float>(value);
  }
}

std::string format_header(std::span<const int64_t> shape) {
  std::string text = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  if (shape.size() == 1) text += ',';  // Python's one-element tuple.
  text += "), }";
  // magic (6) + version (2) + length (2) + header, ending in '\n', is a multiple of kAlign.
  std::size_t unpadded = kMagic.size() + 2 + 2 + text.size() + 1;
  text.append((kAlign - unpadded % kAlign) % kAlign, ' ');
  text += '\n';
  return text;
}

}  // namespace

NpyArray read_npy(const std::filesystem::path& path) {
  // Regular files only: a FIFO would block and a device would never end.
  io::InputFd fd = io::open_input_file(path, ".npy file");
  File file(::fdopen(fd.get(), "rb"));
  if (!file) fail(path, std::string("cannot open: ") + std::strerror(errno));
  fd.release();  // the FILE owns it now

  std::array<unsigned char, 8> preamble{};
  read_exact(file.get(), path, preamble.data(), preamble.size(), "header");
  if (std::memcmp(preamble.data(), kMagic.data(), kMagic.size()) != 0) {
    fail(path, "not a .npy file (it does not start with \"\\x93NUMPY\"); write it with numpy.save");
  }
  unsigned major = preamble[6], minor = preamble[7];
  if (major < 1 || major > 3 || minor != 0) {
    fail(path, ".npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                   " is not supported (readable: 1.0, 2.0, 3.0); write it with numpy.save");
  }
  // Version 1.0 has a 2-byte header length, 2.0 and 3.0 a 4-byte one, little-endian.
  std::size_t header_len = 0;
  if (major == 1) {
    std::array<unsigned char, 2> len{};
    read_exact(file.get(), path, len.data(), len.size(), "header");
    header_len = len[0] | (std::size_t{len[1]} << 8);
  } else {
    std::array<unsigned char, 4> len{};
    read_exact(file.get(), path, len.data(), len.size(), "header");
    header_len = len[0] | (std::size_t{len[1]} << 8) | (std::size_t{len[2]} << 16) |
                 (std::size_t{len[3]} << 24);
  }
  if (header_len > kMaxHeaderLen) {
    fail(path, "header length " + std::to_string(header_len) + " is implausible (at most " +
                   std::to_string(kMaxHeaderLen) + "); the file is damaged");
  }
  std::string header(header_len, '\0');
  read_exact(file.get(), path, header.data(), header.size(), "header");

  std::string descr;
  bool fortran_order = false;
  NpyArray array;
  HeaderParser(header, path).parse(descr, fortran_order, array.shape);
  if (fortran_order) {
    fail(path, "array is in Fortran order, only C order is supported; save it with "
               "numpy.save(f, numpy.ascontiguousarray(a))");
  }
  Dtype dtype = parse_dtype(descr, path);

  std::size_t count = 1;
  for (int64_t dim : array.shape) {
    auto udim = static_cast<std::size_t>(dim);
    if (udim != 0 && count > std::numeric_limits<std::size_t>::max() / dtype.size / udim) {
      fail(path, "shape is too large to hold in memory");
    }
    count *= udim;
  }
  std::size_t data_bytes = count * dtype.size;

  // Check the size before allocating, so that a damaged shape does not ask for terabytes.
  long data_start = std::ftell(file.get());
  if (data_start < 0 || std::fseek(file.get(), 0, SEEK_END) != 0) {
    fail(path, std::string("cannot seek: ") + std::strerror(errno));
  }
  long file_end = std::ftell(file.get());
  if (file_end < 0 || std::fseek(file.get(), data_start, SEEK_SET) != 0) {
    fail(path, std::string("cannot seek: ") + std::strerror(errno));
  }
  auto available = static_cast<std::size_t>(file_end - data_start);
  if (available != data_bytes) {
    fail(path, std::string(available < data_bytes ? "truncated data" : "size mismatch") +
                   ": shape and dtype '" + descr + "' need " + std::to_string(data_bytes) +
                   " bytes of data, the file has " + std::to_string(available) +
                   " (the file is damaged or was not fully written; write it again)");
  }

  array.data.resize(count);
  if (dtype.kind == Kind::kFloat && dtype.size == 4) {
    read_exact(file.get(), path, array.data.data(), data_bytes, "data");
    return array;
  }
  std::vector<unsigned char> bytes(data_bytes);
  read_exact(file.get(), path, bytes.data(), bytes.size(), "data");
  switch (dtype.kind) {
    case Kind::kFloat:
      convert<double>(bytes, array.data);
      break;
    case Kind::kSigned:
      if (dtype.size == 1) convert<int8_t>(bytes, array.data);
      if (dtype.size == 2) convert<int16_t>(bytes, array.data);
      if (dtype.size == 4) convert<int32_t>(bytes, array.data);
      if (dtype.size == 8) convert<int64_t>(bytes, array.data);
      break;
    case Kind::kUnsigned:
      if (dtype.size == 1) convert<uint8_t>(bytes, array.data);
      if (dtype.size == 2) convert<uint16_t>(bytes, array.data);
      if (dtype.size == 4) convert<uint32_t>(bytes, array.data);
      if (dtype.size == 8) convert<uint64_t>(bytes, array.data);
      break;
  }
  return array;
}

void write_npy(const io::OutputFile& out, std::span<const int64_t> shape,
               std::span<const float> data) {
  const std::filesystem::path& path = out.path();
  std::size_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0) {
      fail(path, "cannot write an array with negative dimension " + std::to_string(dim));
    }
    count *= static_cast<std::size_t>(dim);
  }
  if (count != data.size()) {
    fail(path, "cannot write: shape holds " + std::to_string(count) + " elements, data has " +
                   std::to_string(data.size()));
  }
  const std::string header = format_header(shape);
  if (header.size() > 0xffff) {
    fail(path, "cannot write: " + std::to_string(shape.size()) +
                   " dimensions do not fit a version 1.0 header");
  }
  // Magic, version 1.0, the header length (2 bytes, little-endian), the header.
  std::string head(kMagic.begin(), kMagic.end());
  head += {'\x01', '\x00', static_cast<char>(header.size() & 0xff), static_cast<char>(header.size() >> 8)};
  head += header;
  const std::string_view bytes(reinterpret_cast<const char*>(data.data()), data.size_bytes());
  out.write({head, bytes});
}

void write_npy(const std::filesystem::path& path, std::span<const int64_t> shape,
               std::span<const float> data) {
  write_npy(io::OutputFile::check(path, ".npy file"), shape, data);
}

}  // namespace co_up::graph
