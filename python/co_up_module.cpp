// co_up._co_up: the pybind11 layer over the public C++ API (<co_up/co_up.hpp>). The package
// (python/co_up/__init__.py) builds the user-facing Session, its keyword options and its stream
// iterator on top of this; docs/python.md is the user's description.
//
// Memory: an output Tensor is moved into a capsule that becomes the base of the numpy array viewing
// it, so outputs reach Python without a copy and live as long as any view of them. run() passes an
// input to the API without a copy when it is such an array (an output, or co_up.zeros()) in the
// exact layout of its Tensor; any other array is copied once into a Tensor (converted to C-contiguous
// float32 on the way when it is not already), as is every streamed frame (the pipeline keeps it).
// Every call that can block or compute releases the GIL.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <optional>
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

// The Tensor whose values `object` views exactly (same address, shape, C-contiguous float32), or
// nullptr: only then may the API read the Tensor in place of the array.
co_up::Tensor* viewed_tensor(py::handle object) {
  if (!py::isinstance<py::array>(object)) return nullptr;
  py::array array = py::reinterpret_borrow<py::array>(object);
  // numpy chains a view of a view to the array over the capsule, not to the capsule.
  py::object base = array.base();
  while (base && py::isinstance<py::array>(base)) base = py::reinterpret_borrow<py::array>(base).base();
  if (!base || !PyCapsule_IsValid(base.ptr(), kTensorCapsuleName)) return nullptr;
  auto* tensor = static_cast<co_up::Tensor*>(PyCapsule_GetPointer(base.ptr(), kTensorCapsuleName));
  if (!array.dtype().is(py::dtype::of<float>())) return nullptr;
  if (!(array.flags() & py::array::c_style)) return nullptr;
  if (array.data() != static_cast<const void*>(tensor->data())) return nullptr;
  if (static_cast<size_t>(array.ndim()) != tensor->shape().size()) return nullptr;
  for (py::ssize_t i = 0; i < array.ndim(); ++i) {
    if (array.shape(i) != tensor->shape()[static_cast<size_t>(i)]) return nullptr;
  }
  return tensor;
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

// Inputs for one call: copies, and Tensors lent by their capsules, given back on destruction.
class LentInputs {
 public:
  LentInputs() = default;
  LentInputs(const LentInputs&) = delete;
  LentInputs& operator=(const LentInputs&) = delete;
  ~LentInputs() {
    for (const auto& [index, owner] : lent_) *owner = std::move(tensors[index]);
  }
  void lend(co_up::Tensor& owner) {
    lent_.emplace_back(tensors.size(), &owner);
    tensors.push_back(std::move(owner));
  }
  std::vector<co_up::Tensor> tensors;

 private:
  std::vector<std::pair<size_t, co_up::Tensor*>> lent_;
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

  // Session::run(const std::vector<Tensor>&) reads the inputs where they lie. An array over a
  // co_up Tensor lends that Tensor for the call: moved into the vector and back, which keeps its
  // values at the same address, so the array (held by `inputs` meanwhile) stays valid throughout.
  py::list run(const py::sequence& inputs) {
    co_up::Session& s = open();
    LentInputs lent;
    lent.tensors.reserve(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (co_up::Tensor* tensor = viewed_tensor(inputs[i])) {
        lent.lend(*tensor);
      } else {
        lent.tensors.push_back(copy_to_tensor(inputs[i], i));
        ++input_copies_;
      }
    }
    std::vector<co_up::Tensor> results;
    {
      Busy busy(busy_);
      py::gil_scoped_release release;
      results = s.run(lent.tensors);
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
  // A graph of several inputs has no non-blocking submit in the API: such a frame is submitted
  // only while the queue has room, which is what try_submit means for one producer.
  bool try_submit(Frame& frame) {
    co_up::Session& s = open();
    if (frame.tensors.empty()) throw_input("this frame was submitted already; prepare a new one");
    Busy busy(busy_);
    py::gil_scoped_release release;
    if (frame.tensors.size() == 1) {
      if (s.try_submit(std::move(frame.tensors[0])) == co_up::SubmitStatus::kFull) return false;
    } else {
      if (s.in_flight() >= s.queue_capacity()) return false;
      s.submit(std::move(frame.tensors));
    }
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
    const std::vector<co_up::Tensor> tensors{copy_to_tensor(input, 0)};  // read in place, as run()
    Busy busy(busy_);
    py::gil_scoped_release release;
    const auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < frames; ++i) s.run(tensors);
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
  // views a co_up Tensor exactly, else a copy's, which is then gone): tests check the in-place path.
  m.def("_input_data_address", [](py::handle array) {
    if (const co_up::Tensor* t = viewed_tensor(array)) return reinterpret_cast<uintptr_t>(t->data());
    const co_up::Tensor copy = copy_to_tensor(array, 0);
    return reinterpret_cast<uintptr_t>(copy.data());
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
