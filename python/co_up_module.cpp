// co_up._co_up: the pybind11 layer over the public C++ API (<co_up/co_up.hpp>). The package
// (python/co_up/__init__.py) builds the user-facing Session, its keyword options and its stream
// iterator on top of this; docs/python.md is the user's description.
//
// Memory: an output Tensor is moved into a capsule that becomes the base of the numpy array viewing
// it, so outputs reach Python without a copy and live as long as any view of them. run() hands the
// API a view (co_up::TensorView) of every input whose layout allows it — an aligned, C-contiguous,
// native float32 array, whoever owns it — and the executor reads it in place; any other array is
// copied once into a Tensor (converted to C-contiguous float32 on the way), as is every streamed
// frame (the pipeline keeps it after submit returns).
// Every call that can block or compute releases the GIL.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <co_up/co_up.hpp>

namespace py = pybind11;

namespace {

constexpr const char* kTensorCapsuleName = "co_up.Tensor";
constexpr const char* kModuleName = "co_up._co_up";

// ---- errors ---------------------------------------------------------------------------------------
// co_up::Error -> co_up.InputError (kInput) or co_up.RuntimeFailure (kRuntime), both co_up.Error.
// The classes live in the module; the translator finds them there (no state outside the module).
void translate_error(std::exception_ptr error) {
  try {
    if (error) std::rethrow_exception(error);
  } catch (const co_up::Error& e) {
    const char* name = e.kind() == co_up::ErrorKind::kInput ? "InputError" : "RuntimeFailure";
    py::object type = py::module_::import(kModuleName).attr(name);
    PyErr_SetString(type.ptr(), e.what());
  }
}

[[noreturn]] void throw_input(const std::string& message) {
  throw co_up::Error(co_up::ErrorKind::kInput, message);
}

py::object make_exception(py::module_& m, const char* name, const char* doc, py::handle bases) {
  const std::string qualified = std::string("co_up.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr);
  if (type == nullptr) throw py::error_already_set();
  py::object object = py::reinterpret_steal<py::object>(type);
  m.attr(name) = object;
  return object;
}

// ---- tensors <-> numpy ------------------------------------------------------------------------------
void release_tensor_capsule(PyObject* capsule) {
  // Takes back the Tensor the capsule was given in to_array.
  std::unique_ptr<co_up::Tensor>(static_cast<co_up::Tensor*>(PyCapsule_GetPointer(capsule, kTensorCapsuleName)));
}

// Moves the tensor into a capsule and returns a C-contiguous float32 array over its values whose
// base is that capsule.
py::array to_array(co_up::Tensor&& tensor) {
  auto owner = std::make_unique<co_up::Tensor>(std::move(tensor));
  std::vector<py::ssize_t> shape(owner->shape().begin(), owner->shape().end());
  float* data = owner->data();
  py::capsule base(owner.get(), kTensorCapsuleName, &release_tensor_capsule);
  owner.release();  // the capsule owns it now
  return py::array(py::dtype::of<float>(), std::move(shape), {}, data, base);
}

py::list to_arrays(std::vector<co_up::Tensor>&& tensors) {
  py::list arrays;
  for (co_up::Tensor& t : tensors) arrays.append(to_array(std::move(t)));
  return arrays;
}

// `object` when the API may read it in place: a numpy array of native float32, C-contiguous and
// aligned (numpy may hand out unaligned views of raw buffers); else nothing.
std::optional<py::array> readable_in_place(py::handle object) {
  if (!py::isinstance<py::array_t<float, py::array::c_style>>(object)) return std::nullopt;
  py::array array = py::reinterpret_borrow<py::array>(object);
  if ((array.flags() & py::detail::npy_api::NPY_ARRAY_ALIGNED_) == 0) return std::nullopt;
  return array;
}

// A copy of `object`'s values as a Tensor: numpy converts it to C-contiguous float32 first when it
// is not (a new array only then), the Tensor takes one copy of the values.
co_up::Tensor copy_to_tensor(py::handle object, size_t index) {
  using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;
  FloatArray array = FloatArray::ensure(object);
  if (!array) {
    PyErr_Clear();
    throw_input("input " + std::to_string(index) + " is a " +
                std::string(py::str(py::type::handle_of(object).attr("__name__"))) +
                ", not an array of numbers (give a numpy array, float32 for no conversion)");
  }
  std::vector<int64_t> shape(array.shape(), array.shape() + array.ndim());
  const float* values = array.data();
  return co_up::Tensor(std::move(shape), std::vector<float>(values, values + array.size()));
}

// One frame's inputs, converted once; try_submit leaves it as it was when the queue is full.
struct Frame {
  std::vector<co_up::Tensor> tensors;
};

// One run()'s inputs as views: of the caller's arrays where they can be read in place, else of
// copies made here. Holds both (and so the arrays' memory) until destroyed.
class InputViews {
 public:
  InputViews(const py::sequence& inputs, uint64_t& copies) {
    const size_t n = inputs.size();
    arrays_.reserve(n);
    shapes_.reserve(n);  // views keep spans of these: no reallocation below
    copies_.reserve(n);
    views.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      const py::object item = inputs[i];
      if (std::optional<py::array> array = readable_in_place(item)) {
        shapes_.emplace_back(array->shape(), array->shape() + array->ndim());
        views.push_back({static_cast<const float*>(array->data()), shapes_.back(), static_cast<size_t>(array->size())});
        arrays_.push_back(std::move(*array));
      } else {
        copies_.push_back(copy_to_tensor(item, i));
        views.push_back({copies_.back().data(), copies_.back().shape(), copies_.back().size()});
        ++copies;
      }
    }
  }
  std::vector<co_up::TensorView> views;

 private:
  std::vector<py::array> arrays_;
  std::vector<std::vector<int64_t>> shapes_;
  std::vector<co_up::Tensor> copies_;
};

// ---- the session -------------------------------------------------------------------------------------
co_up::SessionOptions make_options(const std::vector<std::pair<std::string, std::string>>& pairs) {
  co_up::SessionOptions options;
  for (const auto& [key, value] : pairs) options.set(key, value);
  return options;
}

// A co_up::Session for Python: closes with the GIL released (joining the session's threads), and
// counts the inputs it had to copy. Python threads may call it at once because calls release the
// GIL; the C++ contract (one thread, except a submitting and a waiting one) is the caller's, as in
// C++, but close() refuses while another call is running instead of freeing the session under it.
class PySession {
 public:
  explicit PySession(co_up::Session session) : session_(std::move(session)) {}
  // Python holds a reference to the object during each of its calls, so none runs here.
  ~PySession() {
    if (session_) {
      py::gil_scoped_release release;
      session_.reset();
    }
  }
  PySession(const PySession&) = delete;
  PySession& operator=(const PySession&) = delete;

