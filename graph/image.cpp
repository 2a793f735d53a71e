#include "graph/image.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include <jpeglib.h>  // needs <cstdio> first
#include <png.h>

#include "core/error.h"
#include "core/io/input_file.h"

// libpng and libjpeg report errors by longjmp. longjmp skips destructors, so every call into them
// that can fail runs in a small function (named *_guarded) whose frame holds no object with a
// destructor and that returns false after the jump; the library state itself is owned by an RAII
// object in the caller, which frees it on every path, and the caller turns false into InputError.

namespace co_up::graph {
namespace {

// Larger images are refused rather than risking a multi-gigabyte allocation from a damaged header.
constexpr uint64_t kMaxPixels = uint64_t{1} << 27;  // 134 M pixels, e.g. 16384 x 8192
constexpr std::string_view kAccepted = "accepted formats: PPM (P6, P3), PNG, JPEG";

std::string quoted(const std::filesystem::path& path) { return "'" + path.string() + "'"; }

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what) {
  throw InputError(quoted(path) + ": " + what);
}

// Decoded pixels: interleaved RGB, width * height * 3 samples in 0..max_value, in whichever of the
// two vectors matches the source bit depth (the other stays empty).
struct RgbImage {
  int width = 0;
  int height = 0;
  float max_value = 255.0f;
  std::vector<uint8_t> samples8;
  std::vector<uint16_t> samples16;
};

void check_size(const std::filesystem::path& path, uint64_t width, uint64_t height) {
  if (width == 0 || height == 0) {
    fail(path, "image has zero size (" + std::to_string(width) + "x" + std::to_string(height) +
                   "); the file is damaged or empty");
  }
  if (width * height > kMaxPixels) {
    fail(path, "image is " + std::to_string(width) + "x" + std::to_string(height) +
                   ", more than the " + std::to_string(kMaxPixels) +
                   " pixels co_up accepts; shrink it first");
  }
}

// ---------------------------------------------------------------------------------------------- PPM

class PpmParser {
 public:
  PpmParser(std::span<const unsigned char> bytes, const std::filesystem::path& path)
      : bytes_(bytes), path_(path) {}

  RgbImage parse() {
    bool ascii = bytes_[1] == '3';
    pos_ = 2;
    uint64_t width = read_number("width");
    uint64_t height = read_number("height");
    uint64_t max_value = read_number("maxval");
    if (max_value == 0 || max_value > 65535) {
      fail(path_, "PPM maxval " + std::to_string(max_value) + " is outside 1..65535; the file is damaged");
    }
    check_size(path_, width, height);
    RgbImage image;
    image.width = static_cast<int>(width);
    image.height = static_cast<int>(height);
    image.max_value = static_cast<float>(max_value);
    std::size_t count = width * height * 3;
    if (max_value < 256) {
      image.samples8.resize(count);
    } else {
      image.samples16.resize(count);
    }
    auto store = [&](std::size_t i, uint64_t value) {
      if (value > max_value) {
        fail(path_, "PPM sample " + std::to_string(value) + " exceeds maxval " +
                        std::to_string(max_value) + "; the file is damaged");
      }
      if (max_value < 256) {
        image.samples8[i] = static_cast<uint8_t>(value);
      } else {
        image.samples16[i] = static_cast<uint16_t>(value);
      }
    };

    if (ascii) {
      for (std::size_t i = 0; i < count; ++i) store(i, read_number("sample"));
      return image;
    }
    // Binary: exactly one whitespace byte after maxval, then big-endian samples of 1 or 2 bytes.
    if (pos_ >= bytes_.size() || !is_space(bytes_[pos_])) {
      fail(path_, "PPM header must end in one whitespace byte after maxval; the file is damaged");
    }
    ++pos_;
    std::size_t sample_bytes = max_value < 256 ? 1 : 2;
    std::size_t available = pos_ <= bytes_.size() ? bytes_.size() - pos_ : 0;
    if (available < count * sample_bytes) {
      fail(path_, "PPM data is truncated: " + std::to_string(width) + "x" + std::to_string(height) +
                      " needs " + std::to_string(count * sample_bytes) + " bytes, the file has " +
                      std::to_string(available) + "; the file is damaged");
    }
    const unsigned char* data = bytes_.data() + pos_;
    for (std::size_t i = 0; i < count; ++i) {
      store(i, sample_bytes == 1 ? data[i] : (uint64_t{data[2 * i]} << 8) | data[2 * i + 1]);
    }
    return image;
  }

