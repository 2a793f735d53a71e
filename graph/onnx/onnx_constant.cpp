#include "graph/onnx/onnx_constant.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "onnx/onnx_pb.h"

namespace co_up::graph {
namespace {

constexpr int64_t kMaxElements = int64_t{1} << 31;
// Folding computes shapes and small tables; a larger result means a corrupt or hostile file.
constexpr int64_t kMaxFoldElements = int64_t{1} << 24;

int64_t fold_count(const std::vector<int64_t>& shape);

[[noreturn]] void bad(const std::string& what) { throw std::invalid_argument(what); }

std::vector<int64_t> strides_of(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  float value;
  if (exponent == 0) {
    value = std::ldexp(static_cast<float>(mantissa), -24);
  } else if (exponent == 31) {
    value = mantissa ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  } else {
    value = std::ldexp(static_cast<float>(mantissa | 0x400u), static_cast<int>(exponent) - 25);
  }
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  bits |= sign;
  std::memcpy(&value, &bits, 4);
  return value;
}

template <typename T>
std::vector<T> read_raw(const std::string& raw, int64_t count) {
  if (raw.size() != static_cast<size_t>(count) * sizeof(T)) {
    bad("raw_data has " + std::to_string(raw.size()) + " bytes, the shape needs " +
        std::to_string(static_cast<size_t>(count) * sizeof(T)));
  }
  std::vector<T> values(static_cast<size_t>(count));
  if (count > 0) std::memcpy(values.data(), raw.data(), raw.size());  // little-endian host
  return values;
}

template <typename Field>
void check_field_size(const Field& field, int64_t count, const char* name) {
  if (static_cast<int64_t>(field.size()) != count) {
    bad(std::string(name) + " has " + std::to_string(field.size()) + " values, the shape needs " +
        std::to_string(count));
  }
}

}  // namespace

int64_t checked_count(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0) bad("negative dimension " + std::to_string(d));
    if (d != 0 && count > kMaxElements / d) bad("more than 2^31 elements");
    count *= d;
  }
  return count;
}

namespace {
int64_t fold_count(const std::vector<int64_t>& shape) {
  const int64_t count = checked_count(shape);
  if (count > kMaxFoldElements) bad("folding would create " + std::to_string(count) + " elements");
  return count;
}
}  // namespace

int64_t OnnxConstant::count() const { return static_cast<int64_t>(is_int ? i.size() : f.size()); }

std::vector<float> OnnxConstant::floats() const {
  if (!is_int) return f;
  std::vector<float> out(i.size());
  for (size_t k = 0; k < i.size(); ++k) out[k] = static_cast<float>(i[k]);
  return out;
}

std::vector<int64_t> OnnxConstant::ints() const {
  if (is_int) return i;
  std::vector<int64_t> out(f.size());
  for (size_t k = 0; k < f.size(); ++k) {
    if (!std::isfinite(f[k]) || std::fabs(f[k]) > 9.0e18f) bad("value out of integer range");
    out[k] = static_cast<int64_t>(f[k]);
  }
  return out;
}

OnnxConstant OnnxConstant::from_floats(std::vector<int64_t> shape, std::vector<float> values) {
  OnnxConstant c;
  c.shape = std::move(shape);
  c.f = std::move(values);
  return c;
}

OnnxConstant OnnxConstant::from_ints(std::vector<int64_t> shape, std::vector<int64_t> values) {
  OnnxConstant c;
  c.shape = std::move(shape);
  c.is_int = true;
  c.i = std::move(values);
  return c;
}

