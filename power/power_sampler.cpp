#include "power/power_sampler.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "core/io/input_file.h"
#include "profiler/events.h"

namespace co_up::power {
namespace {

int open_sensor_file(const std::filesystem::path& path, const SensorSpec& s) {
  // Non-blocking: a FIFO given as a sensor must not hang the run (and is refused below).
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat st {};
  if (fd >= 0 && (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
    ::close(fd);
    throw InputError("power sensor '" + s.name + "': " + path.string() + " is " +
                     io::file_type_name(st.st_mode) +
                     ", not a sensor attribute (check \"sensors\" in the platform file and --sysfs-root)");
  }
  if (fd < 0) {
    const int err = errno;
    throw InputError("power sensor '" + s.name + "': cannot open " + path.string() + ": " +
                     std::strerror(err) + " (check \"sensors\" in the platform file and --sysfs-root)");
  }
  return fd;
}

double read_number(int fd) {
  char buf[64];
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return 0;
  buf[n] = 0;
  return std::strtod(buf, nullptr);
}

}  // namespace

struct PowerSampler::Source {
  SensorSpec spec;
  int fd = -1, fd2 = -1;
  double max_range = 0;
};

PowerSampler::PowerSampler(const std::vector<SensorSpec>& sensors,
                           const std::filesystem::path& sysfs_root, double rate_hz)
    : period_ns_(static_cast<int64_t>(1e9 / std::max(rate_hz, 0.1))) {
  samples_.rate_hz = rate_hz;
  try {
    for (const SensorSpec& s : sensors) {
      Source src;
      src.spec = s;
      if (s.kind == "iv") {
        src.fd = open_sensor_file(sysfs_root / s.current, s);
        sources_.push_back(src);
        sources_.back().fd2 = open_sensor_file(sysfs_root / s.voltage, s);
      } else {
        src.fd = open_sensor_file(sysfs_root / s.path, s);
        sources_.push_back(src);
        if (!s.max_path.empty()) {
          sources_.back().max_range = std::strtod(io::read_attribute(sysfs_root / s.max_path).c_str(), nullptr);
        }
      }
      samples_.names.push_back(s.name);
      samples_.processors.push_back(s.processors);
    }
  } catch (...) {
    for (Source& s : sources_) {
      if (s.fd >= 0) ::close(s.fd);
      if (s.fd2 >= 0) ::close(s.fd2);
    }
    throw;
  }
  last_energy_mj_.assign(sources_.size(), -1);
  const size_t expected = static_cast<size_t>(std::min(rate_hz * 600, 2e6));
  samples_.t_ns.reserve(expected);
  samples_.mw.reserve(expected * sources_.size());
}

PowerSampler::~PowerSampler() {
  stop();
  for (Source& s : sources_) {
    if (s.fd >= 0) ::close(s.fd);
    if (s.fd2 >= 0) ::close(s.fd2);
  }
}

void PowerSampler::sample_once() {
  const int64_t before = profiler::now_ns();
  const size_t row = samples_.mw.size();
  for (size_t k = 0; k < sources_.size(); ++k) {
    const Source& src = sources_[k];
    double mw = 0;
    if (src.spec.kind == "power") {
      mw = read_number(src.fd) * src.spec.scale;
    } else if (src.spec.kind == "iv") {
      mw = read_number(src.fd) * read_number(src.fd2) / 1000.0 * src.spec.scale;
    } else {  // energy counter
      const double mj = read_number(src.fd) * src.spec.scale;
      double& last = last_energy_mj_[k];
      if (last >= 0 && before > last_t_) {
        double delta = mj - last;
        if (delta < 0 && src.max_range > 0) delta += src.max_range * src.spec.scale;
        mw = delta / (static_cast<double>(before - last_t_) * 1e-9);
      } else {
        mw = -1;  // filled from the next sample
      }
      last = mj;
    }
    samples_.mw.push_back(mw);
  }
  const int64_t after = profiler::now_ns();
  samples_.t_ns.push_back(before + (after - before) / 2);
  // Energy sensors: the first sample takes the second's power.
  if (samples_.t_ns.size() == 2) {
    for (size_t k = 0; k < sources_.size(); ++k) {
      if (samples_.mw[k] < 0) samples_.mw[k] = samples_.mw[row + k];
    }
  }
  last_t_ = before;
}

void PowerSampler::start() {
  if (thread_.joinable() || sources_.empty()) return;
  samples_.t_ns.clear();
  samples_.mw.clear();
  last_energy_mj_.assign(sources_.size(), -1);
  last_t_ = 0;
  {
    std::lock_guard lock(stop_mutex_);
    stop_ = false;
  }
  thread_ = std::thread([this] { loop(); });
}

void PowerSampler::loop() {
  // profiler::now_ns() is CLOCK_MONOTONIC, as steady_clock is on Linux.
  using Clock = std::chrono::steady_clock;
  int64_t next = profiler::now_ns();
  std::unique_lock lock(stop_mutex_);
  while (!stop_) {
    lock.unlock();
    sample_once();
    next += period_ns_;
    const int64_t now = profiler::now_ns();
    if (next < now) next = now;  // fell behind: skip, do not burst
    lock.lock();
    stop_changed_.wait_until(lock, Clock::time_point(std::chrono::nanoseconds(next)), [&] { return stop_; });
  }
  lock.unlock();
  sample_once();  // one after the last layer
}

void PowerSampler::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(stop_mutex_);
    stop_ = true;
  }
  stop_changed_.notify_one();
  thread_.join();
}

LayerSpanRecorder::LayerSpanRecorder() : per_processor_(26) {
  for (auto& v : per_processor_) v.reserve(1024);
}

void LayerSpanRecorder::on_layer_begin(char processor, uint32_t layer, uint64_t frame) {
  per_processor_[processor - 'A'].push_back({processor, layer, frame, profiler::now_ns(), 0});
}

void LayerSpanRecorder::on_layer_end(char processor, uint32_t layer, uint64_t frame) {
  auto& v = per_processor_[processor - 'A'];
  if (!v.empty() && v.back().layer == layer && v.back().end_ns == 0) v.back().end_ns = profiler::now_ns();
}

void LayerSpanRecorder::clear() {
  for (auto& v : per_processor_) v.clear();
}

std::vector<profiler::LayerSpan> LayerSpanRecorder::spans() const {
  std::vector<profiler::LayerSpan> all;
  for (const auto& v : per_processor_) {
    for (const auto& s : v) {
      if (s.end_ns != 0) all.push_back(s);
    }
  }
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.begin_ns < b.begin_ns; });
  return all;
}

}  // namespace co_up::power