 private:
  static bool is_space(unsigned char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
  }

  // Skips whitespace and '#' comments (which run to the end of the line), then reads a decimal.
  uint64_t read_number(const char* what) {
    for (;;) {
      while (pos_ < bytes_.size() && is_space(bytes_[pos_])) ++pos_;
      if (pos_ < bytes_.size() && bytes_[pos_] == '#') {
        while (pos_ < bytes_.size() && bytes_[pos_] != '\n' && bytes_[pos_] != '\r') ++pos_;
        continue;
      }
      break;
    }
    if (pos_ >= bytes_.size()) {
      fail(path_, std::string("PPM file ends before its ") + what + "; the file is truncated");
    }
    if (bytes_[pos_] < '0' || bytes_[pos_] > '9') {
      fail(path_, std::string("PPM ") + what + " is not a number at byte " + std::to_string(pos_) +
                      "; the file is damaged");
    }
    uint64_t value = 0;
    while (pos_ < bytes_.size() && bytes_[pos_] >= '0' && bytes_[pos_] <= '9') {
      value = value * 10 + (bytes_[pos_++] - '0');
      if (value > (uint64_t{1} << 32)) {
        fail(path_, std::string("PPM ") + what + " is too large; the file is damaged");
      }
    }
    return value;
  }

  std::span<const unsigned char> bytes_;
  const std::filesystem::path& path_;
  std::size_t pos_ = 0;
};

// ---------------------------------------------------------------------------------------------- PNG

struct PngContext {
  std::span<const unsigned char> bytes;
  std::size_t pos = 0;
  char message[256] = "unknown error";  // written by on_png_error before it jumps
};

void on_png_error(png_structp png, png_const_charp message) {
  auto* context = static_cast<PngContext*>(png_get_error_ptr(png));
  std::snprintf(context->message, sizeof context->message, "%s", message);
  png_longjmp(png, 1);
}

// Warnings (a bad iCCP profile, an unknown chunk) do not stop decoding and are not worth a log line.
void on_png_warning(png_structp, png_const_charp) {}

void on_png_read(png_structp png, png_bytep out, std::size_t size) {
  auto* context = static_cast<PngContext*>(png_get_io_ptr(png));
  if (size > context->bytes.size() - context->pos) png_error(png, "file is truncated");
  std::memcpy(out, context->bytes.data() + context->pos, size);
  context->pos += size;
}

// Owns the libpng read and info structs.
class PngReader {
 public:
  explicit PngReader(PngContext& context) {
    png_ = png_create_read_struct(PNG_LIBPNG_VER_STRING, &context, on_png_error, on_png_warning);
    if (png_ != nullptr) info_ = png_create_info_struct(png_);
  }
  ~PngReader() { png_destroy_read_struct(&png_, info_ != nullptr ? &info_ : nullptr, nullptr); }
  PngReader(const PngReader&) = delete;
  PngReader& operator=(const PngReader&) = delete;

  png_structp png() const { return png_; }
  png_infop info() const { return info_; }

 private:
  png_structp png_ = nullptr;
  png_infop info_ = nullptr;
};

struct PngLayout {
  uint32_t width = 0;
  uint32_t height = 0;
  int bit_depth = 0;
  int channels = 0;
  std::size_t row_bytes = 0;
};

// Reads the header and sets up the transforms to 8- or 16-bit RGB. May longjmp: see the top.
bool png_read_header_guarded(png_structp png, png_infop info, PngLayout& out) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_info(png, info);
  int color_type = png_get_color_type(png, info);
  int bit_depth = png_get_bit_depth(png, info);
  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color_type == PNG_COLOR_TYPE_GRAY && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if ((color_type & PNG_COLOR_MASK_ALPHA) != 0) png_set_strip_alpha(png);
  if ((color_type & PNG_COLOR_MASK_COLOR) == 0) png_set_gray_to_rgb(png);
  if (bit_depth == 16) png_set_swap(png);  // PNG is big-endian; samples16 is native (little)
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  out.width = png_get_image_width(png, info);
  out.height = png_get_image_height(png, info);
  out.bit_depth = png_get_bit_depth(png, info);
  out.channels = png_get_channels(png, info);
  out.row_bytes = png_get_rowbytes(png, info);
  return true;
}

