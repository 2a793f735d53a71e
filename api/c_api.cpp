// The C API (include/co_up/co_up.h) over the C++ API: every entry point catches everything, so
// no exception crosses into C; errors become co_up_error objects the caller releases.
#include "co_up/co_up.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "co_up/co_up.hpp"

struct co_up_error {
  co_up_error_code code;
  std::string message;
};

struct co_up_options {
  co_up::SessionOptions options;
};

struct co_up_result {
  co_up::Result result;
};

struct co_up_session {
  explicit co_up_session(co_up::Session s) : session(std::move(s)) {
    for (const co_up::TensorInfo& t : session.inputs()) inputs.push_back(t.shape);
    for (const co_up::TensorInfo& t : session.outputs()) outputs.push_back(t.shape);
  }
  co_up::Session session;
  std::vector<std::vector<int64_t>> inputs;   // shapes handed out by co_up_session_*_shape
  std::vector<std::vector<int64_t>> outputs;
  co_up_result_callback callback = nullptr;
  void* callback_data = nullptr;
};

namespace {

co_up_error* make_error(co_up_error_code code, const char* message) noexcept {
  try {
    return new co_up_error{code, message};
  } catch (...) {
    // Out of memory while reporting: a static error (never released; release ignores it).
    static co_up_error out_of_memory{CO_UP_ERROR_RUNTIME, {}};
    return &out_of_memory;
  }
}

bool is_static_error(const co_up_error* error) { return error != nullptr && error->message.empty(); }

// Runs `body`; whatever it throws becomes an error. NULL on success.
template <typename Body>
co_up_error* guarded(Body&& body) noexcept {
  try {
    body();
    return nullptr;
  } catch (const co_up::Error& e) {
    return make_error(e.kind() == co_up::ErrorKind::kInput ? CO_UP_ERROR_INPUT : CO_UP_ERROR_RUNTIME,
                      e.what());
  } catch (const std::bad_alloc&) {
    return make_error(CO_UP_ERROR_RUNTIME, "out of memory");
  } catch (const std::exception& e) {
    return make_error(CO_UP_ERROR_RUNTIME, e.what());
  } catch (...) {
    return make_error(CO_UP_ERROR_RUNTIME, "unknown exception");
  }
}

void require(const void* pointer, const char* what) {
  if (pointer == nullptr) {
    throw co_up::Error(co_up::ErrorKind::kInput, std::string(what) + " is NULL");
  }
}

// The caller's views as the C++ API's, checked as a Tensor made from them would be (the same
// messages); `shapes` keeps the spans.
std::vector<co_up::TensorView> to_views(const co_up_tensor_view* views, size_t count,
                                        std::vector<std::vector<int64_t>>& shapes) {
  if (count > 0) require(views, "inputs");
  std::vector<co_up::TensorView> out;
  out.reserve(count);
  shapes.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const co_up_tensor_view& v = views[i];
    if (v.struct_size < sizeof(co_up_tensor_view)) {
      throw co_up::Error(co_up::ErrorKind::kInput, "input " + std::to_string(i) +
                                                       ": struct_size is not set (use sizeof(co_up_tensor_view))");
    }
    if (v.rank > 0) require(v.shape, "co_up_tensor_view.shape");
    if (v.element_count > 0) require(v.data, "co_up_tensor_view.data");
    shapes.emplace_back(v.shape, v.shape + v.rank);
    size_t count_of_shape = 1;
    for (int64_t d : shapes.back()) {
      if (d < 0) {
        throw co_up::Error(co_up::ErrorKind::kInput, "tensor shape " + co_up::Tensor::shape_text(shapes.back()) +
                                                         " has a negative dimension");
      }
      count_of_shape *= static_cast<size_t>(d);
    }
    if (count_of_shape != v.element_count) {  // as the Tensor the copying path would make
      throw co_up::Error(co_up::ErrorKind::kInput,
                         "tensor of shape " + co_up::Tensor::shape_text(shapes.back()) + " needs " +
                             std::to_string(count_of_shape) + " values but got " + std::to_string(v.element_count));
    }
    out.push_back({v.data, shapes.back(), v.element_count});
  }
  return out;
}