  void close() {
    if (!session_) return;
    if (busy_.load() != 0) throw_input("the session is in use by another thread; close it after that call returns");
    py::gil_scoped_release release;
    session_.reset();
  }
  bool closed() const { return !session_; }

  // Session::run(std::span<const TensorView>) reads the inputs where they lie; the arrays are
  // held (and so cannot be resized) during the call. Another Python thread writing to an input
  // array meanwhile changes what the frame reads: as with any buffer lent to C++ without the GIL.
  py::list run(const py::sequence& inputs) {
    co_up::Session& s = open();
    const InputViews in(inputs, input_copies_);
    std::vector<co_up::Tensor> results;
    {
      Busy busy(busy_);
      py::gil_scoped_release release;
      results = s.run(std::span<const co_up::TensorView>(in.views));
    }
    return to_arrays(std::move(results));
  }

  Frame prepare(const py::sequence& inputs) {
    Frame frame;
    frame.tensors.reserve(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) frame.tensors.push_back(copy_to_tensor(inputs[i], i));
    input_copies_ += inputs.size();
    return frame;
  }

  // Blocks while the queue is full (with the GIL released).
  void submit(Frame& frame) {
    co_up::Session& s = open();
    Busy busy(busy_);
    py::gil_scoped_release release;
    if (frame.tensors.size() == 1) {
      s.submit(std::move(frame.tensors[0]));
    } else {
      s.submit(std::move(frame.tensors));
    }
    frame.tensors.clear();
  }