int64_t normalize_axis(int64_t axis, int64_t rank, bool inclusive_end) {
  const int64_t limit = inclusive_end ? rank + 1 : rank;
  const int64_t a = axis < 0 ? axis + limit - (inclusive_end ? 1 : 0) : axis;
  if (a < 0 || a >= limit) {
    bad("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  }
  return a;
}

OnnxConstant decode_tensor(const onnx::TensorProto& t) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    bad("tensor '" + t.name() + "' uses external data, which co_up does not read (save the model "
        "with all tensors inside the .onnx file)");
  }
  if (t.has_segment()) bad("tensor '" + t.name() + "' is segmented");
  std::vector<int64_t> shape(t.dims().begin(), t.dims().end());
  const int64_t count = checked_count(shape);
  const bool raw = t.has_raw_data();
  const std::string& r = t.raw_data();
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT: {
      if (raw) return OnnxConstant::from_floats(shape, read_raw<float>(r, count));
      check_field_size(t.float_data(), count, "float_data");
      return OnnxConstant::from_floats(shape, {t.float_data().begin(), t.float_data().end()});
    }
    case onnx::TensorProto::DOUBLE: {
      std::vector<double> d;
      if (raw) {
        d = read_raw<double>(r, count);
      } else {
        check_field_size(t.double_data(), count, "double_data");
        d.assign(t.double_data().begin(), t.double_data().end());
      }
      return OnnxConstant::from_floats(shape, {d.begin(), d.end()});
    }
    case onnx::TensorProto::FLOAT16: {
      if (!raw) check_field_size(t.int32_data(), count, "int32_data");
      std::vector<float> out(static_cast<size_t>(count));
      if (raw) {
        const std::vector<uint16_t> h = read_raw<uint16_t>(r, count);
        for (size_t k = 0; k < out.size(); ++k) out[k] = half_to_float(h[k]);
      } else {
        for (size_t k = 0; k < out.size(); ++k) {
          out[k] = half_to_float(static_cast<uint16_t>(t.int32_data(static_cast<int>(k))));
        }
      }
      return OnnxConstant::from_floats(shape, std::move(out));
    }
    case onnx::TensorProto::INT64: {
      if (raw) return OnnxConstant::from_ints(shape, read_raw<int64_t>(r, count));
      check_field_size(t.int64_data(), count, "int64_data");
      return OnnxConstant::from_ints(shape, {t.int64_data().begin(), t.int64_data().end()});
    }
    case onnx::TensorProto::UINT64: {
      std::vector<int64_t> out;
      if (raw) {
        const std::vector<uint64_t> u = read_raw<uint64_t>(r, count);
        out.assign(u.begin(), u.end());
      } else {
        check_field_size(t.uint64_data(), count, "uint64_data");
        out.assign(t.uint64_data().begin(), t.uint64_data().end());
      }
      return OnnxConstant::from_ints(shape, std::move(out));
    }
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::INT16:
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::UINT16:
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::BOOL: {
      if (!raw) check_field_size(t.int32_data(), count, "int32_data");
      std::vector<int64_t> out(static_cast<size_t>(count));
      if (raw) {
        const int type = t.data_type();
        if (type == onnx::TensorProto::INT32) {
          const auto v = read_raw<int32_t>(r, count);
          out.assign(v.begin(), v.end());
        } else if (type == onnx::TensorProto::INT16) {
          const auto v = read_raw<int16_t>(r, count);
          out.assign(v.begin(), v.end());
        } else if (type == onnx::TensorProto::UINT16) {
          const auto v = read_raw<uint16_t>(r, count);
          out.assign(v.begin(), v.end());
        } else if (type == onnx::TensorProto::INT8) {
          const auto v = read_raw<int8_t>(r, count);
          out.assign(v.begin(), v.end());
        } else {
          const auto v = read_raw<uint8_t>(r, count);
          out.assign(v.begin(), v.end());
        }
      } else {
        check_field_size(t.int32_data(), count, "int32_data");
        out.assign(t.int32_data().begin(), t.int32_data().end());
      }
      return OnnxConstant::from_ints(shape, std::move(out));
    }
    default:
      bad("tensor '" + t.name() + "' has element type " + std::to_string(t.data_type()) +
          ", which co_up does not read (float, double, float16, integers and bool are supported)");
  }
}

