// A fake librknnrt.so: the seven RKNN C API functions co_up's rknn shim calls, with the documented
// signatures and struct layouts, declared for the fake alone (tests/rknn/fake_rknn_abi.h, not the
// shim's header), so the shim's marshalling is checked exactly without Rockchip's runtime or an NPU.
//
// Its "RKNN model" is the ONNX partition `co_up --export-partitions` writes (the tests copy
// <graph>_<s>_<e>.onnx to .rknn, which checks export and naming end to end): rknn_init imports it
// with co_up's ONNX importer; rknn_run computes it with the cpu-reference kernels
// (tests/rknn/graph_runner.h). What the fake declares its tensors to be comes from the
// environment, read at rknn_init:
//   FAKE_RKNNRT_INPUT   "f32,nchw" (default) | "<f32|f16|int8|uint8>,<nchw|nhwc>[,<scale>,<zp>]"
//                       (scale and zero point of int8/uint8 inputs; default 1/64 and 0)
//   FAKE_RKNNRT_OUTPUT  "nchw" (default) | "nhwc": rank-4 outputs are delivered NHWC
//   FAKE_RKNNRT_LOG     a file to which every call appends one line (below); unset: no log
// It converts nothing for its caller: rknn_inputs_set must pass exactly the declared type,
// layout and size (pass_through 0), so the bytes it logs are the shim's own conversion.
//
// Log lines: "<function> ctx=<id> key=value ...", e.g.
//   rknn_init ctx=1 size=1234 flag=0
//   rknn_query ctx=1 cmd=INPUT_ATTR index=0 n_dims=4 dims=1,6,6,256 n_elems=9216 size=9216 fmt=NHWC
//              type=INT8 qnt=AFFINE zp=-3 scale=0.05 name=pool5            (one line)
//   rknn_inputs_set ctx=1 n=1 in0.index=0 in0.type=INT8 in0.fmt=NHWC in0.size=9216
//                   in0.pass_through=0 in0.fnv=<FNV-1a 64 of the bytes, hex>
//   rknn_run ctx=1 / rknn_outputs_get ctx=1 n=1 out0.index=0 out0.want_float=1 out0.is_prealloc=1
//   out0.size=4000 / rknn_outputs_release ctx=1 n=1 / rknn_destroy ctx=1
// A failing call logs "error=<reason>" and returns an RKNN error code.
//
// fake_rknnrt_compute_ns() and fake_rknnrt_io_ns() (exported too) are the time spent computing in
// rknn_run and copying tensors in rknn_inputs_set / rknn_outputs_get, summed over all contexts,
// for the overhead benchmark to subtract.
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "graph/onnx/onnx_importer.h"
#include "tests/rknn/fake_rknn_abi.h"
#include "tests/rknn/graph_runner.h"

#define FAKE_RKNN_EXPORT extern "C" __attribute__((visibility("default")))

using namespace fake_rknn_abi;

namespace {

struct Failure {
  int code;
  std::string reason;
};

const char* type_name(rknn_tensor_type t) {
  switch (t) {
    case RKNN_TENSOR_FLOAT32: return "FLOAT32";
    case RKNN_TENSOR_FLOAT16: return "FLOAT16";
    case RKNN_TENSOR_INT8: return "INT8";
    case RKNN_TENSOR_UINT8: return "UINT8";
    default: return "OTHER";
  }
}

const char* fmt_name(rknn_tensor_format f) {
  switch (f) {
    case RKNN_TENSOR_NCHW: return "NCHW";
    case RKNN_TENSOR_NHWC: return "NHWC";
    case RKNN_TENSOR_NC1HWC2: return "NC1HWC2";
    default: return "UNDEFINED";
  }
}

const char* qnt_name(rknn_tensor_qnt_type q) {
  switch (q) {
    case RKNN_TENSOR_QNT_NONE: return "NONE";
    case RKNN_TENSOR_QNT_DFP: return "DFP";
    case RKNN_TENSOR_QNT_AFFINE_ASYMMETRIC: return "AFFINE";
  }
  return "?";
}

uint64_t elapsed_ns(std::chrono::steady_clock::time_point start) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
}

uint64_t fnv1a(const void* data, size_t size) {
  uint64_t hash = 1469598103934665603ull;
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) hash = (hash ^ bytes[i]) * 1099511628211ull;
  return hash;
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  float magnitude;
  if (exponent == 0) {
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);
  } else if (exponent == 31) {
    magnitude = mantissa ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else {
    magnitude = std::ldexp(static_cast<float>(mantissa | 0x400u), static_cast<int>(exponent) - 25);
  }
  return sign ? -magnitude : magnitude;
}