  // True when queued (the frame is emptied); false when the queue was full (the frame is kept).
  bool try_submit(Frame& frame) {
    co_up::Session& s = open();
    if (frame.tensors.empty()) throw_input("this frame was submitted already; prepare a new one");
    Busy busy(busy_);
    py::gil_scoped_release release;
    const co_up::SubmitStatus status = frame.tensors.size() == 1
                                           ? s.try_submit(std::move(frame.tensors[0]))
                                           : s.try_submit(std::move(frame.tensors));
    if (status == co_up::SubmitStatus::kFull) return false;
    frame.tensors.clear();
    return true;
  }

  py::tuple wait_result() {
    co_up::Session& s = open();
    co_up::Result result;
    {
      Busy busy(busy_);
      py::gil_scoped_release release;
      result = s.wait_result();
    }
    return py::make_tuple(result.frame, to_arrays(std::move(result.outputs)));
  }

  py::object try_result(double timeout_s) {
    co_up::Session& s = open();
    if (!(timeout_s >= 0)) throw_input("try_result timeout must be >= 0 seconds");
    std::optional<co_up::Result> result;
    {
      Busy busy(busy_);
      py::gil_scoped_release release;
      result = s.try_result(std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000.0)));
    }
    if (!result) return py::none();
    return py::make_tuple(result->frame, to_arrays(std::move(result->outputs)));
  }

  void drain() {
    co_up::Session& s = open();
    Busy busy(busy_);
    py::gil_scoped_release release;
    s.drain();
  }

  size_t in_flight() { return open().in_flight(); }
  size_t queue_capacity() { return open().queue_capacity(); }
  std::string order() { return open().order(); }
  uint64_t input_copies() const { return input_copies_; }

  py::list infos(const std::vector<co_up::TensorInfo>& infos) {
    py::list list;
    for (const co_up::TensorInfo& info : infos) list.append(py::make_tuple(info.name, py::tuple(py::cast(info.shape))));
    return list;
  }
  py::list inputs() { return infos(open().inputs()); }
  py::list outputs() { return infos(open().outputs()); }

  py::dict profile() {
    const co_up::Profile p = open().profile();
    py::dict d;
    d["order"] = p.order;
    d["mode"] = p.mode;
    d["frames_completed"] = p.frames_completed;
    d["setup_ms"] = p.setup_ms;
    d["wall_ms"] = p.wall_ms;
    d["throughput_fps"] = p.throughput_fps;
    d["latency_median_ms"] = p.latency_median_ms;
    py::list layers;
    for (const co_up::Profile::Layer& l : p.layers) {
      py::dict layer;
      layer["index"] = l.index;
      layer["name"] = l.name;
      layer["processor"] = std::string(1, l.processor);
      layer["subgraph"] = l.subgraph;
      layer["median_ms"] = l.median_ms;
      layers.append(layer);
    }
    d["layers"] = layers;
    py::list subgraphs;
    for (const co_up::Profile::SubGraph& g : p.subgraphs) {
      py::dict sub;
      sub["index"] = g.index;
      sub["processor"] = std::string(1, g.processor);
      sub["backend"] = g.backend;
      sub["first_layer"] = g.first_layer;
      sub["last_layer"] = g.last_layer;
      sub["median_ms"] = g.median_ms;
      subgraphs.append(sub);
    }
    d["subgraphs"] = subgraphs;
    return d;
  }
  std::string profile_json() { return open().profile().json; }

  // Benchmark support (bench/python_overhead.py): the same work as run()/stream() with the loop in
  // C++, on one Tensor made once, so that the Python layer's cost per frame can be told apart.
  double time_run_loop(const py::array& input, size_t frames) {
    co_up::Session& s = open();
    uint64_t copies = 0;
    const InputViews in(py::make_tuple(input), copies);  // read in place, as run()
    Busy busy(busy_);
    py::gil_scoped_release release;
    const auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < frames; ++i) s.run(std::span<const co_up::TensorView>(in.views));
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  double time_stream_loop(const py::array& input, size_t frames) {
    co_up::Session& s = open();
    const co_up::Tensor tensor = copy_to_tensor(input, 0);
    Busy busy(busy_);
    py::gil_scoped_release release;
    const auto start = std::chrono::steady_clock::now();
    size_t submitted = 0, received = 0;
    std::optional<co_up::Tensor> pending;
    while (received < frames) {
      while (submitted < frames) {
        if (!pending) pending = tensor;  // the copy a stream of distinct frames makes anyway
        if (s.try_submit(std::move(*pending)) == co_up::SubmitStatus::kFull) break;
        pending.reset();
        ++submitted;
      }
      s.wait_result();
      ++received;
    }
    s.drain();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

 private:
  struct Busy {
    explicit Busy(std::atomic<int>& count) : count_(count) { ++count_; }
    ~Busy() { --count_; }
    Busy(const Busy&) = delete;
    Busy& operator=(const Busy&) = delete;
    std::atomic<int>& count_;
  };

  co_up::Session& open() {
    if (!session_) throw_input("the session is closed");
    return *session_;
  }

  std::optional<co_up::Session> session_;
  std::atomic<int> busy_{0};
  uint64_t input_copies_ = 0;
};

}  // namespace