OnnxConstant fold_binary(const std::string& op, const OnnxConstant& a, const OnnxConstant& b) {
  const size_t rank = std::max(a.shape.size(), b.shape.size());
  std::vector<int64_t> shape(rank), sa(rank, 1), sb(rank, 1);
  for (size_t d = 0; d < rank; ++d) {
    const int64_t da = d + a.shape.size() >= rank ? a.shape[d + a.shape.size() - rank] : 1;
    const int64_t db = d + b.shape.size() >= rank ? b.shape[d + b.shape.size() - rank] : 1;
    if (da != db && da != 1 && db != 1) bad("shapes do not broadcast");
    shape[d] = da == 1 ? db : da;  // numpy: 1 broadcasts to any size, 0 included
    sa[d] = da;
    sb[d] = db;
  }
  const int64_t count = fold_count(shape);
  const std::vector<int64_t> stride_a = strides_of(sa), stride_b = strides_of(sb),
                             stride_o = strides_of(shape);
  auto offsets = [&](int64_t k, int64_t& ia, int64_t& ib) {
    ia = ib = 0;
    for (size_t d = 0; d < rank; ++d) {
      const int64_t idx = (k / stride_o[d]) % shape[d];
      if (sa[d] != 1) ia += idx * stride_a[d];
      if (sb[d] != 1) ib += idx * stride_b[d];
    }
  };
  if (a.is_int && b.is_int) {
    std::vector<int64_t> out(static_cast<size_t>(count));
    for (int64_t k = 0; k < count; ++k) {
      int64_t ia, ib;
      offsets(k, ia, ib);
      const int64_t x = a.i[ia], y = b.i[ib];
      int64_t r = 0;
      if (op == "Add") r = static_cast<int64_t>(static_cast<uint64_t>(x) + static_cast<uint64_t>(y));
      else if (op == "Sub") r = static_cast<int64_t>(static_cast<uint64_t>(x) - static_cast<uint64_t>(y));
      else if (op == "Mul") r = static_cast<int64_t>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y));
      else if (op == "Div") {
        if (y == 0 || (x == INT64_MIN && y == -1)) bad("integer division by zero or overflow");
        r = x / y;
      } else if (op == "Mod" || op == "FMod") {  // Mod: the divisor's sign (Python's %)
        if (y == 0 || (x == INT64_MIN && y == -1)) bad("integer modulo by zero or overflow");
        r = x % y;
        if (op == "Mod" && r != 0 && ((r < 0) != (y < 0))) r += y;
      } else if (op == "Equal") {
        r = x == y ? 1 : 0;
      } else {
        bad("cannot fold " + op);
      }
      out[static_cast<size_t>(k)] = r;
    }
    return OnnxConstant::from_ints(shape, std::move(out));
  }
  const std::vector<float> fa = a.floats(), fb = b.floats();
  std::vector<float> out(static_cast<size_t>(count));
  for (int64_t k = 0; k < count; ++k) {
    int64_t ia, ib;
    offsets(k, ia, ib);
    const float x = fa[ia], y = fb[ib];
    float r;
    if (op == "Add") r = x + y;
    else if (op == "Sub") r = x - y;
    else if (op == "Mul") r = x * y;
    else if (op == "Div") r = x / y;
    else if (op == "Pow") r = std::pow(x, y);
    else if (op == "Equal") r = x == y ? 1.0f : 0.0f;
    else if (op == "FMod") r = std::fmod(x, y);
    else if (op == "Mod") {
      r = std::fmod(x, y);
      if (r != 0.0f && ((r < 0.0f) != (y < 0.0f))) r += y;
    }
    else bad("cannot fold " + op);
    out[static_cast<size_t>(k)] = r;
  }
  return OnnxConstant::from_floats(shape, std::move(out));
}

namespace {

// Copies elements of `data` at the flat indices `source` into a constant of `shape`.
OnnxConstant pick(const OnnxConstant& data, std::vector<int64_t> shape,
                  const std::vector<int64_t>& source) {
  if (data.is_int) {
    std::vector<int64_t> out(source.size());
    for (size_t k = 0; k < source.size(); ++k) out[k] = data.i[source[k]];
    return OnnxConstant::from_ints(std::move(shape), std::move(out));
  }
  std::vector<float> out(source.size());
  for (size_t k = 0; k < source.size(); ++k) out[k] = data.f[source[k]];
  return OnnxConstant::from_floats(std::move(shape), std::move(out));
}

}  // namespace

OnnxConstant fold_gather(const OnnxConstant& data, const OnnxConstant& indices, int64_t axis) {
  const auto rank = static_cast<int64_t>(data.shape.size());
  if (rank == 0) bad("Gather on a scalar");
  axis = normalize_axis(axis, rank);
  const std::vector<int64_t> idx = indices.ints();
  std::vector<int64_t> shape(data.shape.begin(), data.shape.begin() + axis);
  shape.insert(shape.end(), indices.shape.begin(), indices.shape.end());
  shape.insert(shape.end(), data.shape.begin() + axis + 1, data.shape.end());
  const int64_t count = fold_count(shape);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= data.shape[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= data.shape[d];
  const int64_t extent = data.shape[axis];
  std::vector<int64_t> source;
  source.reserve(static_cast<size_t>(count));
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j : idx) {
      if (j < -extent || j >= extent) bad("Gather index " + std::to_string(j) + " out of range");
      if (j < 0) j += extent;
      for (int64_t in = 0; in < inner; ++in) source.push_back((o * extent + j) * inner + in);
    }
  }
  return pick(data, std::move(shape), source);
}

