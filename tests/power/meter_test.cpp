// External meter logs (power/meter_log.h, meter_alignment.h, serial_meter.h): parsing and its
// malformed-line policy, clock alignment by the tag edges, per-layer power from samples slower
// than the layers, and the live serial path through a pseudo-terminal the test writes into.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "power/external_meter.h"
#include "power/gpio_tagger.h"
#include "power/meter_alignment.h"
#include "power/meter_log.h"
#include "power/power_sampler.h"
#include "power/serial_meter.h"
#include "profiler/events.h"

namespace co_up::power {
namespace {

using ::testing::HasSubstr;

// ---------------------------------------------------------------------------------------------
// A synthetic run and the log a meter would have written of it.

struct Scenario {
  int frames = 2500;
  std::vector<double> layer_ms = {0.4, 1.1, 0.7, 2.3, 0.5, 1.6};  // all shorter than the period
  std::vector<double> layer_mw = {1500, 3200, 900, 2600, 4100, 1800};
  double idle_mw = 600;
  double gap_min_ms = 0.3, gap_max_ms = 3.0;  // idle between frames
  double period_ms = 2.9, period_jitter_ms = 0.15;
  double offset_ms = 123456.7;  // meter time at the run's first tag edge
  double drift_ppm = 3000;      // a ceramic resonator
  double noise_mw = 30;
  bool integer_times = true;  // millis()
  double window_ms = 0;       // the meter averages over this (0: instantaneous)
  bool code_mode = false;
  double lead_ms = 500, tail_ms = 300;  // log before the first / after the last edge (< 0: cut)
  bool identical_frames = false;
  uint64_t seed = 7;
};

struct Synthetic {
  std::vector<profiler::LayerSpan> spans;
  std::vector<RecordingTagSink::Edge> edges;
  std::string log_text;
  int64_t first_edge_ns = 0;
  std::vector<double> truth_mj;  // per layer, mean per frame
};

Synthetic synthesize(const Scenario& sc) {
  Synthetic out;
  std::mt19937_64 rng(sc.seed);
  std::uniform_real_distribution<double> unit(0, 1);
  std::normal_distribution<double> noise(0, sc.noise_mw);
  const size_t layers = sc.layer_ms.size();
  int64_t t = 1'000'000'000'000;  // host CLOCK_MONOTONIC ns
  std::vector<double> total_ms(layers, 0);
  for (int f = 0; f < sc.frames; ++f) {
    const double gap = sc.identical_frames ? (sc.gap_min_ms + sc.gap_max_ms) / 2
                                           : sc.gap_min_ms + (sc.gap_max_ms - sc.gap_min_ms) * unit(rng);
    t += static_cast<int64_t>(gap * 1e6);
    for (uint32_t l = 0; l < layers; ++l) {
      const double ms = sc.layer_ms[l] * (sc.identical_frames ? 1.0 : 0.95 + 0.1 * unit(rng));
      const int64_t end = t + static_cast<int64_t>(ms * 1e6);
      out.spans.push_back({'B', l, static_cast<uint64_t>(f), t, end});
      // The tagger's observer runs just outside the span recorder's timestamps.
      out.edges.push_back({t - 500, sc.code_mode ? l + 1 : 1u});
      out.edges.push_back({end + 500, 0u});
      total_ms[l] += ms;
      t = end + 2'000;  // 2 us between layers
    }
  }
  for (size_t l = 0; l < layers; ++l) out.truth_mj.push_back(sc.layer_mw[l] * total_ms[l] / sc.frames / 1000.0);
  out.first_edge_ns = out.edges.front().t_ns;
  const int64_t last_edge_ns = out.edges.back().t_ns;

  auto state = [&](int64_t h) {
    auto it = std::upper_bound(out.edges.begin(), out.edges.end(), h,
                               [](int64_t x, const RecordingTagSink::Edge& e) { return x < e.t_ns; });
    return it == out.edges.begin() ? 0u : std::prev(it)->value;
  };
  // Average power over [a, b] (a == b: at a).
  auto power = [&](int64_t a, int64_t b) {
    auto it = std::upper_bound(out.spans.begin(), out.spans.end(), a,
                               [](int64_t x, const profiler::LayerSpan& s) { return x < s.begin_ns; });
    if (it != out.spans.begin()) --it;
    if (a == b) return it->begin_ns <= a && a < it->end_ns ? sc.layer_mw[it->layer] : sc.idle_mw;
    double energy = 0, covered = 0;
    for (; it != out.spans.end() && it->begin_ns < b; ++it) {
      const double o = static_cast<double>(std::min(b, it->end_ns) - std::max(a, it->begin_ns));
      if (o > 0) energy += o * sc.layer_mw[it->layer], covered += o;
    }
    const double width = static_cast<double>(b - a);
    return (energy + (width - covered) * sc.idle_mw) / width;
  };
  const double rate = 1 + sc.drift_ppm * 1e-6;
  auto meter_of = [&](int64_t h) { return sc.offset_ms + static_cast<double>(h - out.first_edge_ns) * 1e-6 * rate; };
  auto host_of = [&](double m) { return out.first_edge_ns + static_cast<int64_t>((m - sc.offset_ms) / rate * 1e6); };

  // A serial log opened mid-line, and a sketch's banner.
  out.log_text = "67,2734.5\nINA219 ready\n";
  char line[96];
  for (double m = meter_of(out.first_edge_ns) - sc.lead_ms; m < meter_of(last_edge_ns) + sc.tail_ms;
       m += sc.period_ms + sc.period_jitter_ms * (2 * unit(rng) - 1)) {
    const int64_t h = host_of(m);
    const double mw = power(h - static_cast<int64_t>(sc.window_ms * 1e6), h) + noise(rng);
    if (sc.integer_times) {
      std::snprintf(line, sizeof line, "%u,%.0f,%.1f\r\n", state(h), std::floor(m), mw);
    } else {
      std::snprintf(line, sizeof line, "%u,%.3f,%.1f\r\n", state(h), m, mw);
    }
    out.log_text += line;
  }
  return out;
}

MeterLog parse(const std::string& text, const std::string& name = "synthetic") {
  MeterLogParser parser(name);
  // Uneven chunks: lines straddle feeds as they do on a serial port.
  for (size_t i = 0; i < text.size(); i += 37) parser.feed(std::string_view(text).substr(i, 37));
  parser.finish();
  MeterLog log = parser.take();
  check_meter_log(log);
  return log;
}

void expect_energy_within(const Synthetic& syn, const MeterPower& power, double tolerance) {
  ASSERT_EQ(power.summary.layers.size(), syn.truth_mj.size());
  EXPECT_TRUE(power.undetermined.empty());
  for (const profiler::LayerPower& l : power.summary.layers) {
    EXPECT_EQ(l.source, "meter");
    EXPECT_NEAR(l.energy_mj, syn.truth_mj[l.layer], tolerance * syn.truth_mj[l.layer])
        << "layer " << l.layer << " power " << l.power_mw << " +- " << l.power_stderr_mw;
  }
}

// The claim: a known per-layer power profile, a meter clock with offset and drift, noise,
// and a sample period (2.9 ms) longer than every layer (0.4-2.3 ms) -> the energy of every layer
// within 2%. The meter stamps micros() / 1000 (decimals).
TEST(MeterAlignmentTest, RecoversPerLayerEnergyFromASlowDriftingNoisyMeter) {
  Scenario sc;
  sc.integer_times = false;
  const Synthetic syn = synthesize(sc);
  const MeterLog log = parse(syn.log_text);
  EXPECT_EQ(log.malformed, 2u);  // the half line and the banner
  const MeterClockFit fit = align_meter_clock(log, syn.edges);
  EXPECT_EQ(fit.warning, "");
  EXPECT_NEAR(fit.drift_ppm(), sc.drift_ppm, 2);
  EXPECT_NEAR(fit.offset_ms, sc.offset_ms, 0.01);
  EXPECT_DOUBLE_EQ(fit.quantum_ms, 0.0);
  EXPECT_GT(fit.edges_matched, 1000u);
  EXPECT_GT(fit.pin_agreement, 0.99);
  EXPECT_LT(fit.offset_uncertainty_ms, 0.02);  // the 0.01 ms edge tolerance on each side, about
  // An edge lies anywhere in its sample interval and is matched from the interval's middle: the
  // RMS residual of a uniform spread, period / sqrt(12) (0.837 ms; over 1000+ edges its sampling
  // error is about 2 %). Matching from an interval's end would give period / sqrt(3).
  EXPECT_NEAR(fit.residual_ms, sc.period_ms / std::sqrt(12.0), 0.05 * sc.period_ms / std::sqrt(12.0));
  const MeterPower power = attribute_meter_power(log, fit, syn.spans);
  expect_energy_within(syn, power, 0.02);
  ASSERT_TRUE(power.summary.idle_mw.has_value());
  EXPECT_NEAR(*power.summary.idle_mw, sc.idle_mw, 0.02 * sc.idle_mw);
  EXPECT_GT(power.summary.meter_samples_used, 5000u);
  EXPECT_GT(power.summary.fit_residual_mw, 0.9 * sc.noise_mw);  // the model explains all but the noise
  EXPECT_LT(power.summary.fit_residual_mw, 1.5 * sc.noise_mw);

  // Splitting each sample over the spans it overlaps (the step function of the sensor path)
  // blurs neighbours instead: layer 4 (0.5 ms at 4100 mW between 2600 and 1800 mW layers) comes
  // out far too low. Kept here so the reason for solving for the powers stays visible.
  profiler::PowerSamples samples;
  samples.names = {"meter"};
  samples.processors = {""};
  for (const MeterSample& x : log.samples) {
    samples.t_ns.push_back(fit.to_host_ns(x.t_ms));
    samples.mw.push_back(x.mw);
  }
  const auto split = profiler::summarize_layer_power(syn.spans, samples, {});
  EXPECT_LT(split[4].energy_mj, 0.85 * syn.truth_mj[4]);
}

// An Arduino printing millis(): each sample was taken somewhere in its millisecond. Alignment
// stays as precise; attribution averages over that millisecond, which costs precision on the
// shortest layers (their standard error says so) but not accuracy: every layer within three
// standard errors, and the frame's energy within 2%.
TEST(MeterAlignmentTest, IntegerMillisecondStamps) {
  const Scenario sc;
  const Synthetic syn = synthesize(sc);
  const MeterLog log = parse(syn.log_text);
  const MeterClockFit fit = align_meter_clock(log, syn.edges);
  EXPECT_EQ(fit.warning, "");
  EXPECT_DOUBLE_EQ(fit.quantum_ms, 1.0);
  EXPECT_NEAR(fit.drift_ppm(), sc.drift_ppm, 5);
  EXPECT_NEAR(fit.offset_ms, sc.offset_ms, 0.05);
  EXPECT_GT(fit.pin_agreement, 0.99);
  const MeterPower power = attribute_meter_power(log, fit, syn.spans);
  ASSERT_EQ(power.summary.layers.size(), syn.truth_mj.size());
  double frame = 0, truth_frame = 0;
  for (const profiler::LayerPower& l : power.summary.layers) {
    const double truth_mw = sc.layer_mw[l.layer];
    EXPECT_NEAR(l.power_mw, truth_mw, 3 * l.power_stderr_mw + 0.01 * truth_mw) << "layer " << l.layer;
    EXPECT_LT(l.power_stderr_mw, 0.06 * truth_mw);
    frame += l.energy_mj;
    truth_frame += syn.truth_mj[l.layer];
  }
  EXPECT_NEAR(frame, truth_frame, 0.02 * truth_frame);
}

// Code mode (the meter reads the layer's code), micros()-style decimal stamps, and a meter that
// averages over its whole sample period.
TEST(MeterAlignmentTest, CodeModeAndAnAveragingMeter) {
  Scenario sc;
  sc.code_mode = true;
  sc.integer_times = false;
  sc.window_ms = sc.period_ms;
  sc.drift_ppm = -1800;
  sc.seed = 11;
  const Synthetic syn = synthesize(sc);
  const MeterLog log = parse(syn.log_text);
  const MeterClockFit fit = align_meter_clock(log, syn.edges);
  EXPECT_EQ(fit.warning, "");
  EXPECT_DOUBLE_EQ(fit.quantum_ms, 0.0);
  EXPECT_NEAR(fit.drift_ppm(), sc.drift_ppm, 5);
  EXPECT_NEAR(fit.offset_ms, sc.offset_ms, 0.02);
  expect_energy_within(syn, attribute_meter_power(log, fit, syn.spans, sc.window_ms), 0.02);
}

// The log starts 0.4 s into the run (its first edges are missing) and the meter saw extra pulses
// after the run (extra edges): the pairing that explains the most samples still wins.
TEST(MeterAlignmentTest, MissingEdgesAtTheStartAndExtraEdgesAtTheEnd) {
  Scenario sc;
  sc.lead_ms = -400;
  sc.integer_times = false;
  sc.seed = 3;
  Synthetic syn = synthesize(sc);
  std::string& text = syn.log_text;
  // Append pulses after the run: the pin goes high for a while, twice.
  const double last = std::strtod(text.substr(text.rfind(',', text.rfind(',') - 1) + 1).c_str(), nullptr);
  char line[64];
  for (int i = 1; i <= 40; ++i) {
    std::snprintf(line, sizeof line, "%d,%.3f,%.1f\n", (i / 10) % 2, last + 3 * i, 650.0);
    text += line;
  }
  const MeterLog log = parse(text);
  const MeterClockFit fit = align_meter_clock(log, syn.edges);
  EXPECT_NEAR(fit.offset_ms, sc.offset_ms, 0.01);
  EXPECT_NEAR(fit.drift_ppm(), sc.drift_ppm, 2);
  expect_energy_within(syn, attribute_meter_power(log, fit, syn.spans), 0.02);
}

// Identical frames and a log that covers neither end: no way to tell which frame is which.
TEST(MeterAlignmentTest, AmbiguousLogIsReported) {
  Scenario sc;
  sc.identical_frames = true;
  sc.frames = 400;
  sc.lead_ms = -300;
  sc.tail_ms = -300;
  sc.noise_mw = 0;
  const Synthetic syn = synthesize(sc);
  const MeterClockFit fit = align_meter_clock(parse(syn.log_text), syn.edges);
  EXPECT_THAT(fit.warning, HasSubstr("match several frames"));
}

TEST(MeterAlignmentTest, ClearErrorsWhenItCannotAlign) {
  MeterLog log = parse("1,10,500\n1,12,500\n1,14,500\n");
  try {
    align_meter_clock(log, {{100, 1}, {200, 0}});
    FAIL();
  } catch (const RuntimeError& e) {
    EXPECT_THAT(e.what(), HasSubstr("its pin reads 1 in every sample"));
  }
  EXPECT_THROW(align_meter_clock(log, {}), InputError);  // no tags recorded
}

// ---------------------------------------------------------------------------------------------
// Parsing.

TEST(MeterLogTest, ParsesLinesWithSpacesCarriageReturnsAndAHeader) {
  const MeterLog log = parse("pin,time_ms,power_mW\r\n# comment\n\n 1 , 10 , 2500.5\r\n0,11.25,-3\n");
  ASSERT_EQ(log.samples.size(), 2u);
  EXPECT_EQ(log.malformed, 0u);
  EXPECT_EQ(log.samples[0].pin, 1u);
  EXPECT_DOUBLE_EQ(log.samples[0].t_ms, 10);
  EXPECT_DOUBLE_EQ(log.samples[0].mw, 2500.5);
  EXPECT_DOUBLE_EQ(log.samples[1].t_ms, 11.25);
  EXPECT_TRUE(log.received_ns.empty());
}

TEST(MeterLogTest, MalformedLinesAreSkippedAndCountedUpTo10Percent) {
  std::string text;
  for (int i = 0; i < 40; ++i) text += "1," + std::to_string(i) + ",100\n";
  text.insert(text.find("1,5,"), "1,5,1OO\n");  // line 6
  text += "1,2,3,4\n";
  const MeterLog log = parse(text);
  EXPECT_EQ(log.samples.size(), 40u);
  EXPECT_EQ(log.malformed, 2u);
  EXPECT_EQ(log.first_malformed_line, 6u);
  EXPECT_EQ(describe_skipped(log), "skipped 2 malformed line(s) of 42 (first: line 6: '1,5,1OO')");
}

TEST(MeterLogTest, MostlyGarbageIsOneErrorNamingTheFirstBadLine) {
  std::string text = "1,1,100\n1,2,100\n";
  for (int i = 0; i < 5; ++i) text += "\x9f\x13\xe2garbage at the wrong baud rate\n";
  try {
    parse(text, "meter.csv");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("meter log 'meter.csv': 5 of 7 lines are not pin,time_ms,power_mW (first: line 3: "));
    EXPECT_THAT(e.what(), HasSubstr("baud rate"));
  }
  try {
    parse("no data here\n", "empty.csv");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("no line of 1 is pin,time_ms,power_mW (line 1: 'no data here')"));
  }
}

