#include "graph/image.h"

#include <csetjmp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <jpeglib.h>
#include <png.h>

#include "tests/io/test_files.h"

namespace co_up::graph {
namespace {

using test::expect_input_error;
using test::read_bytes;
using test::TempDir;
using test::write_bytes;

// The known 2x2 picture:  red    green
//                         blue   (10, 20, 30)
const std::vector<uint8_t> kRgb2x2{255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30};

// The tensor it must become with mean 0, std 1, plain resize to 2x2: planes R, G, B.
const std::vector<float> kNchw2x2{1, 0, 0, 10 / 255.0f, 0, 1, 0, 20 / 255.0f, 0, 0, 1, 30 / 255.0f};

ImagePreprocess plain(int width, int height) {
  ImagePreprocess pre;
  pre.width = width;
  pre.height = height;
  pre.mean = {0, 0, 0};
  pre.std = {1, 1, 1};
  pre.resize_shorter_then_center_crop = false;
  return pre;
}

void expect_near_all(const std::vector<float>& actual, const std::vector<float>& expected,
                     float tolerance = 1e-6f) {
  ASSERT_EQ(actual.size(), expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], tolerance) << "at element " << i;
  }
}

std::string ppm_p6(int width, int height, const std::vector<uint8_t>& rgb) {
  std::string bytes = "P6\n" + std::to_string(width) + " " + std::to_string(height) + "\n255\n";
  bytes.append(rgb.begin(), rgb.end());
  return bytes;
}

// Writes a PNG with libpng. `rows` holds the packed rows exactly as libpng expects them for this
// color type and bit depth (16-bit samples big-endian). Returns false on a libpng error.
bool write_png(const std::filesystem::path& path, uint32_t width, uint32_t height, int color_type,
               int bit_depth, const std::vector<std::vector<uint8_t>>& rows,
               const std::vector<png_color>& palette = {}, bool interlace = false) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) return false;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  std::vector<png_bytep> pointers;
  for (const auto& row : rows) pointers.push_back(const_cast<png_bytep>(row.data()));
  // Nothing below allocates until the jump target is gone: longjmp must not skip a destructor.
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    std::fclose(file);
    return false;
  }
  png_init_io(png, file);
  png_set_IHDR(png, info, width, height, bit_depth, color_type,
               interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  if (!palette.empty()) {
    png_set_PLTE(png, info, palette.data(), static_cast<int>(palette.size()));
  }
  png_write_info(png, info);
  png_write_image(png, pointers.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return std::fclose(file) == 0;
}

std::vector<std::vector<uint8_t>> rows_of(const std::vector<uint8_t>& pixels, std::size_t row_bytes) {
  std::vector<std::vector<uint8_t>> rows;
  for (std::size_t at = 0; at < pixels.size(); at += row_bytes) {
    rows.emplace_back(pixels.begin() + static_cast<std::ptrdiff_t>(at),
                      pixels.begin() + static_cast<std::ptrdiff_t>(at + row_bytes));
  }
  return rows;
}

// Writes a JPEG with libjpeg at quality 100 without chroma subsampling, so colours come back
// within a few levels. libjpeg's default error handler exits, which is fine for valid input.
void write_jpeg(const std::filesystem::path& path, int width, int height, int components,
                const std::vector<uint8_t>& pixels) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr);
  jpeg_compress_struct compress{};
  jpeg_error_mgr error{};
  compress.err = jpeg_std_error(&error);
  jpeg_create_compress(&compress);
  jpeg_stdio_dest(&compress, file);
  compress.image_width = static_cast<JDIMENSION>(width);
  compress.image_height = static_cast<JDIMENSION>(height);
  compress.input_components = components;
  compress.in_color_space = components == 3 ? JCS_RGB : JCS_GRAYSCALE;
  jpeg_set_defaults(&compress);
  jpeg_set_quality(&compress, 100, TRUE);
  for (int c = 0; c < compress.num_components; ++c) {
    compress.comp_info[c].h_samp_factor = 1;
    compress.comp_info[c].v_samp_factor = 1;
  }
  jpeg_start_compress(&compress, TRUE);
  while (compress.next_scanline < compress.image_height) {
    auto* row = const_cast<JSAMPROW>(pixels.data() + compress.next_scanline * width * components);
    jpeg_write_scanlines(&compress, &row, 1);
  }
  jpeg_finish_compress(&compress);
  jpeg_destroy_compress(&compress);
  ASSERT_EQ(std::fclose(file), 0);
}

