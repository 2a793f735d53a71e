// co_up — public C++ API: run a network across the processors of a heterogeneous SoC from an
// application, the way the `co_up` command line does.
//
//   co_up::SessionOptions options;
//   options.set_order("BBBLLLLL").set_mode(co_up::Mode::kPipeline);
//   co_up::Session session = co_up::Session::open_zoo("alexnet", options);
//   std::vector<co_up::Tensor> outputs = session.run(input);          // one frame
//
//   session.set_result_callback([](co_up::Result r) { ... });         // or session.wait_result()
//   for (auto& frame : frames) session.submit(std::move(frame));       // streaming (pipelined)
//   session.drain();
//
// Contracts, stated once:
//  - Errors are exceptions of type co_up::Error. kind() is kInput for what the caller can fix
//    (options, order strings, files, models, tensor shapes, call order) and kRuntime for failures
//    doing valid work (a plugin, a device, the OS). what() is the same one-line message the
//    command line prints after "co_up: error: " (kInput) or "co_up: failed: " (kRuntime).
//  - Tensors are dense float32, row-major, shapes as the network declares them (NCHW for images).
//  - A Session is used by one thread at a time, except that submit/try_submit, wait_result and
//    try_result may be called from different threads at once (one producer, one consumer), and
//    that result callbacks run on a thread of the Session.
//  - Everything here is compiled into libco_up.so; this header includes only the standard library.
//    The C++ API is source-stable within a major version; the binary-stable interface is the C API
//    (<co_up/co_up.h>).
#ifndef CO_UP_CO_UP_HPP_
#define CO_UP_CO_UP_HPP_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(_WIN32)
#define CO_UP_PUBLIC
#else
#define CO_UP_PUBLIC __attribute__((visibility("default")))
#endif

namespace co_up {

struct SessionAccess;  // the co_up command line's internal access (not part of the API)

// The API version this header declares (also CO_UP_API_VERSION_MAJOR/MINOR in <co_up/co_up.h>).
inline constexpr uint32_t kApiVersionMajor = 1;
inline constexpr uint32_t kApiVersionMinor = 1;
// The version the loaded libco_up was built with: (major << 16) | minor.
CO_UP_PUBLIC uint32_t api_version();

enum class ErrorKind { kInput, kRuntime };

class CO_UP_PUBLIC Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

// A dense float32 tensor that owns its values.
class Tensor {
 public:
  Tensor() = default;
  // Zero-filled. Throws Error(kInput) for a negative dimension.
  explicit Tensor(std::vector<int64_t> shape) : shape_(std::move(shape)) {
    data_.assign(count(shape_), 0.0f);
  }
  // Throws Error(kInput) when `values` does not hold the shape's element count.
  Tensor(std::vector<int64_t> shape, std::vector<float> values)
      : shape_(std::move(shape)), data_(std::move(values)) {
    if (data_.size() != count(shape_)) {
      throw Error(ErrorKind::kInput, "tensor of shape " + shape_text(shape_) + " needs " +
                                         std::to_string(count(shape_)) + " values but got " +
                                         std::to_string(data_.size()));
    }
  }

  const std::vector<int64_t>& shape() const noexcept { return shape_; }
  size_t size() const noexcept { return data_.size(); }
  std::span<float> values() noexcept { return data_; }
  std::span<const float> values() const noexcept { return data_; }
  float* data() noexcept { return data_.data(); }
  const float* data() const noexcept { return data_.data(); }

  // "[1,3,224,224]"
  static std::string shape_text(const std::vector<int64_t>& shape) {
    std::string text = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
      if (i != 0) text += ',';
      text += std::to_string(shape[i]);
    }
    text += ']';
    return text;
  }

 private:
  static size_t count(const std::vector<int64_t>& shape) {
    size_t n = 1;
    for (int64_t d : shape) {
      if (d < 0) throw Error(ErrorKind::kInput, "tensor shape " + shape_text(shape) + " has a negative dimension");
      n *= static_cast<size_t>(d);
    }
    return n;
  }
  std::vector<int64_t> shape_;
  std::vector<float> data_;
};

// A dense float32 tensor the caller owns: read in place, only during the call it is given to.
// `element_count` is how many floats lie at `data`; it must equal the shape's element count
// (Error(kInput) otherwise, as co_up_tensor_view's), so a short buffer is refused, not overread.
struct TensorView {
  const float* data = nullptr;
  std::span<const int64_t> shape;
  size_t element_count = 0;
};

struct TensorInfo {
  std::string name;
  std::vector<int64_t> shape;
};