struct Config {
  rknn_tensor_type input_type = RKNN_TENSOR_FLOAT32;
  rknn_tensor_format input_fmt = RKNN_TENSOR_NCHW;
  float scale = 1.0f / 64.0f;
  int32_t zero_point = 0;
  rknn_tensor_format output_fmt = RKNN_TENSOR_NCHW;
  std::string log;
};

Config read_config() {
  Config c;
  if (const char* log = std::getenv("FAKE_RKNNRT_LOG")) c.log = log;
  if (const char* in = std::getenv("FAKE_RKNNRT_INPUT")) {
    std::vector<std::string> parts;
    std::stringstream text(in);
    for (std::string part; std::getline(text, part, ',');) parts.push_back(part);
    const std::string type = parts.empty() ? "f32" : parts[0];
    c.input_type = type == "f16" ? RKNN_TENSOR_FLOAT16
                   : type == "int8" ? RKNN_TENSOR_INT8
                   : type == "uint8" ? RKNN_TENSOR_UINT8
                                     : RKNN_TENSOR_FLOAT32;
    if (parts.size() > 1 && parts[1] == "nhwc") c.input_fmt = RKNN_TENSOR_NHWC;
    if (parts.size() > 3) {
      c.scale = std::stof(parts[2]);
      c.zero_point = std::stoi(parts[3]);
    }
  }
  if (const char* out = std::getenv("FAKE_RKNNRT_OUTPUT"); out && std::string(out) == "nhwc") {
    c.output_fmt = RKNN_TENSOR_NHWC;
  }
  return c;
}

size_t type_size(rknn_tensor_type t) {
  return t == RKNN_TENSOR_FLOAT32 ? 4 : t == RKNN_TENSOR_FLOAT16 ? 2 : 1;
}

// NCHW index of the element at position `i` of a tensor stored in `fmt` with NCHW dims `d`.
size_t nchw_index(size_t i, const std::vector<int64_t>& d, rknn_tensor_format fmt) {
  if (fmt != RKNN_TENSOR_NHWC || d.size() != 4) return i;
  const auto c = static_cast<size_t>(d[1]), h = static_cast<size_t>(d[2]), w = static_cast<size_t>(d[3]);
  const size_t ch = i % c, x = (i / c) % w, y = (i / c / w) % h, n = i / c / w / h;
  return ((n * c + ch) * h + y) * w + x;
}

struct Tensor {
  co_up::graph::TensorId id;
  std::vector<int64_t> dims;  // NCHW
  rknn_tensor_attr attr{};
};

struct Context {
  rknn_context id = 0;
  Config config;
  std::unique_ptr<co_up::graph::Graph> graph;
  std::unique_ptr<co_up::test::ReferenceGraphRunner> runner;
  std::vector<Tensor> inputs, outputs;
  bool inputs_ready = false, ran = false, outputs_held = false;
  std::vector<std::vector<float>> output_buffers;  // what rknn_outputs_get allocated
};

class Registry {
 public:
  static Registry& get() {
    static Registry registry;
    return registry;
  }
  rknn_context add(std::unique_ptr<Context> context) {
    std::lock_guard lock(mutex_);
    context->id = ++last_id_;
    const rknn_context id = context->id;
    contexts_[id] = std::move(context);
    return id;
  }
  Context* find(rknn_context id) {
    std::lock_guard lock(mutex_);
    auto it = contexts_.find(id);
    return it == contexts_.end() ? nullptr : it->second.get();
  }
  void remove(rknn_context id) {
    std::unique_ptr<Context> doomed;  // destroyed outside the lock
    std::lock_guard lock(mutex_);
    if (auto it = contexts_.find(id); it != contexts_.end()) {
      doomed = std::move(it->second);
      contexts_.erase(it);
    }
  }
  void log(const std::string& path, const std::string& line) {
    if (path.empty()) return;
    std::lock_guard lock(log_mutex_);
    std::ofstream(path, std::ios::app) << line << "\n";
  }
  std::atomic<uint64_t> compute_ns{0};  // in rknn_run's kernels
  std::atomic<uint64_t> io_ns{0};       // copying inputs in and outputs out, as a runtime does

 private:
  std::mutex mutex_;
  std::map<rknn_context, std::unique_ptr<Context>> contexts_;
  rknn_context last_id_ = 0;
  std::mutex log_mutex_;
};