// Copies of the caller's views, for the calls that keep the frame beyond the call (submit).
std::vector<co_up::Tensor> to_tensors(const co_up_tensor_view* views, size_t count) {
  std::vector<std::vector<int64_t>> shapes;
  std::vector<co_up::Tensor> tensors;
  tensors.reserve(count);
  for (const co_up::TensorView& v : to_views(views, count, shapes)) {
    tensors.emplace_back(std::vector<int64_t>(v.shape.begin(), v.shape.end()),
                         std::vector<float>(v.data, v.data + v.element_count));
  }
  return tensors;
}

void fill_view(const co_up::Tensor& t, co_up_tensor_view* out) {
  *out = co_up_tensor_view{};
  out->struct_size = sizeof(co_up_tensor_view);
  out->data = t.data();
  out->element_count = t.size();
  out->shape = t.shape().data();
  out->rank = t.shape().size();
}

}  // namespace

namespace {
template <typename Open>
co_up_error* open_session(const char* what, const char* name, const co_up_options* options,
                          co_up_session** out_session, Open open) {
  return guarded([&] {
    require(out_session, "out_session");
    *out_session = nullptr;
    require(name, what);
    const co_up::SessionOptions defaults;
    const co_up::SessionOptions& chosen = options != nullptr ? options->options : defaults;
    *out_session = new co_up_session(open(name, chosen));
  });
}
}  // namespace

namespace {
co_up_error* shape_of(const std::vector<std::vector<int64_t>>* shapes, const char* what, size_t index,
                      const int64_t** out_shape, size_t* out_rank) {
  return guarded([&] {
    require(shapes, "session");
    require(out_shape, "out_shape");
    require(out_rank, "out_rank");
    if (index >= shapes->size()) {
      throw co_up::Error(co_up::ErrorKind::kInput, std::string(what) + " " + std::to_string(index) +
                                                       " does not exist (the network has " +
                                                       std::to_string(shapes->size()) + ")");
    }
    *out_shape = (*shapes)[index].data();
    *out_rank = (*shapes)[index].size();
  });
}
}  // namespace