enum class Mode {
  kPipeline,  // frames overlap across processors (throughput)
  kSwitch,    // one frame in flight at a time (latency)
  kOverlap,   // switch, except that frame g may start on a processor frame g-1 no longer needs
              // (at most two frames in flight): latency near switch's, throughput above it
};

// How a Session is built and run; the names follow the command line's options. Every setter
// returns *this. Values are checked when the Session opens (Error(kInput) naming the option).
class CO_UP_PUBLIC SessionOptions {
 public:
  SessionOptions();
  ~SessionOptions();
  SessionOptions(const SessionOptions& other);
  SessionOptions& operator=(const SessionOptions& other);
  SessionOptions(SessionOptions&& other) noexcept;
  SessionOptions& operator=(SessionOptions&& other) noexcept;

  // --order: one processor letter per layer unit ("BBBLLLLL"); empty: every layer on B.
  SessionOptions& set_order(std::string order);
  SessionOptions& set_mode(Mode mode);
  // --split=UNIT:PARTS[,...]: split a layer unit's compute op by output channels.
  SessionOptions& set_split(std::string split);
  // --platform=FILE: the platform JSON; empty: the host, detected under the sysfs root.
  SessionOptions& set_platform_file(std::string path);
  // --plugins=DIR; empty: $CO_UP_PLUGIN_PATH, else plugins/ next to libco_up (a build tree), else
  // co_up/plugins/ next to it (an installed libdir), else as the co_up binary finds them.
  SessionOptions& set_plugins_dir(std::string path);
  // --sysfs-root=DIR (default "/sys"): where the host platform and DVFS nodes are read/written.
  SessionOptions& set_sysfs_root(std::string path);
  // --frequency=LEVELS (1-based DVFS levels as the command line takes them) and --dvfs=strict|
  // best-effort. The levels are set when the Session opens and restored when it is destroyed.
  // Under strict, a per-layer level write that fails during a run stops that run with
  // Error(kRuntime); the error stays, so every later run of that Session fails with it too: close
  // (destroy) the Session, which restores the levels, and open a new one.
  SessionOptions& set_frequency(std::string levels);
  SessionOptions& set_dvfs_policy(std::string policy);
  // --profile=0|1|2: 0 frame times; 1 + sub-graphs and transfers; 2 + layers.
  SessionOptions& set_profile_level(int level);
  // --buffers: receive buffers between adjacent stages (>= 1).
  SessionOptions& set_buffers(uint32_t buffers);
  // --share-boundaries=0|1: switch and overlap modes share boundary tensors in place between
  // backends that can (true, default) or copy them (false).
  SessionOptions& set_share_boundaries(bool share);
  // --threads/--cores (big cluster), --threads_little/--cores_little; 0 keeps the platform's.
  SessionOptions& set_threads(int big, int little);
  SessionOptions& set_cores(int big, int little);
  // Zoo networks: --image-size (0: the network's own), --seed (generated weights), --data=DIR
  // (weights from DIR/<constant>.npy), --units=layers|ops|branches.
  SessionOptions& set_image_size(int64_t size);
  SessionOptions& set_seed(uint64_t seed);
  SessionOptions& set_data_dir(std::string path);
  SessionOptions& set_units(std::string units);
  // ONNX models: --input-shape (replaces the model's, for dynamic dimensions).
  SessionOptions& set_input_shape(std::vector<int64_t> shape);
  // Streaming: frames submitted and not yet handed back (by the callback or wait_result) at most;
  // 0 (default): twice the pipeline's depth (the frames its sub-graphs and receive buffers hold
  // at once along its deepest path; 1 in switch mode, 2 in overlap mode), so that a producer resuming at half the
  // queue (see submit) still finds the pipeline full.
  SessionOptions& set_queue_capacity(uint32_t frames);

  // The same by command-line name without the dashes ("order", "mode", "image-size", ...;
  // docs/api.md lists them). Throws Error(kInput) for an unknown key or a malformed value.
  SessionOptions& set(const std::string& key, const std::string& value);

  // Every key set() knows, from the one table the command line parses too.
  struct Key {
    std::string name;     // the command line's, without dashes: "image-size"
    std::string keyword;  // the setter's name without "set_": "image_size" (Python's keyword)
    std::string help;     // one line
    bool flag = false;    // a switch: "1"/"0" here, --name without a value on the command line
    bool command_line_only = false;  // set() refuses it, saying so
  };
  static std::vector<Key> known();

  struct Values;
  const Values& values() const { return *values_; }

 private:
  friend struct SessionAccess;
  std::unique_ptr<Values> values_;
};

// One streamed frame's outputs, handed back in submission order.
struct Result {
  uint64_t frame = 0;          // 0-based submission number within the Session
  void* user_data = nullptr;   // as given to submit
  std::vector<Tensor> outputs;  // one per graph output
};