// Decodes all rows and reads to IEND, so that a damaged tail is caught. May longjmp: see the top.
bool png_read_pixels_guarded(png_structp png, png_infop info, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_image(png, rows);
  png_read_end(png, nullptr);
  return true;
}

RgbImage decode_png(std::span<const unsigned char> bytes, const std::filesystem::path& path) {
  PngContext context{bytes};
  PngReader reader(context);
  if (reader.png() == nullptr || reader.info() == nullptr) {
    throw RuntimeError(quoted(path) + ": cannot create a libpng decoder (out of memory?)");
  }
  auto corrupt = [&]() {
    fail(path, std::string("corrupt PNG: ") + context.message +
                   " (the file is damaged or truncated; re-export it)");
  };
  png_set_read_fn(reader.png(), &context, on_png_read);
  PngLayout layout;
  if (!png_read_header_guarded(reader.png(), reader.info(), layout)) corrupt();
  check_size(path, layout.width, layout.height);
  std::size_t sample_bytes = layout.bit_depth == 16 ? 2 : 1;
  if (layout.channels != 3 || (layout.bit_depth != 8 && layout.bit_depth != 16) ||
      layout.row_bytes != std::size_t{layout.width} * 3 * sample_bytes) {
    fail(path, "PNG decodes to " + std::to_string(layout.channels) + " channels of " +
                   std::to_string(layout.bit_depth) + " bits, not RGB; convert it to 8-bit RGB");
  }

  RgbImage image;
  image.width = static_cast<int>(layout.width);
  image.height = static_cast<int>(layout.height);
  std::size_t count = std::size_t{layout.width} * layout.height * 3;
  unsigned char* base = nullptr;
  if (sample_bytes == 1) {
    image.samples8.resize(count);
    base = image.samples8.data();
  } else {
    image.max_value = 65535.0f;
    image.samples16.resize(count);
    base = reinterpret_cast<unsigned char*>(image.samples16.data());
  }
  std::vector<png_bytep> rows(layout.height);
  for (uint32_t y = 0; y < layout.height; ++y) rows[y] = base + y * layout.row_bytes;
  if (!png_read_pixels_guarded(reader.png(), reader.info(), rows.data())) corrupt();
  return image;
}

// --------------------------------------------------------------------------------------------- JPEG

struct JpegContext {
  jpeg_decompress_struct decompress{};
  jpeg_error_mgr error{};
  std::jmp_buf jump{};
  bool created = false;
  char message[JMSG_LENGTH_MAX] = "unknown error";
};

void on_jpeg_error(j_common_ptr common) {
  auto* context = static_cast<JpegContext*>(common->client_data);
  (*common->err->format_message)(common, context->message);
  std::longjmp(context->jump, 1);
}

// libjpeg only warns about corrupt or missing data and fills the gap with gray; a classifier would
// then silently answer for a different picture, so warnings are errors here.
void on_jpeg_message(j_common_ptr common, int level) {
  if (level < 0) on_jpeg_error(common);
}

// Owns the libjpeg decompressor.
class JpegReader {
 public:
  JpegReader() {
    context_.decompress.err = jpeg_std_error(&context_.error);
    context_.error.error_exit = on_jpeg_error;
    context_.error.emit_message = on_jpeg_message;
    context_.decompress.client_data = &context_;
  }
  ~JpegReader() {
    if (context_.created) jpeg_destroy_decompress(&context_.decompress);
  }
  JpegReader(const JpegReader&) = delete;
  JpegReader& operator=(const JpegReader&) = delete;

  JpegContext& context() { return context_; }

 private:
  JpegContext context_;
};