// ------------------------------------------------------------------------------------------- PPM

TEST(Image, PpmP6KnownPixels) {
  TempDir dir;
  auto path = write_bytes(dir / "a.ppm", ppm_p6(2, 2, kRgb2x2));
  expect_near_all(load_image_nchw(path, plain(2, 2)), kNchw2x2);
}

TEST(Image, DetectsFormatByContentNotExtension) {
  TempDir dir;
  auto path = write_bytes(dir / "picture.jpg", ppm_p6(2, 2, kRgb2x2));
  expect_near_all(load_image_nchw(path, plain(2, 2)), kNchw2x2);
}

TEST(Image, PpmP3WithComments) {
  TempDir dir;
  auto path = write_bytes(dir / "a.ppm",
                          "P3\n# made by hand\n2 # width\n2\n255\n"
                          "255 0 0   0 255 0\n0 0 255  10 20 30\n");
  expect_near_all(load_image_nchw(path, plain(2, 2)), kNchw2x2);
}

TEST(Image, Ppm16Bit) {
  TempDir dir;
  std::string bytes = "P6 1 1 65535\n";
  bytes += std::string("\xff\xff\x80\x00\x00\x01", 6);
  auto tensor = load_image_nchw(write_bytes(dir / "a.ppm", bytes), plain(1, 1));
  expect_near_all(tensor, {1.0f, 32768 / 65535.0f, 1 / 65535.0f});
}

TEST(Image, MeanStdAndBgr) {
  TempDir dir;
  auto path = write_bytes(dir / "a.ppm", ppm_p6(2, 2, kRgb2x2));
  ImagePreprocess pre = plain(2, 2);
  pre.mean = {0.5f, 0.25f, 0.125f};
  pre.std = {0.5f, 2.0f, 4.0f};
  std::vector<float> expected(12);
  for (int c = 0; c < 3; ++c) {
    for (int i = 0; i < 4; ++i) expected[c * 4 + i] = (kNchw2x2[c * 4 + i] - pre.mean[c]) / pre.std[c];
  }
  expect_near_all(load_image_nchw(path, pre), expected);

  // BGR: plane 0 is blue; mean/std are indexed by output channel.
  pre.bgr = true;
  for (int c = 0; c < 3; ++c) {
    for (int i = 0; i < 4; ++i) expected[c * 4 + i] = (kNchw2x2[(2 - c) * 4 + i] - pre.mean[c]) / pre.std[c];
  }
  expect_near_all(load_image_nchw(path, pre), expected);
}

// ---------------------------------------------------------------------------------------- resize

TEST(Resize, BilinearUpscaleMatchesHalfPixelInterpolation) {
  TempDir dir;
  // One row, two pixels: gray 0 and gray 200; enlarged to 4 wide, 1 high.
  auto path = write_bytes(dir / "a.ppm", ppm_p6(2, 1, {0, 0, 0, 200, 200, 200}));
  auto tensor = load_image_nchw(path, plain(4, 1));
  // Source positions -0.25 (clamped), 0.25, 0.75, 1.25 (clamped).
  std::vector<float> row{0, 50, 150, 200};
  std::vector<float> expected;
  for (int c = 0; c < 3; ++c) {
    for (float v : row) expected.push_back(v / 255.0f);
  }
  expect_near_all(tensor, expected, 1e-5f);
}