// What a run measured: the executor's profile. Times in milliseconds are medians over frames.
struct Profile {
  struct Layer {
    uint32_t index = 0;
    std::string name;
    char processor = 0;
    uint32_t subgraph = 0;
    double median_ms = 0;  // profile level 2; 0 otherwise
  };
  struct SubGraph {
    uint32_t index = 0;
    char processor = 0;
    std::string backend;
    uint32_t first_layer = 0;
    uint32_t last_layer = 0;
    double median_ms = 0;  // profile level >= 1; 0 otherwise
  };
  std::string order;
  std::string mode;
  uint64_t frames_completed = 0;
  double setup_ms = 0;
  double wall_ms = 0;
  double throughput_fps = 0;
  double latency_median_ms = 0;
  std::vector<Layer> layers;
  std::vector<SubGraph> subgraphs;
  std::string json;  // the profile JSON, as --profile-out writes it
};

enum class SubmitStatus {
  kAccepted,
  kFull,  // queue_capacity() frames are in flight; nothing was taken
};

class CO_UP_PUBLIC Session {
 public:
  // Opens an ONNX model file / a zoo network ("alexnet", "resnet18", ...): builds the graph,
  // partitions it by the order, creates the devices and compiles every sub-graph.
  static Session open_model(const std::string& onnx_path, const SessionOptions& options = {});
  static Session open_zoo(const std::string& name, const SessionOptions& options = {});

  // Stops a stream in flight (frames not yet handed back are dropped, callbacks not called for
  // them), joins every thread, releases the devices and restores DVFS levels.
  ~Session();
  Session(Session&& other) noexcept;
  Session& operator=(Session&& other) noexcept;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  std::vector<TensorInfo> inputs() const;
  std::vector<TensorInfo> outputs() const;
  const std::string& order() const;  // the order run (every layer's letter)

  // One frame, synchronously; returns one tensor per graph output. Error(kInput) when a stream
  // has frames in flight (drain() first) or an input's shape differs from inputs()'.
  std::vector<Tensor> run(const Tensor& input);
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);
  // The same without copying the inputs: the executor reads each view where it lies, so it must
  // stay valid and unchanged until run returns. Error(kInput) for a null view of a non-empty shape.
  std::vector<Tensor> run(std::span<const TensorView> inputs);

  // ---- streaming: frames overlap across the pipeline's stages -------------------------------
  // Results are delivered in submission order, each exactly once: to the callback if one is set
  // (on a thread of the Session, one call at a time; the callback must not call back into this
  // Session except try_submit), else to wait_result()/try_result(). Set the callback before the
  // first submit. The callback runs on the pipeline's processor thread that completed the frame,
  // so its time adds to that stage's: keep it short, or hand the result to a thread of your own.
  using ResultCallback = std::function<void(Result result)>;
  void set_result_callback(ResultCallback callback);

  // Back-pressure: at most queue_capacity() frames are in flight (submitted, not yet handed back).
  // submit() blocks while that many are, and once blocked it resumes when half the queue is free
  // (one wake-up per half queue, not per frame); try_submit() returns kFull when the queue is full
  // and leaves `frame` as it was. Both return as soon as the frame is queued, without waiting for
  // the pipeline.
  // Error(kInput) for a wrong shape; a stream's runtime error is rethrown by the next call.
  void submit(Tensor frame, void* user_data = nullptr);
  SubmitStatus try_submit(Tensor&& frame, void* user_data = nullptr);
  // Graphs of several inputs, one tensor per input; try_submit leaves `inputs` as they were
  // unless it returns kAccepted.
  void submit(std::vector<Tensor> inputs, void* user_data = nullptr);
  SubmitStatus try_submit(std::vector<Tensor>&& inputs, void* user_data = nullptr);

  // The next result in submission order; blocks until it is complete. Error(kInput) when no
  // frame is in flight or a callback is set.
  Result wait_result();
  // As wait_result, but returns nothing when the next result is not complete within `timeout`.
  std::optional<Result> try_result(std::chrono::milliseconds timeout = std::chrono::milliseconds(0));

  // Waits until every submitted frame was handed back (callback mode) or is complete (queue mode),
  // then ends the stream so that profile() covers it. The next submit starts a new stream.
  void drain();
  size_t in_flight() const;
  size_t queue_capacity() const;

  // The last finished run()'s profile, or the last drained stream's.
  Profile profile() const;

  class Impl;

 private:
  friend struct SessionAccess;
  explicit Session(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace co_up

#endif  // CO_UP_CO_UP_HPP_
