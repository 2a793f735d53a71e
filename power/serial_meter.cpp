#include "power/serial_meter.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "profiler/events.h"

namespace co_up::power {
namespace {

speed_t speed_for(unsigned baud, const std::string& device) {
  switch (baud) {
    case 9600: return B9600;
    case 19200: return B19200;
    case 38400: return B38400;
    case 57600: return B57600;
    case 115200: return B115200;
    case 230400: return B230400;
    case 460800: return B460800;
    case 921600: return B921600;
    default:
      throw InputError("meter '" + device + "': " + std::to_string(baud) +
                       " baud is not a standard rate (9600 ... 921600; the meter sketch uses 115200)");
  }
}

std::string errno_text(int err) {
  const char* name = strerrorname_np(err);
  return std::string(name ? name : "E?") + " (" + std::strerror(err) + ")";
}

}  // namespace

class SerialMeter::Tty {
 public:
  Tty(const std::string& device, unsigned baud) {
    const speed_t speed = speed_for(baud, device);
    fd_ = ::open(device.c_str(), O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    if (fd_ < 0) {
      const int err = errno;
      throw InputError("cannot open meter '" + device + "': " + errno_text(err) +
                       " (check --meter, that the meter is plugged in, and permission: group dialout)");
    }
    if (::tcgetattr(fd_, &saved_) != 0) {
      const int err = errno;
      ::close(fd_);
      throw InputError("meter '" + device + "' is not a serial device: " + errno_text(err) +
                       " (for a saved log use --meter-log=FILE)");
    }
    termios raw = saved_;
    ::cfmakeraw(&raw);
    raw.c_cflag &= ~static_cast<tcflag_t>(CSIZE | PARENB | CSTOPB | CRTSCTS);
    raw.c_cflag |= CS8 | CLOCAL | CREAD;
    raw.c_iflag &= ~static_cast<tcflag_t>(IXON | IXOFF | IXANY);
    raw.c_cc[VMIN] = 0;  // non-blocking reads: poll() does the waiting
    raw.c_cc[VTIME] = 0;
    if (::cfsetispeed(&raw, speed) != 0 || ::cfsetospeed(&raw, speed) != 0 ||
        ::tcsetattr(fd_, TCSANOW, &raw) != 0) {
      const int err = errno;
      ::tcsetattr(fd_, TCSANOW, &saved_);
      ::close(fd_);
      throw RuntimeError("cannot set meter '" + device + "' to raw " + std::to_string(baud) +
                         " 8N1: " + errno_text(err));
    }
    // What was buffered before now was sampled before the run.
    ::tcflush(fd_, TCIFLUSH);
  }
  ~Tty() {
    ::tcsetattr(fd_, TCSANOW, &saved_);
    ::close(fd_);
  }
  Tty(const Tty&) = delete;
  Tty& operator=(const Tty&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
  termios saved_{};
};

class SerialMeter::EventFd {
 public:
  EventFd() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    if (fd_ < 0) throw RuntimeError("meter reader: eventfd failed: " + errno_text(errno));
  }
  ~EventFd() { ::close(fd_); }
  EventFd(const EventFd&) = delete;
  EventFd& operator=(const EventFd&) = delete;
  int fd() const { return fd_; }
  void signal() const {
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(fd_, &one, sizeof one);
  }
  void clear() const {
    uint64_t value = 0;
    [[maybe_unused]] const ssize_t n = ::read(fd_, &value, sizeof value);
  }

 private:
  int fd_ = -1;
};

SerialMeter::SerialMeter(const std::string& device, unsigned baud)
    : tty_(std::make_unique<Tty>(device, baud)), wake_(std::make_unique<EventFd>()), parser_(device) {}

SerialMeter::~SerialMeter() {
  if (thread_.joinable()) {
    stop_at_ns_.store(0);
    wake_->signal();
    thread_.join();
  }
}

void SerialMeter::start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { loop(); });
}

void SerialMeter::loop() {
  char buffer[4096];
  for (;;) {
    const int64_t now = profiler::now_ns();
    const int64_t stop_at = stop_at_ns_.load();
    if (now >= stop_at) return;
    const int timeout_ms =
        stop_at == INT64_MAX ? -1 : static_cast<int>((stop_at - now + 999'999) / 1'000'000);
    pollfd fds[2] = {{tty_->fd(), POLLIN, 0}, {wake_->fd(), POLLIN, 0}};
    const int ready = ::poll(fds, 2, timeout_ms);
    if (ready < 0) {
      if (errno == EINTR) continue;
      error_ = "meter '" + parser_.log().source + "': poll failed: " + errno_text(errno);
      return;
    }
    if (fds[1].revents != 0) wake_->clear();
    if (fds[0].revents & POLLIN) {
      for (bool first = true;; first = false) {
        const ssize_t n = ::read(tty_->fd(), buffer, sizeof buffer);
        if (n > 0) {
          parser_.feed(std::string_view(buffer, static_cast<size_t>(n)), profiler::now_ns());
          continue;
        }
        if (n == 0 && first) {  // readable yet empty: end of file, the other side is gone
          error_ = "meter '" + parser_.log().source + "' closed (unplugged?); using the samples read so far";
          return;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
          error_ = "meter '" + parser_.log().source + "': read failed: " + errno_text(errno) +
                   " (unplugged?); using the samples read so far";
          return;
        }
        break;  // drained (EAGAIN), or 0: nothing more now
      }
    } else if (fds[0].revents & (POLLHUP | POLLERR | POLLNVAL)) {
      error_ = "meter '" + parser_.log().source + "' hung up (unplugged?); using the samples read so far";
      return;
    }
  }
}

MeterLog SerialMeter::stop(std::chrono::milliseconds drain) {
  if (thread_.joinable()) {
    stop_at_ns_.store(profiler::now_ns() + static_cast<int64_t>(drain.count()) * 1'000'000);
    wake_->signal();
    thread_.join();
  }
  parser_.finish();
  return parser_.take();
}

}  // namespace co_up::power