// Runs one API call: `body` fills the log line after the function name and context, or throws a
// Failure; either way the line is logged once.
template <typename Body>
int api_call(const char* function, rknn_context id, const std::string& log_path, Body&& body) {
  std::ostringstream line;
  line << function << " ctx=" << id;
  int code = RKNN_SUCC;
  try {
    body(line);
  } catch (const Failure& f) {
    line << " error=" << f.reason;
    code = f.code;
  } catch (const std::exception& e) {
    line << " error=" << e.what();
    code = RKNN_ERR_FAIL;
  }
  Registry::get().log(log_path, line.str());
  return code;
}

Context& context_or_fail(rknn_context id) {
  Context* c = Registry::get().find(id);
  if (c == nullptr) throw Failure{RKNN_ERR_CTX_INVALID, "unknown context"};
  return *c;
}

std::string log_path_of(rknn_context id) {
  const Context* c = Registry::get().find(id);
  return c ? c->config.log : read_config().log;
}

rknn_tensor_attr make_attr(uint32_t index, const co_up::graph::Tensor& t, rknn_tensor_format fmt,
                           rknn_tensor_type type, const Config& config) {
  rknn_tensor_attr a{};
  a.index = index;
  const std::vector<int64_t>& d = t.desc.shape;
  const bool nhwc = fmt == RKNN_TENSOR_NHWC && d.size() == 4;
  a.fmt = d.size() == 4 ? fmt : RKNN_TENSOR_UNDEFINED;
  a.n_dims = static_cast<uint32_t>(d.size());
  for (size_t k = 0; k < d.size(); ++k) {
    const size_t from = nhwc ? std::vector<size_t>{0, 2, 3, 1}[k] : k;
    a.dims[k] = static_cast<uint32_t>(d[from]);
  }
  std::snprintf(a.name, sizeof a.name, "%s", t.name.c_str());
  a.n_elems = static_cast<uint32_t>(t.desc.element_count());
  a.type = type;
  a.size = a.n_elems * static_cast<uint32_t>(type_size(type));
  a.size_with_stride = a.size;
  if (type == RKNN_TENSOR_INT8 || type == RKNN_TENSOR_UINT8) {
    a.qnt_type = RKNN_TENSOR_QNT_AFFINE_ASYMMETRIC;
    a.zp = config.zero_point;
    a.scale = config.scale;
  } else {
    a.qnt_type = RKNN_TENSOR_QNT_NONE;
    a.scale = 1.0f;
  }
  return a;
}

std::string attr_text(const rknn_tensor_attr& a) {
  std::ostringstream s;
  s << " index=" << a.index << " n_dims=" << a.n_dims << " dims=";
  for (uint32_t k = 0; k < a.n_dims; ++k) s << (k ? "," : "") << a.dims[k];
  s << " n_elems=" << a.n_elems << " size=" << a.size << " fmt=" << fmt_name(a.fmt)
    << " type=" << type_name(a.type) << " qnt=" << qnt_name(a.qnt_type) << " zp=" << a.zp
    << " scale=" << a.scale << " name=" << a.name;
  return s.str();
}

}  // namespace