TEST(Resize, BilinearDownscaleUsesEverySourcePixel) {
  TempDir dir;
  // A horizontal ramp 0, 70, 140, 210 halved: the triangle filter widened to 2 source pixels gives
  // weights 3/7, 3/7, 1/7 -> 50 and 1/7, 3/7, 3/7 -> 160 (what PIL's BILINEAR gives).
  std::vector<uint8_t> pixels;
  for (int y = 0; y < 2; ++y) {
    for (uint8_t v : {0, 70, 140, 210}) pixels.insert(pixels.end(), {v, v, v});
  }
  auto tensor = load_image_nchw(write_bytes(dir / "a.ppm", ppm_p6(4, 2, pixels)), plain(2, 1));
  expect_near_all(tensor, {50 / 255.0f, 160 / 255.0f, 50 / 255.0f, 160 / 255.0f, 50 / 255.0f, 160 / 255.0f},
                  1e-5f);
}

TEST(Resize, CenterCropKeepsTheMiddle) {
  TempDir dir;
  // 4x2 image, 2x2 network input: covering 2*256/224 on both axes keeps 4x2, the crop starts at
  // column 1, so the output is columns 1 and 2 exactly.
  std::vector<uint8_t> pixels;
  for (int y = 0; y < 2; ++y) {
    for (int x = 0; x < 4; ++x) {
      auto v = static_cast<uint8_t>(10 * x + 100 * y);
      pixels.insert(pixels.end(), {v, v, v});
    }
  }
  ImagePreprocess pre = plain(2, 2);
  pre.resize_shorter_then_center_crop = true;
  auto tensor = load_image_nchw(write_bytes(dir / "a.ppm", ppm_p6(4, 2, pixels)), pre);
  std::vector<float> plane{10, 20, 110, 120};
  std::vector<float> expected;
  for (int c = 0; c < 3; ++c) {
    for (float v : plane) expected.push_back(v / 255.0f);
  }
  expect_near_all(tensor, expected, 1e-5f);
}

TEST(Resize, DefaultsGiveImagenetTensor) {
  TempDir dir;
  // A uniform 500x375 gray picture: whatever the crop, every value is (128/255 - mean) / std.
  std::vector<uint8_t> pixels(500 * 375 * 3, 128);
  auto tensor = load_image_nchw(write_bytes(dir / "a.ppm", ppm_p6(500, 375, pixels)), ImagePreprocess{});
  ASSERT_EQ(tensor.size(), 3u * 224 * 224);
  ImagePreprocess pre;
  for (int c = 0; c < 3; ++c) {
    float expected = (128 / 255.0f - pre.mean[c]) / pre.std[c];
    EXPECT_NEAR(tensor[c * 224 * 224], expected, 1e-5f);
    EXPECT_NEAR(tensor[c * 224 * 224 + 224 * 224 - 1], expected, 1e-5f);
  }
}

// ------------------------------------------------------------------------------------------- PNG

TEST(Png, Rgb8) {
  TempDir dir;
  ASSERT_TRUE(write_png(dir / "a.png", 2, 2, PNG_COLOR_TYPE_RGB, 8, rows_of(kRgb2x2, 6)));
  expect_near_all(load_image_nchw(dir / "a.png", plain(2, 2)), kNchw2x2);
}

TEST(Png, RgbaDropsAlpha) {
  TempDir dir;
  std::vector<uint8_t> rgba;
  for (std::size_t i = 0; i < 4; ++i) {
    rgba.insert(rgba.end(), {kRgb2x2[i * 3], kRgb2x2[i * 3 + 1], kRgb2x2[i * 3 + 2], static_cast<uint8_t>(i * 60)});
  }
  ASSERT_TRUE(write_png(dir / "a.png", 2, 2, PNG_COLOR_TYPE_RGB_ALPHA, 8, rows_of(rgba, 8)));
  expect_near_all(load_image_nchw(dir / "a.png", plain(2, 2)), kNchw2x2);
}