PYBIND11_MODULE(_co_up, m) {
  m.doc() = "co_up's compiled layer; use the co_up package (docs/python.md)";

  py::object error = make_exception(m, "Error",
      "A co_up error; str() is the one-line message the co_up command line prints.", PyExc_Exception);
  make_exception(m, "InputError",
      "Something the caller can fix: options, orders, files, models, shapes, call order.",
      py::make_tuple(error, py::handle(PyExc_ValueError)));
  make_exception(m, "RuntimeFailure",
      "A failure doing valid work: a plugin, a device, the OS.",
      py::make_tuple(error, py::handle(PyExc_RuntimeError)));
  py::register_exception_translator(&translate_error);

  m.def("api_version", [] {
    const uint32_t v = co_up::api_version();
    return py::make_tuple(v >> 16, v & 0xffffu);
  });
  m.def("zeros", [](const std::vector<int64_t>& shape) { return to_array(co_up::Tensor(shape)); },
        py::arg("shape"));
  // The address of the values the API would read for `array` as a session input (its own when it
  // can be read in place, else a copy's, which is then gone): tests check the in-place path.
  m.def("_input_data_address", [](py::handle array) {
    if (std::optional<py::array> a = readable_in_place(array)) return reinterpret_cast<uintptr_t>(a->data());
    const co_up::Tensor copy = copy_to_tensor(array, 0);
    return reinterpret_cast<uintptr_t>(copy.data());
  });

  // The run options' table (api/run_options.h, through SessionOptions::known()): the package's
  // keywords are built from it, so an option added there is a keyword here without more code.
  m.def("_options", [] {
    py::list keys;
    for (const co_up::SessionOptions::Key& k : co_up::SessionOptions::known()) {
      py::dict d;
      d["name"] = k.name;
      d["keyword"] = k.keyword;
      d["help"] = k.help;
      d["flag"] = k.flag;
      d["command_line_only"] = k.command_line_only;
      keys.append(d);
    }
    return keys;
  });

  py::class_<Frame>(m, "_Frame");

  using Pairs = std::vector<std::pair<std::string, std::string>>;
  py::class_<PySession>(m, "_Session")
      .def_static("open_model", [](const std::string& path, const Pairs& options) {
        const co_up::SessionOptions o = make_options(options);
        py::gil_scoped_release release;
        return std::make_unique<PySession>(co_up::Session::open_model(path, o));
      })
      .def_static("open_zoo", [](const std::string& name, const Pairs& options) {
        const co_up::SessionOptions o = make_options(options);
        py::gil_scoped_release release;
        return std::make_unique<PySession>(co_up::Session::open_zoo(name, o));
      })
      .def("close", &PySession::close)
      .def_property_readonly("closed", &PySession::closed)
      .def("run", &PySession::run)
      .def("prepare", &PySession::prepare)
      .def("submit", &PySession::submit)
      .def("try_submit", &PySession::try_submit)
      .def("wait_result", &PySession::wait_result)
      .def("try_result", &PySession::try_result)
      .def("drain", &PySession::drain)
      .def("in_flight", &PySession::in_flight)
      .def("queue_capacity", &PySession::queue_capacity)
      .def("order", &PySession::order)
      .def("inputs", &PySession::inputs)
      .def("outputs", &PySession::outputs)
      .def("profile", &PySession::profile)
      .def("profile_json", &PySession::profile_json)
      .def("input_copies", &PySession::input_copies)
      .def("time_run_loop", &PySession::time_run_loop)
      .def("time_stream_loop", &PySession::time_stream_loop);
}