// Creates the decompressor, reads the header and starts decoding to RGB. May longjmp: see the top.
bool jpeg_start_guarded(JpegContext& context, std::span<const unsigned char> bytes) {
  if (setjmp(context.jump)) return false;
  jpeg_create_decompress(&context.decompress);
  context.created = true;
  jpeg_mem_src(&context.decompress, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&context.decompress, TRUE);
  context.decompress.out_color_space = JCS_RGB;
  jpeg_start_decompress(&context.decompress);
  return true;
}

// Decodes all scanlines into `pixels` and reads to EOI. May longjmp: see the top.
bool jpeg_read_pixels_guarded(JpegContext& context, unsigned char* pixels, std::size_t row_bytes) {
  if (setjmp(context.jump)) return false;
  jpeg_decompress_struct& decompress = context.decompress;
  while (decompress.output_scanline < decompress.output_height) {
    JSAMPROW row = pixels + std::size_t{decompress.output_scanline} * row_bytes;
    jpeg_read_scanlines(&decompress, &row, 1);
  }
  jpeg_finish_decompress(&decompress);
  return true;
}

RgbImage decode_jpeg(std::span<const unsigned char> bytes, const std::filesystem::path& path) {
  JpegReader reader;
  JpegContext& context = reader.context();
  auto corrupt = [&]() {
    fail(path, std::string("corrupt or unsupported JPEG: ") + context.message +
                   " (the file is damaged or truncated; re-export it as baseline RGB JPEG or PNG)");
  };
  if (!jpeg_start_guarded(context, bytes)) corrupt();
  const jpeg_decompress_struct& decompress = context.decompress;
  check_size(path, decompress.output_width, decompress.output_height);
  if (decompress.output_components != 3) {
    fail(path, "JPEG decodes to " + std::to_string(decompress.output_components) +
                   " components, not RGB; convert it to RGB");
  }
  RgbImage image;
  image.width = static_cast<int>(decompress.output_width);
  image.height = static_cast<int>(decompress.output_height);
  image.samples8.resize(std::size_t{decompress.output_width} * decompress.output_height * 3);
  if (!jpeg_read_pixels_guarded(context, image.samples8.data(),
                                std::size_t{decompress.output_width} * 3)) {
    corrupt();
  }
  return image;
}

// ------------------------------------------------------------------------------------------- decode

RgbImage decode(const std::filesystem::path& path) {
  const std::string raw = io::read_input_file(path, "image", io::kMaxImageBytes);
  const std::span<const unsigned char> bytes(reinterpret_cast<const unsigned char*>(raw.data()),
                                             raw.size());
  static constexpr unsigned char kPngMagic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (bytes.size() >= 8 && std::memcmp(bytes.data(), kPngMagic, 8) == 0) return decode_png(bytes, path);
  if (bytes.size() >= 3 && bytes[0] == 0xff && bytes[1] == 0xd8 && bytes[2] == 0xff) {
    return decode_jpeg(bytes, path);
  }
  if (bytes.size() >= 2 && bytes[0] == 'P' && (bytes[1] == '6' || bytes[1] == '3')) {
    return PpmParser(bytes, path).parse();
  }
  if (bytes.empty()) fail(path, "file is empty; " + std::string(kAccepted));
  std::string start;
  for (std::size_t i = 0; i < std::min<std::size_t>(bytes.size(), 8); ++i) {
    char hex[4];
    std::snprintf(hex, sizeof hex, "%02x", bytes[i]);
    if (i > 0) start += ' ';
    start += hex;
  }
  std::string hint;
  if (bytes.size() >= 2 && bytes[0] == 'P' && bytes[1] >= '1' && bytes[1] <= '7') {
    hint = " (a PBM/PGM/PAM file, not PPM)";
  }
  fail(path, "unknown image format, file starts with " + start + hint + "; " +
                 std::string(kAccepted) + " (convert it, e.g. to PNG)");
}

// ------------------------------------------------------------------------------------------- resize

// The source pixels and weights that make one output pixel along one axis.
struct Taps {
  int first = 0;
  std::vector<float> weights;
};