TEST(Png, Rgb16KeepsPrecision) {
  TempDir dir;
  // One pixel (65535, 256, 1), big-endian as PNG stores it.
  ASSERT_TRUE(write_png(dir / "a.png", 1, 1, PNG_COLOR_TYPE_RGB, 16, {{0xff, 0xff, 0x01, 0x00, 0x00, 0x01}}));
  expect_near_all(load_image_nchw(dir / "a.png", plain(1, 1)), {1.0f, 256 / 65535.0f, 1 / 65535.0f});
}

TEST(Png, GrayBecomesRgb) {
  TempDir dir;
  ASSERT_TRUE(write_png(dir / "g8.png", 2, 1, PNG_COLOR_TYPE_GRAY, 8, {{0, 51}}));
  expect_near_all(load_image_nchw(dir / "g8.png", plain(2, 1)), {0, 0.2f, 0, 0.2f, 0, 0.2f});
  // 1-bit gray: bits 1, 0 -> 255, 0.
  ASSERT_TRUE(write_png(dir / "g1.png", 2, 1, PNG_COLOR_TYPE_GRAY, 1, {{0x80}}));
  expect_near_all(load_image_nchw(dir / "g1.png", plain(2, 1)), {1, 0, 1, 0, 1, 0});
  // 16-bit gray with alpha.
  ASSERT_TRUE(write_png(dir / "ga16.png", 1, 1, PNG_COLOR_TYPE_GRAY_ALPHA, 16, {{0x80, 0x00, 0x12, 0x34}}));
  float v = 32768 / 65535.0f;
  expect_near_all(load_image_nchw(dir / "ga16.png", plain(1, 1)), {v, v, v});
}

TEST(Png, PaletteBecomesRgb) {
  TempDir dir;
  std::vector<png_color> palette{{255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {10, 20, 30}};
  // 2-bit indices 0 1 / 2 3, packed high bits first.
  ASSERT_TRUE(write_png(dir / "p.png", 2, 2, PNG_COLOR_TYPE_PALETTE, 2, {{0x10}, {0xb0}}, palette));
  expect_near_all(load_image_nchw(dir / "p.png", plain(2, 2)), kNchw2x2);
}

TEST(Png, InterlacedEqualsPlain) {
  TempDir dir;
  std::vector<uint8_t> pixels(9 * 7 * 3);
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 37 % 251);
  ASSERT_TRUE(write_png(dir / "i.png", 9, 7, PNG_COLOR_TYPE_RGB, 8, rows_of(pixels, 27), {}, true));
  write_bytes(dir / "i.ppm", ppm_p6(9, 7, pixels));
  expect_near_all(load_image_nchw(dir / "i.png", plain(9, 7)), load_image_nchw(dir / "i.ppm", plain(9, 7)));
}

TEST(Png, CorruptAndTruncatedAreInputErrors) {
  TempDir dir;
  std::vector<uint8_t> pixels(16 * 16 * 3);
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 13);
  ASSERT_TRUE(write_png(dir / "good.png", 16, 16, PNG_COLOR_TYPE_RGB, 8, rows_of(pixels, 48)));
  std::string good = read_bytes(dir / "good.png");
  ASSERT_GT(good.size(), 100u);

  auto truncated = write_bytes(dir / "t.png", good.substr(0, good.size() / 2));
  expect_input_error([&] { load_image_nchw(truncated, plain(2, 2)); }, "t.png", "corrupt PNG");

  auto header_only = write_bytes(dir / "h.png", good.substr(0, 20));
  expect_input_error([&] { load_image_nchw(header_only, plain(2, 2)); }, "corrupt PNG");

  std::string flipped = good;
  for (std::size_t i = 60; i < 80; ++i) flipped[i] = static_cast<char>(flipped[i] ^ 0x5a);
  auto damaged = write_bytes(dir / "d.png", flipped);
  expect_input_error([&] { load_image_nchw(damaged, plain(2, 2)); }, "corrupt PNG");
}