extern "C" {

uint32_t co_up_api_version(void) { return co_up::api_version(); }

co_up_error_code co_up_error_code_of(const co_up_error* error) {
  return error == nullptr ? CO_UP_ERROR_INPUT : error->code;
}

const char* co_up_error_message(const co_up_error* error) {
  if (error == nullptr) return "no error (NULL)";
  if (is_static_error(error)) return "out of memory";
  return error->message.c_str();
}

void co_up_error_release(co_up_error* error) {
  if (!is_static_error(error)) delete error;
}

co_up_error* co_up_options_create(co_up_options** out_options) {
  return guarded([&] {
    require(out_options, "out_options");
    *out_options = new co_up_options{};
  });
}

co_up_error* co_up_options_set(co_up_options* options, const char* key, const char* value) {
  return guarded([&] {
    require(options, "options");
    require(key, "key");
    require(value, "value");
    options->options.set(key, value);
  });
}

void co_up_options_release(co_up_options* options) { delete options; }

uint64_t co_up_result_frame(const co_up_result* result) { return result ? result->result.frame : 0; }
void* co_up_result_user_data(const co_up_result* result) { return result ? result->result.user_data : nullptr; }
size_t co_up_result_output_count(const co_up_result* result) {
  return result ? result->result.outputs.size() : 0;
}

co_up_error* co_up_result_output(const co_up_result* result, size_t index, co_up_tensor_view* out_view) {
  return guarded([&] {
    require(result, "result");
    require(out_view, "out_view");
    if (index >= result->result.outputs.size()) {
      throw co_up::Error(co_up::ErrorKind::kInput, "output " + std::to_string(index) + " does not exist (the result has " +
                                                       std::to_string(result->result.outputs.size()) + ")");
    }
    fill_view(result->result.outputs[index], out_view);
  });
}

void co_up_result_release(co_up_result* result) { delete result; }


co_up_error* co_up_session_open_model(const char* onnx_path, const co_up_options* options,
                                      co_up_session** out_session) {
  return open_session("onnx_path", onnx_path, options, out_session,
                      [](const char* n, const co_up::SessionOptions& o) { return co_up::Session::open_model(n, o); });
}

co_up_error* co_up_session_open_zoo(const char* name, const co_up_options* options,
                                    co_up_session** out_session) {
  return open_session("name", name, options, out_session,
                      [](const char* n, const co_up::SessionOptions& o) { return co_up::Session::open_zoo(n, o); });
}

void co_up_session_release(co_up_session* session) {
  try {
    delete session;
  } catch (...) {  // ~Session does not throw; nothing may cross into C regardless
  }
}

size_t co_up_session_input_count(const co_up_session* session) { return session ? session->inputs.size() : 0; }
size_t co_up_session_output_count(const co_up_session* session) { return session ? session->outputs.size() : 0; }


co_up_error* co_up_session_input_shape(const co_up_session* session, size_t index,
                                       const int64_t** out_shape, size_t* out_rank) {
  return shape_of(session ? &session->inputs : nullptr, "input", index, out_shape, out_rank);
}

co_up_error* co_up_session_output_shape(const co_up_session* session, size_t index,
                                        const int64_t** out_shape, size_t* out_rank) {
  return shape_of(session ? &session->outputs : nullptr, "output", index, out_shape, out_rank);
}

co_up_error* co_up_session_run(co_up_session* session, const co_up_tensor_view* inputs,
                               size_t input_count, co_up_result** out_result) {
  return guarded([&] {
    require(session, "session");
    require(out_result, "out_result");
    *out_result = nullptr;
    auto result = std::make_unique<co_up_result>();
    std::vector<std::vector<int64_t>> shapes;
    const std::vector<co_up::TensorView> views = to_views(inputs, input_count, shapes);
    result->result.outputs = session->session.run(std::span<const co_up::TensorView>(views));
    *out_result = result.release();
  });
}

co_up_error* co_up_session_set_callback(co_up_session* session, co_up_result_callback callback,
                                        void* callback_data) {
  return guarded([&] {
    require(session, "session");
    if (callback == nullptr) {
      session->session.set_result_callback(nullptr);
      return;
    }
    session->session.set_result_callback([callback, callback_data](co_up::Result r) {
      const co_up_result borrowed{std::move(r)};
      callback(callback_data, &borrowed);
    });
  });
}

co_up_error* co_up_session_submit(co_up_session* session, const co_up_tensor_view* inputs,
                                  size_t input_count, void* user_data) {
  return guarded([&] {
    require(session, "session");
    session->session.submit(to_tensors(inputs, input_count), user_data);
  });
}

co_up_error* co_up_session_try_submit(co_up_session* session, const co_up_tensor_view* inputs,
                                      size_t input_count, void* user_data, int* out_accepted) {
  return guarded([&] {
    require(session, "session");
    require(out_accepted, "out_accepted");
    *out_accepted = 0;
    std::vector<co_up::Tensor> tensors = to_tensors(inputs, input_count);
    *out_accepted = session->session.try_submit(std::move(tensors), user_data) ==
                    co_up::SubmitStatus::kAccepted;
  });
}

co_up_error* co_up_session_wait_result(co_up_session* session, co_up_result** out_result) {
  return guarded([&] {
    require(session, "session");
    require(out_result, "out_result");
    *out_result = nullptr;
    auto result = std::make_unique<co_up_result>();
    result->result = session->session.wait_result();
    *out_result = result.release();
  });
}

co_up_error* co_up_session_drain(co_up_session* session) {
  return guarded([&] {
    require(session, "session");
    session->session.drain();
  });
}

co_up_error* co_up_session_profile_json(const co_up_session* session, char** out_json) {
  return guarded([&] {
    require(session, "session");
    require(out_json, "out_json");
    *out_json = nullptr;
    const std::string json = session->session.profile().json;
    char* copy = static_cast<char*>(std::malloc(json.size() + 1));
    if (copy == nullptr) throw std::bad_alloc();
    std::memcpy(copy, json.c_str(), json.size() + 1);
    *out_json = copy;
  });
}

void co_up_string_release(char* text) { std::free(text); }

}  // extern "C"