// Weights of a triangle (bilinear) filter for `out_len` outputs that start at `offset` in an image
// of `resized_len` pixels made from `in_len` source pixels. When shrinking, the triangle is widened
// by the shrink factor so every source pixel contributes (PIL's BILINEAR); when enlarging this is
// plain bilinear interpolation between pixel centres, clamped at the edges.
std::vector<Taps> make_taps(int in_len, int resized_len, int offset, int out_len) {
  double scale = static_cast<double>(in_len) / resized_len;
  double support = std::max(scale, 1.0);
  std::vector<Taps> taps(static_cast<std::size_t>(out_len));
  for (int i = 0; i < out_len; ++i) {
    double center = (i + offset + 0.5) * scale;
    int lo = std::max(0, static_cast<int>(std::floor(center - support + 0.5)));
    int hi = std::min(in_len, static_cast<int>(std::floor(center + support + 0.5)));
    Taps& tap = taps[static_cast<std::size_t>(i)];
    tap.first = lo;
    double sum = 0;
    for (int x = lo; x < hi; ++x) {
      double t = std::abs((x + 0.5 - center) / support);
      double w = std::max(0.0, 1.0 - t);
      tap.weights.push_back(static_cast<float>(w));
      sum += w;
    }
    if (sum <= 0) {  // cannot happen for in_len >= 1, but never divide by zero
      tap.first = std::clamp(static_cast<int>(center), 0, in_len - 1);
      tap.weights.assign(1, 1.0f);
      continue;
    }
    for (float& w : tap.weights) w = static_cast<float>(w / sum);
  }
  return taps;
}

template <typename Sample>
std::vector<float> resize_normalise(const Sample* samples, const RgbImage& image,
                                    const ImagePreprocess& pre, int resized_w, int resized_h,
                                    int offset_x, int offset_y) {
  const int out_w = pre.width, out_h = pre.height;
  std::vector<Taps> taps_x = make_taps(image.width, resized_w, offset_x, out_w);
  std::vector<Taps> taps_y = make_taps(image.height, resized_h, offset_y, out_h);
  int row_lo = image.height, row_hi = 0;
  for (const Taps& tap : taps_y) {
    row_lo = std::min(row_lo, tap.first);
    row_hi = std::max(row_hi, tap.first + static_cast<int>(tap.weights.size()));
  }

  // Horizontal pass over the source rows the vertical pass needs: [row][x][channel].
  std::vector<float> rows(static_cast<std::size_t>(row_hi - row_lo) * out_w * 3);
  for (int y = row_lo; y < row_hi; ++y) {
    const Sample* src = samples + static_cast<std::size_t>(y) * image.width * 3;
    float* dst = rows.data() + static_cast<std::size_t>(y - row_lo) * out_w * 3;
    for (int x = 0; x < out_w; ++x) {
      const Taps& tap = taps_x[static_cast<std::size_t>(x)];
      float acc[3] = {0, 0, 0};
      for (std::size_t k = 0; k < tap.weights.size(); ++k) {
        const Sample* pixel = src + (static_cast<std::size_t>(tap.first) + k) * 3;
        for (int c = 0; c < 3; ++c) acc[c] += tap.weights[k] * static_cast<float>(pixel[c]);
      }
      for (int c = 0; c < 3; ++c) dst[x * 3 + c] = acc[c];
    }
  }

  // Vertical pass, then scale to [0, 1], normalise and write planar in the requested order.
  std::vector<float> out(static_cast<std::size_t>(3) * out_h * out_w);
  const std::size_t plane = static_cast<std::size_t>(out_h) * out_w;
  for (int y = 0; y < out_h; ++y) {
    const Taps& tap = taps_y[static_cast<std::size_t>(y)];
    for (int x = 0; x < out_w; ++x) {
      float acc[3] = {0, 0, 0};
      for (std::size_t k = 0; k < tap.weights.size(); ++k) {
        const float* pixel =
            rows.data() + ((static_cast<std::size_t>(tap.first - row_lo) + k) * out_w + x) * 3;
        for (int c = 0; c < 3; ++c) acc[c] += tap.weights[k] * pixel[c];
      }
      for (int c = 0; c < 3; ++c) {  // c is the output channel
        float value = acc[pre.bgr ? 2 - c : c] / image.max_value;
        out[c * plane + static_cast<std::size_t>(y) * out_w + x] = (value - pre.mean[c]) / pre.std[c];
      }
    }
  }
  return out;
}