TEST(Png, ZeroWidthIsInputError) {
  TempDir dir;
  // A hand-made IHDR with width 0; libpng rejects it (its CRC check or its IHDR check).
  std::string bytes("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR\x00\x00\x00\x00\x00\x00\x00\x02\x08\x02\x00\x00\x00"
                    "\x00\x00\x00\x00", 33);
  expect_input_error([&] { load_image_nchw(write_bytes(dir / "z.png", bytes), plain(2, 2)); }, "z.png");
}

// ------------------------------------------------------------------------------------------ JPEG

TEST(Jpeg, RgbKnownPixelsWithinJpegError) {
  TempDir dir;
  // 8x8 blocks of the 2x2 colours, so that every block is uniform and survives compression.
  std::vector<uint8_t> pixels(16 * 16 * 3);
  for (int y = 0; y < 16; ++y) {
    for (int x = 0; x < 16; ++x) {
      int source = (y / 8) * 2 + x / 8;
      for (int c = 0; c < 3; ++c) pixels[(y * 16 + x) * 3 + c] = kRgb2x2[source * 3 + c];
    }
  }
  write_jpeg(dir / "a.jpg", 16, 16, 3, pixels);
  auto tensor = load_image_nchw(dir / "a.jpg", plain(16, 16));
  ASSERT_EQ(tensor.size(), 3u * 16 * 16);
  for (int c = 0; c < 3; ++c) {
    for (int quadrant = 0; quadrant < 4; ++quadrant) {
      int y = (quadrant / 2) * 8 + 4, x = (quadrant % 2) * 8 + 4;  // a block centre
      EXPECT_NEAR(tensor[c * 256 + y * 16 + x], kNchw2x2[c * 4 + quadrant], 4 / 255.0f)
          << "channel " << c << " quadrant " << quadrant;
    }
  }
}

TEST(Jpeg, GrayBecomesRgb) {
  TempDir dir;
  write_jpeg(dir / "g.jpg", 8, 8, 1, std::vector<uint8_t>(64, 100));
  auto tensor = load_image_nchw(dir / "g.jpg", plain(1, 1));
  expect_near_all(tensor, {100 / 255.0f, 100 / 255.0f, 100 / 255.0f}, 2 / 255.0f);
}

TEST(Jpeg, CorruptAndTruncatedAreInputErrors) {
  TempDir dir;
  std::vector<uint8_t> pixels(32 * 32 * 3);
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 7);
  write_jpeg(dir / "good.jpg", 32, 32, 3, pixels);
  std::string good = read_bytes(dir / "good.jpg");

  auto truncated = write_bytes(dir / "t.jpg", good.substr(0, good.size() * 2 / 3));
  expect_input_error([&] { load_image_nchw(truncated, plain(2, 2)); }, "t.jpg", "JPEG");

  auto header_only = write_bytes(dir / "h.jpg", good.substr(0, 40));
  expect_input_error([&] { load_image_nchw(header_only, plain(2, 2)); }, "JPEG");

  auto garbage = write_bytes(dir / "g.jpg", std::string("\xff\xd8\xff\xe0garbage-garbage-garbage", 26));
  expect_input_error([&] { load_image_nchw(garbage, plain(2, 2)); }, "corrupt");
}

// ---------------------------------------------------------------------------------------- errors

TEST(ImageErrors, MissingFile) {
  TempDir dir;
  expect_input_error([&] { load_image_nchw(dir / "absent.png", plain(2, 2)); }, "absent.png",
                     "No such file or directory");
}

TEST(ImageErrors, UnknownFormatShowsBytesAndAcceptedFormats) {
  TempDir dir;
  auto path = write_bytes(dir / "a.bmp", std::string("BM6\x00\x00\x00", 6));
  expect_input_error([&] { load_image_nchw(path, plain(2, 2)); }, "a.bmp", "42 4d 36 00", "PPM", "PNG",
                     "JPEG");
  auto pgm = write_bytes(dir / "a.pgm", "P5 1 1 255\n\x10");
  expect_input_error([&] { load_image_nchw(pgm, plain(2, 2)); }, "PGM");
  auto empty = write_bytes(dir / "e.png", "");
  expect_input_error([&] { load_image_nchw(empty, plain(2, 2)); }, "empty");
}