FAKE_RKNN_EXPORT int rknn_init(rknn_context* context, void* model, uint32_t size, uint32_t flag,
                               rknn_init_extend* /*extend*/) {
  auto c = std::make_unique<Context>();
  c->config = read_config();
  const std::string log = c->config.log;
  return api_call("rknn_init", 0, log, [&](std::ostringstream& line) {
    line << " size=" << size << " flag=" << flag;
    if (context == nullptr || model == nullptr) throw Failure{RKNN_ERR_PARAM_INVALID, "NULL argument"};
    std::string bytes;
    if (size == 0) {  // the documented path form
      std::ifstream in(static_cast<const char*>(model), std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    } else {
      bytes.assign(static_cast<const char*>(model), size);
    }
    try {
      c->graph = std::make_unique<co_up::graph::Graph>(co_up::graph::import_onnx_bytes(bytes, "fake rknn model"));
      c->runner = std::make_unique<co_up::test::ReferenceGraphRunner>(*c->graph);
    } catch (const std::exception& e) {
      throw Failure{RKNN_ERR_MODEL_INVALID, e.what()};
    }
    const co_up::graph::Graph& g = *c->graph;
    for (size_t i = 0; i < g.inputs().size(); ++i) {
      const co_up::graph::Tensor& t = g.tensor(g.inputs()[i]);
      c->inputs.push_back({t.id, t.desc.shape,
                           make_attr(static_cast<uint32_t>(i), t, c->config.input_fmt, c->config.input_type, c->config)});
    }
    for (size_t i = 0; i < g.outputs().size(); ++i) {
      const co_up::graph::Tensor& t = g.tensor(g.outputs()[i]);
      c->outputs.push_back({t.id, t.desc.shape,
                            make_attr(static_cast<uint32_t>(i), t, c->config.output_fmt, RKNN_TENSOR_FLOAT32, c->config)});
    }
    *context = Registry::get().add(std::move(c));
    line.str("");  // the line was started before the context had its id

    line << "rknn_init ctx=" << *context << " size=" << size << " flag=" << flag;
  });
}

FAKE_RKNN_EXPORT int rknn_destroy(rknn_context context) {
  return api_call("rknn_destroy", context, log_path_of(context), [&](std::ostringstream&) {
    context_or_fail(context);
    Registry::get().remove(context);
  });
}

FAKE_RKNN_EXPORT int rknn_query(rknn_context context, rknn_query_cmd cmd, void* info, uint32_t size) {
  return api_call("rknn_query", context, log_path_of(context), [&](std::ostringstream& line) {
    Context& c = context_or_fail(context);
    if (info == nullptr) throw Failure{RKNN_ERR_PARAM_INVALID, "info is NULL"};
    if (cmd == RKNN_QUERY_IN_OUT_NUM) {
      line << " cmd=IN_OUT_NUM";
      if (size != sizeof(rknn_input_output_num)) throw Failure{RKNN_ERR_PARAM_INVALID, "size " + std::to_string(size)};
      auto* io = static_cast<rknn_input_output_num*>(info);
      io->n_input = static_cast<uint32_t>(c.inputs.size());
      io->n_output = static_cast<uint32_t>(c.outputs.size());
      line << " n_input=" << io->n_input << " n_output=" << io->n_output;
      return;
    }
    if (cmd != RKNN_QUERY_INPUT_ATTR && cmd != RKNN_QUERY_OUTPUT_ATTR) {
      line << " cmd=" << cmd;
      throw Failure{RKNN_ERR_PARAM_INVALID, "query not implemented by the fake"};
    }
    const bool input = cmd == RKNN_QUERY_INPUT_ATTR;
    line << (input ? " cmd=INPUT_ATTR" : " cmd=OUTPUT_ATTR");
    if (size != sizeof(rknn_tensor_attr)) throw Failure{RKNN_ERR_PARAM_INVALID, "size " + std::to_string(size)};
    auto* attr = static_cast<rknn_tensor_attr*>(info);
    const std::vector<Tensor>& list = input ? c.inputs : c.outputs;
    if (attr->index >= list.size()) throw Failure{RKNN_ERR_PARAM_INVALID, "index " + std::to_string(attr->index)};
    *attr = list[attr->index].attr;
    line << attr_text(*attr);
  });
}

FAKE_RKNN_EXPORT int rknn_inputs_set(rknn_context context, uint32_t n_inputs, rknn_input inputs[]) {
  return api_call("rknn_inputs_set", context, log_path_of(context), [&](std::ostringstream& line) {
    Context& c = context_or_fail(context);
    line << " n=" << n_inputs;
    if (n_inputs != c.inputs.size() || inputs == nullptr) throw Failure{RKNN_ERR_INPUT_INVALID, "input count"};
    for (uint32_t i = 0; i < n_inputs; ++i) {
      const rknn_input& in = inputs[i];
      line << " in" << i << ".index=" << in.index << " in" << i << ".type=" << type_name(in.type) << " in" << i
           << ".fmt=" << fmt_name(in.fmt) << " in" << i << ".size=" << in.size << " in" << i
           << ".pass_through=" << static_cast<int>(in.pass_through);
      if (in.index >= c.inputs.size() || in.buf == nullptr) throw Failure{RKNN_ERR_INPUT_INVALID, "index or buf"};
      // Hashing 200 KB takes longer than the rest of the call: only for a log.
      if (!c.config.log.empty()) line << " in" << i << ".fnv=" << std::hex << fnv1a(in.buf, in.size) << std::dec;
      const Tensor& t = c.inputs[in.index];
      const bool declared_fmt = in.fmt == t.attr.fmt || (t.attr.fmt == RKNN_TENSOR_UNDEFINED && in.fmt == RKNN_TENSOR_NCHW);
      if (in.pass_through != 0 || in.type != t.attr.type || !declared_fmt || in.size != t.attr.size) {
        throw Failure{RKNN_ERR_INPUT_INVALID, "not the declared type, layout and size (the fake converts nothing)"};
      }
      std::span<float> dst = c.runner->values(t.id);
      const auto start = std::chrono::steady_clock::now();
      for (size_t k = 0; k < dst.size(); ++k) {
        float v = 0;
        switch (in.type) {
          case RKNN_TENSOR_FLOAT32: std::memcpy(&v, static_cast<const char*>(in.buf) + 4 * k, 4); break;
          case RKNN_TENSOR_FLOAT16: {
            uint16_t h;
            std::memcpy(&h, static_cast<const char*>(in.buf) + 2 * k, 2);
            v = half_to_float(h);
            break;
          }
          case RKNN_TENSOR_INT8:
            v = (static_cast<const int8_t*>(in.buf)[k] - t.attr.zp) * t.attr.scale;
            break;
          default:
            v = (static_cast<const uint8_t*>(in.buf)[k] - t.attr.zp) * t.attr.scale;
        }
        dst[nchw_index(k, t.dims, t.attr.fmt)] = v;
      }
      Registry::get().io_ns += elapsed_ns(start);
    }
    c.inputs_ready = true;
  });
}

FAKE_RKNN_EXPORT int rknn_run(rknn_context context, rknn_run_extend* /*extend*/) {
  return api_call("rknn_run", context, log_path_of(context), [&](std::ostringstream&) {
    Context& c = context_or_fail(context);
    if (!c.inputs_ready) throw Failure{RKNN_ERR_INPUT_INVALID, "rknn_run before rknn_inputs_set"};
    const auto start = std::chrono::steady_clock::now();
    c.runner->run();
    Registry::get().compute_ns += elapsed_ns(start);
    c.ran = true;
    c.inputs_ready = false;
  });
}

FAKE_RKNN_EXPORT int rknn_outputs_get(rknn_context context, uint32_t n_outputs, rknn_output outputs[],
                                      rknn_output_extend* /*extend*/) {
  return api_call("rknn_outputs_get", context, log_path_of(context), [&](std::ostringstream& line) {
    Context& c = context_or_fail(context);
    line << " n=" << n_outputs;
    if (n_outputs != c.outputs.size() || outputs == nullptr) throw Failure{RKNN_ERR_OUTPUT_INVALID, "output count"};
    if (!c.ran) throw Failure{RKNN_ERR_OUTPUT_INVALID, "rknn_outputs_get before rknn_run"};
    if (c.outputs_held) throw Failure{RKNN_ERR_OUTPUT_INVALID, "previous outputs not released"};
    c.output_buffers.assign(n_outputs, {});
    for (uint32_t i = 0; i < n_outputs; ++i) {
      rknn_output& out = outputs[i];
      line << " out" << i << ".index=" << out.index << " out" << i << ".want_float=" << static_cast<int>(out.want_float)
           << " out" << i << ".is_prealloc=" << static_cast<int>(out.is_prealloc);
      if (out.index >= c.outputs.size()) throw Failure{RKNN_ERR_OUTPUT_INVALID, "index"};
      const Tensor& t = c.outputs[out.index];
      std::span<const float> src = c.runner->values(t.id);
      float* dst;
      if (out.is_prealloc) {
        if (out.buf == nullptr || out.size != t.attr.size) throw Failure{RKNN_ERR_OUTPUT_INVALID, "preallocated buf or size"};
        dst = static_cast<float*>(out.buf);
      } else {
        c.output_buffers[i].resize(src.size());
        dst = c.output_buffers[i].data();
        out.buf = dst;
        out.size = t.attr.size;
      }
      line << " out" << i << ".size=" << out.size;
      const auto start = std::chrono::steady_clock::now();
      for (size_t k = 0; k < src.size(); ++k) dst[k] = src[nchw_index(k, t.dims, t.attr.fmt)];
      Registry::get().io_ns += elapsed_ns(start);
    }
    c.outputs_held = true;
    c.ran = false;
  });
}

FAKE_RKNN_EXPORT int rknn_outputs_release(rknn_context context, uint32_t n_outputs, rknn_output outputs[]) {
  return api_call("rknn_outputs_release", context, log_path_of(context), [&](std::ostringstream& line) {
    Context& c = context_or_fail(context);
    line << " n=" << n_outputs;
    if (!c.outputs_held || n_outputs != c.outputs.size() || outputs == nullptr) {
      throw Failure{RKNN_ERR_OUTPUT_INVALID, "nothing to release"};
    }
    for (uint32_t i = 0; i < n_outputs; ++i) {
      if (!outputs[i].is_prealloc) outputs[i].buf = nullptr;
    }
    c.output_buffers.clear();
    c.outputs_held = false;
  });
}

FAKE_RKNN_EXPORT uint64_t fake_rknnrt_compute_ns() { return Registry::get().compute_ns.load(); }
FAKE_RKNN_EXPORT uint64_t fake_rknnrt_io_ns() { return Registry::get().io_ns.load(); }