TEST(MeterLogTest, ClockGoingBackwardsIsAMeterReset) {
  const MeterLog log = parse("0,5000,1\n0,5001,1\n0,3,2\n1,4,2\n");
  ASSERT_EQ(log.samples.size(), 2u);
  EXPECT_DOUBLE_EQ(log.samples[0].t_ms, 3);
  EXPECT_EQ(log.dropped_before_restart, 2u);
  EXPECT_THAT(describe_skipped(log), HasSubstr("meter reset"));
}

TEST(MeterLogTest, ReadsASavedFileAndNamesAMissingOne) {
  const std::string path = ::testing::TempDir() + "co_up_meter_log_" + std::to_string(::getpid()) + ".csv";
  std::ofstream(path) << "1,1,10\n0,2,20";  // no final newline
  const MeterLog log = read_meter_log(path);
  EXPECT_EQ(log.samples.size(), 2u);
  std::remove(path.c_str());
  try {
    read_meter_log(path);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot read meter log '" + path + "'"));
  }
}

// ---------------------------------------------------------------------------------------------
// The live path: a pseudo-terminal stands in for the meter's USB serial port.

class Pty {
 public:
  Pty() {
    master_ = ::posix_openpt(O_RDWR | O_NOCTTY);
    if (master_ < 0 || ::grantpt(master_) != 0 || ::unlockpt(master_) != 0) return;
    name_ = ::ptsname(master_);
  }
  ~Pty() { close_master(); }
  Pty(const Pty&) = delete;
  Pty& operator=(const Pty&) = delete;
  bool ok() const { return !name_.empty(); }
  const std::string& slave() const { return name_; }
  void write(const std::string& text) const {
    ASSERT_EQ(::write(master_, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  }
  void close_master() {
    if (master_ >= 0) ::close(master_);
    master_ = -1;
  }

 private:
  int master_ = -1;
  std::string name_;
};

// Bytes waiting in a terminal's input queue.
int pending_input(int fd) {
  int n = -1;
  return ::ioctl(fd, FIONREAD, &n) == 0 ? n : -1;
}

TEST(SerialMeterTest, ReadsLinesFromAPtyInRawModeAndRestoresTheSettings) {
  Pty pty;
  ASSERT_TRUE(pty.ok()) << "no pseudo-terminals here";
  // The test keeps its own descriptor on the slave to see the settings before and after.
  const int watch = ::open(pty.slave().c_str(), O_RDWR | O_NOCTTY);
  ASSERT_GE(watch, 0);
  termios before{};
  ASSERT_EQ(::tcgetattr(watch, &before), 0);
  ASSERT_TRUE(before.c_lflag & ICANON);  // a fresh pty is in canonical mode
  const int64_t start_ns = profiler::now_ns();
  {
    SerialMeter meter(pty.slave());
    termios during{};
    ASSERT_EQ(::tcgetattr(watch, &during), 0);
    EXPECT_FALSE(during.c_lflag & (ICANON | ECHO));
    EXPECT_EQ(during.c_cflag & CSIZE, static_cast<tcflag_t>(CS8));
    EXPECT_FALSE(during.c_cflag & (PARENB | CSTOPB));
    EXPECT_EQ(::cfgetispeed(&during), static_cast<speed_t>(B115200));
    meter.start();
    pty.write("tail of a line from before\n1,100,2500.0\r\n0,10");  // a line split across writes
    // Once the meter's thread has read the first part (nothing left in the slave's input queue;
    // under a sanitizer or on a busy host it may start late), the rest comes 20 ms later.
    for (int i = 0; i < 2000 && pending_input(watch) > 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_EQ(pending_input(watch), 0) << "the meter did not read the pty within 2 s";
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    pty.write("2,1800.5\r\n");
    for (int i = 0; i < 200; ++i) pty.write("1," + std::to_string(103 + i) + ",2600\r\n");
    const MeterLog log = meter.stop(std::chrono::milliseconds(200));
    EXPECT_EQ(meter.error(), "");
    ASSERT_EQ(log.samples.size(), 202u);
    EXPECT_EQ(log.malformed, 1u);
    EXPECT_DOUBLE_EQ(log.samples[1].t_ms, 102);
    EXPECT_DOUBLE_EQ(log.samples[1].mw, 1800.5);
    ASSERT_EQ(log.received_ns.size(), log.samples.size());
    EXPECT_GE(log.received_ns.front(), start_ns);
    EXPECT_LE(log.received_ns.back(), profiler::now_ns());
    EXPECT_TRUE(std::is_sorted(log.received_ns.begin(), log.received_ns.end()));
    // The split line completed 20 ms after its start arrived.
    EXPECT_GE(log.received_ns[1] - log.received_ns[0], 10'000'000);
  }
  termios after{};
  ASSERT_EQ(::tcgetattr(watch, &after), 0);
  EXPECT_TRUE(after.c_lflag & ICANON);
  EXPECT_EQ(after.c_lflag, before.c_lflag);
  EXPECT_EQ(after.c_iflag, before.c_iflag);
  EXPECT_EQ(after.c_cflag, before.c_cflag);
  ::close(watch);
}

TEST(SerialMeterTest, StopsPromptlyAndReportsAHangUp) {
  Pty pty;
  ASSERT_TRUE(pty.ok()) << "no pseudo-terminals here";
  SerialMeter meter(pty.slave());
  meter.start();
  pty.write("1,1,5\n1,2,5\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  pty.close_master();  // the meter unplugged
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  const auto t0 = std::chrono::steady_clock::now();
  const MeterLog log = meter.stop(std::chrono::milliseconds(0));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(500));
  EXPECT_EQ(log.samples.size(), 2u);
  EXPECT_THAT(meter.error(), ::testing::AnyOf(HasSubstr("hung up"), HasSubstr("closed"), HasSubstr("read failed")));
}

TEST(SerialMeterTest, NotATerminalOrMissingIsAClearError) {
  try {
    SerialMeter meter("/nonexistent/ttyACM9");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot open meter '/nonexistent/ttyACM9': ENOENT"));
  }
  try {
    SerialMeter meter("/dev/null");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("meter '/dev/null' is not a serial device"));
    EXPECT_THAT(e.what(), HasSubstr("--meter-log=FILE"));
  }
}

// End to end, live: the tagger drives a "wire" (through a RecordingTagSink, as co_up does), a
// fake meter thread samples the wire and its power on its own drifting clock and prints lines into
// the pty, SerialMeter reads them; alignment and attribution recover the per-layer power. Real
// threads and real time, so the check is on power (exact per value of the wire), not on timing.
TEST(SerialMeterTest, LiveTaggedRunThroughAPty) {
  Pty pty;
  ASSERT_TRUE(pty.ok()) << "no pseudo-terminals here";
  struct WireSink : TagSink {
    std::atomic<unsigned> value{0};
    void set(unsigned v) override { value.store(v); }
  } wire;
  RecordingTagSink recorder(&wire);
  GpioTagger tagger(recorder, GpioSpec{"sim", {0, 1, 2}, "code"}, std::nullopt);
  LayerSpanRecorder spans;
  const double power_mw[] = {700, 2100, 1300, 3100};  // idle, layers 0..2 (by code)
  const double layer_ms[] = {2.5, 1.2, 3.7};

  SerialMeter meter(pty.slave());
  meter.start();
  std::atomic<bool> stop{false};
  const int64_t t0 = profiler::now_ns();
  std::thread fake_meter([&] {
    char line[64];
    while (!stop.load()) {
      // A real meter reads its pin and its clock together; a thread can be preempted between the
      // two. Keep only readings where the wire held still across a short clock read.
      int64_t now = 0;
      unsigned v = 0;
      for (;;) {
        const unsigned before = wire.value.load();
        now = profiler::now_ns();
        v = wire.value.load();
        if (before == v && profiler::now_ns() - now < 20'000) break;
      }
      const double meter_ms = 5000.0 + static_cast<double>(now - t0) * 1e-6 * (1 + 2000e-6);
      const int n = std::snprintf(line, sizeof line, "%u,%.3f,%.1f\r\n", v, meter_ms, power_mw[v]);
      pty.write(std::string(line, static_cast<size_t>(n)));
      std::this_thread::sleep_for(std::chrono::microseconds(700));
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  const int frames = 120;
  for (int f = 0; f < frames; ++f) {
    for (uint32_t l = 0; l < 3; ++l) {
      tagger.on_layer_begin('B', l, static_cast<uint64_t>(f));
      spans.on_layer_begin('B', l, static_cast<uint64_t>(f));
      const int64_t until = profiler::now_ns() + static_cast<int64_t>(layer_ms[l] * 1e6);
      while (profiler::now_ns() < until) {
      }
      spans.on_layer_end('B', l, static_cast<uint64_t>(f));
      tagger.on_layer_end('B', l, static_cast<uint64_t>(f));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(800));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  stop.store(true);
  fake_meter.join();
  const MeterLog log = meter.stop();
  EXPECT_EQ(meter.error(), "");
  check_meter_log(log);
  ASSERT_GT(log.samples.size(), 100u);
  const MeterClockFit fit = align_meter_clock(log, recorder.edges());
  EXPECT_GT(fit.pin_agreement, 0.95) << fit.warning;
  // 120 frames (about 1 s): jitter of a tenth of a millisecond in the threads' clock reads moves
  // the drift by about 100 ppm; 300 ppm leaves room for a loaded host, and a fit that ignored the
  // drift (0 ppm) or got its sign wrong fails.
  EXPECT_NEAR(fit.drift_ppm(), 2000, 300) << describe_fit(fit);
  // What the alignment is for: a meter time maps back to the host time it was taken at. The fake
  // meter's clock is known exactly (5000 ms at t0, 2000 ppm fast); at the run's first and last tag
  // edge the fit must be off by less than one sample period (0.7 ms), the resolution a meter
  // sampling that often can give.
  const auto& edges = recorder.edges();
  ASSERT_GE(edges.size(), 2u);
  for (const auto& edge : {edges.front(), edges.back()}) {
    const double meter_ms = 5000.0 + static_cast<double>(edge.t_ns - t0) * 1e-6 * (1 + 2000e-6);
    EXPECT_NEAR(static_cast<double>(fit.to_host_ns(meter_ms) - edge.t_ns), 0.0, 700'000.0)
        << "meter time " << meter_ms << " ms maps to the wrong host time; " << describe_fit(fit);
  }
  const MeterPower power = attribute_meter_power(log, fit, spans.spans());
  ASSERT_EQ(power.summary.layers.size(), 3u);
  for (const auto& l : power.summary.layers) {
    EXPECT_NEAR(l.power_mw, power_mw[l.layer + 1], 0.05 * power_mw[l.layer + 1]) << "layer " << l.layer;
  }
}

// What `co_up --meter-log=FILE` does after a run, on a run the test drives: the tags go through
// ExternalMeter's sink to the "lines" (a recording sink here), a log is written from what the lines
// held, and report_meter() prints the alignment and the table and fills the profile's summary.
TEST(ExternalMeterTest, ReportsFromASavedLog) {
  const std::string path = ::testing::TempDir() + "co_up_external_meter_" + std::to_string(::getpid()) + ".csv";
  RecordingTagSink lines;
  ExternalMeter meter({"", path, 0}, true, lines);
  GpioTagger tagger(meter.sink(), GpioSpec{"sim", {0, 1}, "code"}, std::nullopt);
  LayerSpanRecorder spans;
  meter.start();
  // 200 frames (0.45 s): a 1.3 ms meter sees few of these sub-period layers change, and with 60
  // frames the edges it does see left the rate free over +-700 ppm; 200 pin it within +-100.
  // Layer times vary frame to frame (a fixed pattern, not random): with exactly 0.7 and 1.1 ms on
  // a host whose busy waits are exact, the edges fall on the same few phases of the 1.3 ms
  // sampling, and the rate came out 180 ppm off in 2 of 5 runs.
  for (int f = 0; f < 200; ++f) {
    for (uint32_t l = 0; l < 2; ++l) {
      tagger.on_layer_begin('L', l, static_cast<uint64_t>(f));
      spans.on_layer_begin('L', l, static_cast<uint64_t>(f));
      const int64_t layer_ns = l == 0 ? 700'000 + (f * 53'000) % 200'000 : 1'100'000 + (f * 97'000) % 300'000;
      const int64_t until = profiler::now_ns() + layer_ns;
      while (profiler::now_ns() < until) {
      }
      spans.on_layer_end('L', l, static_cast<uint64_t>(f));
      tagger.on_layer_end('L', l, static_cast<uint64_t>(f));
    }
    const int64_t until = profiler::now_ns() + 300'000;
    while (profiler::now_ns() < until) {
    }
  }
  // The meter: every 1.3 ms (slower than both layers) on a clock 777 ms ahead, 1500 ppm fast.
  const auto edges = lines.edges();
  ASSERT_FALSE(edges.empty());
  const double power_mw[] = {500, 1800, 3300};  // idle, code 1 (layer 0), code 2 (layer 1)
  std::ofstream log(path);
  log << "pin,time_ms,power_mW\n";
  size_t e = 0;
  for (int64_t t = edges.front().t_ns - 20'000'000; t < edges.back().t_ns + 20'000'000; t += 1'300'000) {
    while (e < edges.size() && edges[e].t_ns <= t) ++e;
    const unsigned pin = e == 0 ? 0 : edges[e - 1].value;
    const double meter_ms = 777.0 + static_cast<double>(t - edges.front().t_ns) * 1e-6 * (1 + 1500e-6);
    log << pin << "," << std::fixed << meter_ms << "," << power_mw[pin] << "\n";
  }
  log.close();

  std::ostringstream out, err;
  std::vector<profiler::PowerSummary> summaries;
  const profiler::PowerSamples samples = report_meter(meter, spans.spans(), out, err, summaries);
  std::remove(path.c_str());
  EXPECT_EQ(err.str(), "");
  EXPECT_THAT(out.str(), HasSubstr("meter clock: offset 7"));
  EXPECT_THAT(out.str(), HasSubstr("power per layer (meter"));
  ASSERT_EQ(summaries.size(), 1u);
  EXPECT_EQ(summaries[0].source, "meter");
  ASSERT_EQ(summaries[0].layers.size(), 2u);
  // The log was written from the very edges co_up recorded, without noise: with the clock aligned
  // exactly the fit is exact and its standard error 0; a clock off by a fraction of a sample
  // period puts a few boundary samples in the wrong layer, and the standard error then grows with
  // the misfit (to about 1 % of the power on a host slowed by ThreadSanitizer). Either way the
  // error must lie within three standard errors, which must stay under 2 %.
  for (const profiler::LayerPower& l : summaries[0].layers) {
    const double truth = power_mw[l.layer + 1];
    EXPECT_NEAR(l.power_mw, truth, 3 * l.power_stderr_mw + 0.01) << "layer " << l.layer;
    EXPECT_GE(l.power_stderr_mw, 0.0) << "layer " << l.layer;
    EXPECT_LT(l.power_stderr_mw, 0.02 * truth) << "layer " << l.layer;
  }
  const nlohmann::json j = profiler::power_summary_to_json(summaries[0]);
  EXPECT_EQ(j["source"], "meter");
  // The log's clock is 777 ms ahead and 1500 ppm fast by construction, sampled every 1.3 ms: the
  // offset is known to well under a sample period, and 200 frames (0.45 s) pin the rate within
  // +-100 ppm (see above).
  EXPECT_NEAR(j["meter_clock"]["offset_ms"].get<double>(), 777.0, 0.1);
  EXPECT_NEAR(j["meter_clock"]["drift_ppm"].get<double>(), 1500, 100);
  EXPECT_EQ(j["layers"][0]["power_stderr_mw"].get<double>(), summaries[0].layers[0].power_stderr_mw);
  EXPECT_FALSE(samples.t_ns.empty());  // for the Chrome trace's meter counter

  // A log that is not there: a warning, no summary, nothing thrown.
  ExternalMeter missing({"", path, 0}, true, lines);
  std::ostringstream out2, err2;
  EXPECT_TRUE(report_meter(missing, spans.spans(), out2, err2, summaries).t_ns.empty());
  EXPECT_THAT(err2.str(), HasSubstr("co_up: warning: no power from the meter: cannot read meter log"));
  EXPECT_EQ(summaries.size(), 1u);
  EXPECT_THROW(ExternalMeter({"", path, 0}, false, lines), InputError);  // no tags to align by
}

}  // namespace
}  // namespace co_up::power