TEST(ImageErrors, BadPpm) {
  TempDir dir;
  auto zero = write_bytes(dir / "z.ppm", "P6 0 2 255\n");
  expect_input_error([&] { load_image_nchw(zero, plain(2, 2)); }, "zero size");
  auto truncated = write_bytes(dir / "t.ppm", ppm_p6(2, 2, kRgb2x2).substr(0, 20));
  expect_input_error([&] { load_image_nchw(truncated, plain(2, 2)); }, "truncated");
  auto no_maxval = write_bytes(dir / "m.ppm", "P6 2 2");
  expect_input_error([&] { load_image_nchw(no_maxval, plain(2, 2)); }, "maxval");
  auto over = write_bytes(dir / "o.ppm", "P3 1 1 100\n1 2 101\n");
  expect_input_error([&] { load_image_nchw(over, plain(2, 2)); }, "exceeds maxval");
  auto huge = write_bytes(dir / "h.ppm", "P6 100000 100000 255\n");
  expect_input_error([&] { load_image_nchw(huge, plain(2, 2)); }, "shrink it");
}

TEST(ImageErrors, BadPreprocessing) {
  TempDir dir;
  auto path = write_bytes(dir / "a.ppm", ppm_p6(2, 2, kRgb2x2));
  expect_input_error([&] { load_image_nchw(path, plain(0, 2)); }, "0x2");
  ImagePreprocess pre = plain(2, 2);
  pre.std[1] = 0;
  expect_input_error([&] { load_image_nchw(path, pre); }, "channel 1");
}

// ---------------------------------------------------------------------------------------- labels

TEST(Labels, OnePerLine) {
  TempDir dir;
  auto path = write_bytes(dir / "l.txt", "\xef\xbb\xbftench\r\ngoldfish\n\ngreat white shark\n\n\n");
  EXPECT_EQ(read_labels(path), (std::vector<std::string>{"tench", "goldfish", "", "great white shark"}));
  EXPECT_EQ(read_labels(write_bytes(dir / "m.txt", "a\nb")), (std::vector<std::string>{"a", "b"}));
}

TEST(Labels, Errors) {
  TempDir dir;
  expect_input_error([&] { read_labels(dir / "absent.txt"); }, "absent.txt", "No such file");
  expect_input_error([&] { read_labels(write_bytes(dir / "e.txt", "")); }, "e.txt", "no labels");
  expect_input_error([&] { read_labels(write_bytes(dir / "w.txt", "\n \n\n")); }, "no labels");
}

// ----------------------------------------------------------------------------------------- top_k

TEST(TopK, SortedDescendingTiesByIndex) {
  std::vector<float> scores{0.1f, 0.7f, 0.3f, 0.7f, -1.0f};
  auto top = top_k(scores, 3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].index, 1);
  EXPECT_EQ(top[1].index, 3);
  EXPECT_EQ(top[2].index, 2);
  EXPECT_FLOAT_EQ(top[0].score, 0.7f);
  EXPECT_FLOAT_EQ(top[2].score, 0.3f);
}

TEST(TopK, EdgeCases) {
  std::vector<float> scores{2.0f, std::numeric_limits<float>::quiet_NaN(), 5.0f};
  auto all = top_k(scores, 10);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].index, 2);
  EXPECT_EQ(all[1].index, 0);
  EXPECT_EQ(all[2].index, 1);  // NaN last
  EXPECT_TRUE(top_k(scores, 0).empty());
  EXPECT_TRUE(top_k(scores, -1).empty());
  EXPECT_TRUE(top_k(std::span<const float>(), 5).empty());
}

}  // namespace
}  // namespace co_up::graph