OnnxConstant fold_slice(const OnnxConstant& data, const std::vector<int64_t>& starts,
                        const std::vector<int64_t>& ends, const std::vector<int64_t>& axes_in,
                        const std::vector<int64_t>& steps_in) {
  const auto rank = static_cast<int64_t>(data.shape.size());
  if (starts.size() != ends.size()) bad("Slice starts and ends differ in length");
  std::vector<int64_t> axes = axes_in, steps = steps_in;
  if (axes.empty()) {
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size()) bad("Slice inputs differ in length");
  std::vector<int64_t> begin(rank, 0), step(rank, 1), shape = data.shape;
  for (size_t k = 0; k < starts.size(); ++k) {
    const int64_t axis = normalize_axis(axes[k], rank);
    const int64_t dim = data.shape[axis];
    const int64_t s = steps[k];
    if (s == 0 || s > kMaxElements || s < -kMaxElements) bad("Slice step " + std::to_string(s));
    auto wrap = [&](int64_t v) { return v < 0 ? (v < -dim ? -1 : v + dim) : v; };
    int64_t b = wrap(starts[k]), e = wrap(ends[k]);
    if (s > 0) {
      b = std::clamp<int64_t>(b, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      shape[axis] = e > b ? (e - b + s - 1) / s : 0;
    } else {
      b = std::clamp<int64_t>(b, 0, std::max<int64_t>(dim - 1, 0));
      e = std::clamp<int64_t>(e, -1, dim - 1);
      shape[axis] = dim > 0 && b > e ? (b - e + (-s) - 1) / (-s) : 0;
    }
    begin[axis] = b;
    step[axis] = s;
  }
  const int64_t count = checked_count(shape);
  const std::vector<int64_t> in_strides = strides_of(data.shape), out_strides = strides_of(shape);
  std::vector<int64_t> source(static_cast<size_t>(count));
  for (int64_t k = 0; k < count; ++k) {
    int64_t offset = 0;
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t idx = (k / out_strides[d]) % shape[d];
      offset += (begin[d] + idx * step[d]) * in_strides[d];
    }
    source[static_cast<size_t>(k)] = offset;
  }
  return pick(data, std::move(shape), source);
}

OnnxConstant fold_transpose(const OnnxConstant& data, std::vector<int64_t> perm) {
  const auto rank = static_cast<int64_t>(data.shape.size());
  if (perm.empty()) {
    for (int64_t d = rank; d-- > 0;) perm.push_back(d);
  }
  if (static_cast<int64_t>(perm.size()) != rank) bad("Transpose perm has the wrong length");
  std::vector<bool> seen(rank, false);
  std::vector<int64_t> shape(rank);
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t p = perm[d];
    if (p < 0 || p >= rank || seen[p]) bad("Transpose perm is not a permutation");
    seen[p] = true;
    shape[d] = data.shape[p];
  }
  const int64_t count = checked_count(shape);
  const std::vector<int64_t> in_strides = strides_of(data.shape), out_strides = strides_of(shape);
  std::vector<int64_t> source(static_cast<size_t>(count));
  for (int64_t k = 0; k < count; ++k) {
    int64_t offset = 0;
    for (int64_t d = 0; d < rank; ++d) offset += ((k / out_strides[d]) % shape[d]) * in_strides[perm[d]];
    source[static_cast<size_t>(k)] = offset;
  }
  return pick(data, std::move(shape), source);
}

OnnxConstant fold_concat(const std::vector<const OnnxConstant*>& parts, int64_t axis) {
  if (parts.empty()) bad("Concat without inputs");
  const auto rank = static_cast<int64_t>(parts[0]->shape.size());
  if (rank == 0) bad("Concat of scalars");
  axis = normalize_axis(axis, rank);
  std::vector<int64_t> shape = parts[0]->shape;
  shape[axis] = 0;
  bool is_int = true;
  for (const OnnxConstant* p : parts) {
    if (static_cast<int64_t>(p->shape.size()) != rank) bad("Concat inputs differ in rank");
    for (int64_t d = 0; d < rank; ++d) {
      if (d != axis && p->shape[d] != parts[0]->shape[d]) bad("Concat inputs differ outside the axis");
    }
    shape[axis] += p->shape[axis];
    is_int = is_int && p->is_int;
  }
  checked_count(shape);
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
  OnnxConstant out;
  out.shape = shape;
  out.is_int = is_int;
  for (int64_t o = 0; o < outer; ++o) {
    for (const OnnxConstant* p : parts) {
      const int64_t chunk = outer == 0 ? 0 : p->count() / outer;
      if (is_int) {
        out.i.insert(out.i.end(), p->i.begin() + o * chunk, p->i.begin() + (o + 1) * chunk);
      } else {
        const std::vector<float> f = p->floats();
        out.f.insert(out.f.end(), f.begin() + o * chunk, f.begin() + (o + 1) * chunk);
      }
    }
  }
  return out;
}

}  // namespace co_up::graph