void check_preprocess(const std::filesystem::path& path, const ImagePreprocess& pre) {
  constexpr int kMaxSide = 1 << 15;
  if (pre.width <= 0 || pre.height <= 0 || pre.width > kMaxSide || pre.height > kMaxSide) {
    fail(path, "network input size " + std::to_string(pre.width) + "x" + std::to_string(pre.height) +
                   " is invalid; width and height must be in 1.." + std::to_string(kMaxSide));
  }
  for (int c = 0; c < 3; ++c) {
    if (!(std::isfinite(pre.std[c]) && pre.std[c] != 0.0f) || !std::isfinite(pre.mean[c])) {
      fail(path, "normalisation for channel " + std::to_string(c) + " (mean " +
                     std::to_string(pre.mean[c]) + ", std " + std::to_string(pre.std[c]) +
                     ") is invalid; std must be finite and non-zero, mean finite");
    }
  }
}

}  // namespace

std::vector<float> load_image_nchw(const std::filesystem::path& path, const ImagePreprocess& pre) {
  check_preprocess(path, pre);
  RgbImage image = decode(path);

  int resized_w = pre.width, resized_h = pre.height, offset_x = 0, offset_y = 0;
  if (pre.resize_shorter_then_center_crop) {
    // Scale so the image covers size * 256/224 on both axes; for a square input that is the
    // shorter side. The epsilon keeps 375 * (256 / 375) from truncating to 255.
    double scale = std::max(pre.width * 256.0 / 224.0 / image.width,
                            pre.height * 256.0 / 224.0 / image.height);
    resized_w = std::max(pre.width, static_cast<int>(std::floor(image.width * scale + 1e-6)));
    resized_h = std::max(pre.height, static_cast<int>(std::floor(image.height * scale + 1e-6)));
    // torchvision's CenterCrop: round((resized - size) / 2), half to even.
    offset_x = static_cast<int>(std::nearbyint((resized_w - pre.width) / 2.0));
    offset_y = static_cast<int>(std::nearbyint((resized_h - pre.height) / 2.0));
  }
  if (!image.samples16.empty()) {
    return resize_normalise(image.samples16.data(), image, pre, resized_w, resized_h, offset_x,
                            offset_y);
  }
  return resize_normalise(image.samples8.data(), image, pre, resized_w, resized_h, offset_x,
                          offset_y);
}

std::vector<std::string> read_labels(const std::filesystem::path& path) {
  const std::string bytes = io::read_input_file(path, "labels file", io::kMaxConfigBytes);
  std::string_view text(bytes);
  if (text.starts_with("\xef\xbb\xbf")) text.remove_prefix(3);  // UTF-8 BOM from some editors
  std::vector<std::string> labels;
  while (!text.empty()) {
    std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    if (line.ends_with('\r')) line.remove_suffix(1);
    labels.emplace_back(line);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
  }
  while (!labels.empty() && labels.back().find_first_not_of(" \t") == std::string::npos) {
    labels.pop_back();
  }
  if (labels.empty()) {
    fail(path, "has no labels; expected one class label per line, line i naming class i");
  }
  return labels;
}

std::vector<Prediction> top_k(std::span<const float> scores, int k) {
  if (k <= 0) return {};
  std::vector<Prediction> all(scores.size());
  for (std::size_t i = 0; i < scores.size(); ++i) all[i] = {static_cast<int>(i), scores[i]};
  // A strict weak order even with NaN: NaN ranks last, equal scores by index.
  auto before = [](const Prediction& a, const Prediction& b) {
    bool a_nan = std::isnan(a.score), b_nan = std::isnan(b.score);
    if (a_nan != b_nan) return b_nan;
    if (!a_nan && a.score != b.score) return a.score > b.score;
    return a.index < b.index;
  };
  std::size_t n = std::min(all.size(), static_cast<std::size_t>(k));
  std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n), all.end(), before);
  all.resize(n);
  return all;
}

}  // namespace co_up::graph
