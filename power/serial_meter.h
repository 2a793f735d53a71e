// SerialMeter: reads an external meter's log (power/meter_log.h) live from a serial device
// (/dev/ttyACM0, /dev/ttyUSB0) on its own thread while co_up runs.
//
// The device is opened non-blocking without becoming the controlling terminal and set to raw
// mode, 115200 baud, 8 data bits, no parity, 1 stop bit, no flow control; the settings it had are
// restored when the SerialMeter is destroyed (RAII, also when the run fails). Input already
// buffered when it opens is discarded: it predates the run. The thread waits in poll() on the
// device and an eventfd, so stop() takes effect at once; each completed line is stamped with its
// arrival time on CLOCK_MONOTONIC (MeterLog::received_ns), which bounds the clock offset.
//
// Errors: the constructor throws InputError when the device is missing or not a terminal, and
// RuntimeError when it cannot be configured. A failure while reading (the meter unplugged: POLLHUP,
// EIO) ends the reading; stop() returns what was read and error() says what happened.
// Threading: construct, start(), stop() from one thread; the reader thread touches only its own
// parser until stop() joins it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "power/meter_log.h"

namespace co_up::power {

class SerialMeter {
 public:
  explicit SerialMeter(const std::string& device, unsigned baud = 115200);
  ~SerialMeter();
  SerialMeter(const SerialMeter&) = delete;
  SerialMeter& operator=(const SerialMeter&) = delete;

  void start();
  // Keeps reading for `drain` (the samples of the run's last layers are still on their way), then
  // joins the thread and returns the log. Call once.
  MeterLog stop(std::chrono::milliseconds drain = std::chrono::milliseconds(100));
  const std::string& error() const { return error_; }

 private:
  class Tty;       // the open device and the settings to restore
  class EventFd;   // wakes the reader's poll()
  void loop();
  // Member order is destruction order reversed: the thread is joined (in ~SerialMeter) before the
  // descriptors it polls are closed.
  std::unique_ptr<Tty> tty_;
  std::unique_ptr<EventFd> wake_;
  MeterLogParser parser_;
  std::string error_;
  std::atomic<int64_t> stop_at_ns_{INT64_MAX};  // CLOCK_MONOTONIC; INT64_MAX: keep reading
  std::thread thread_;
};

}  // namespace co_up::power
