#include "ref_tensor_kernels.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <stdexcept>

namespace co_up::reference {
namespace {

// Same threshold as ref_kernels.cpp: below it the calling thread runs alone.
constexpr int64_t kMinParallelWork = 16384;

ThreadPool* pool_for(ThreadPool* pool, int64_t work) { return work >= kMinParallelWork ? pool : nullptr; }

void check_rank(size_t rank) {
  if (rank > static_cast<size_t>(kMaxRank)) {
    throw std::invalid_argument("rank " + std::to_string(rank) + " is above " + std::to_string(kMaxRank));
  }
}

// Element strides of a dense row-major tensor of `dims`.
std::vector<int64_t> dense_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) s[d - 1] = s[d] * dims[d];
  return s;
}

// Strides of `in` aligned to the trailing dims of an output of rank `rank`, 0 where broadcast.
void aligned_strides(const std::vector<int64_t>& in, const std::vector<int64_t>& out,
                     std::array<int64_t, kMaxRank>& strides) {
  const std::vector<int64_t> dense = dense_strides(in);
  const size_t offset = out.size() - in.size();
  for (size_t d = 0; d < out.size(); ++d) {
    strides[d] = d < offset || in[d - offset] == 1 ? 0 : dense[d - offset];
  }
}

// Offsets of the first element of row `row` (all dims but the last) under two stride sets.
template <typename Plan>
void row_offsets(const Plan& p, int64_t row, const std::array<int64_t, kMaxRank>& s0, int64_t& o0,
                 const std::array<int64_t, kMaxRank>* s1, int64_t* o1) {
  o0 = 0;
  if (o1) *o1 = 0;
  for (int d = p.rank - 2; d >= 0; --d) {
    const int64_t i = row % p.dims[d];
    row /= p.dims[d];
    o0 += i * s0[d];
    if (o1) *o1 += i * (*s1)[d];
  }
}

template <typename F>
void for_rows(int64_t count, int64_t row_length, ThreadPool* pool, F body) {
  const int64_t rows = row_length == 0 ? 0 : count / row_length;
  parallel_for(pool_for(pool, count), rows, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) body(r);
  });
}

float apply_binary(BinaryOp op, float a, float b) {
  switch (op) {
    case BinaryOp::kAdd: return a + b;
    case BinaryOp::kSub: return a - b;
    case BinaryOp::kMul: return a * b;
    case BinaryOp::kDiv: return a / b;
    case BinaryOp::kPow: return b == 2.0f ? a * a : std::pow(a, b);
  }
  return 0.0f;
}

float activate(float v, backends::Activation activation) {
  switch (activation) {
    case backends::Activation::kNone: return v;
    case backends::Activation::kRelu: return v > 0.0f ? v : 0.0f;
    case backends::Activation::kRelu6: return v > 0.0f ? (v < 6.0f ? v : 6.0f) : 0.0f;
  }
  return v;
}

}  // namespace

BroadcastPlan plan_broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                             const std::vector<int64_t>& out) {
  check_rank(out.size());
  if (a.size() > out.size() || b.size() > out.size() || out.empty()) {
    throw std::invalid_argument("broadcast operands do not fit the output");
  }
  BroadcastPlan p;
  p.rank = static_cast<int>(out.size());
  p.count = 1;
  for (size_t d = 0; d < out.size(); ++d) {
    p.dims[d] = out[d];
    p.count *= out[d];
  }
  aligned_strides(a, out, p.a_strides);
  aligned_strides(b, out, p.b_strides);
  return p;
}

void broadcast_binary(BinaryOp op, const BroadcastPlan& p, const float* a, const float* b, float* y,
                      backends::Activation activation, ThreadPool* pool) {
  const int64_t len = p.dims[p.rank - 1];
  const int64_t sa = p.a_strides[p.rank - 1], sb = p.b_strides[p.rank - 1];
  for_rows(p.count, len, pool, [&](int64_t row) {
    int64_t oa = 0, ob = 0;
    row_offsets(p, row, p.a_strides, oa, &p.b_strides, &ob);
    float* out = y + row * len;
    const float* pa = a + oa;
    const float* pb = b + ob;
    for (int64_t i = 0; i < len; ++i) out[i] = activate(apply_binary(op, pa[i * sa], pb[i * sb]), activation);
  });
}

void unary(UnaryOp op, const float* x, float* y, int64_t count, ThreadPool* pool) {
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (count + kBlock - 1) / kBlock;
  parallel_for(pool_for(pool, count), blocks, [&](int64_t begin, int64_t end) {
    const int64_t last = std::min(count, end * kBlock);
    for (int64_t i = begin * kBlock; i < last; ++i) {
      const float v = x[i];
      switch (op) {
        case UnaryOp::kSqrt: y[i] = std::sqrt(v); break;
        case UnaryOp::kErf: y[i] = std::erf(v); break;
        case UnaryOp::kTanh: y[i] = std::tanh(v); break;
        case UnaryOp::kExp: y[i] = std::exp(v); break;
        case UnaryOp::kGelu: y[i] = 0.5f * v * (1.0f + std::erf(v * 0.70710678118654752f)); break;
        case UnaryOp::kGeluTanh:
          y[i] = 0.5f * v * (1.0f + std::tanh(0.79788456080286536f * (v + 0.044715f * v * v * v)));
          break;
      }
    }
  });
}

MatMulPlan plan_matmul(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  MatMulPlan p;
  p.m = a[a.size() - 2];
  p.k = a.back();
  p.n = b.back();
  std::vector<int64_t> ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  std::vector<int64_t> out(std::max(ab.size(), bb.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const size_t oa = out.size() - ab.size(), ob = out.size() - bb.size();
    const int64_t da = i < oa ? 1 : ab[i - oa], db = i < ob ? 1 : bb[i - ob];
    out[i] = da == 1 ? db : da;
  }
  // A batch of rank 0 is one matrix: a rank-1 plan of one element.
  if (out.empty()) {
    out = {1};
    ab = {1};
    bb = {1};
  }
  p.batch = plan_broadcast(ab, bb, out);
  for (int d = 0; d < p.batch.rank; ++d) {
    p.batch.a_strides[d] *= p.m * p.k;
    p.batch.b_strides[d] *= p.k * p.n;
  }
  return p;
}

void matmul(const MatMulPlan& p, const float* a, const float* b, float* y, ThreadPool* pool) {
  const int64_t batches = p.batch.count;
  // One row of one matrix per item; each output element sums k in ascending order.
  parallel_for(pool_for(pool, batches * p.m * p.n * p.k / 4), batches * p.m, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t batch = item / p.m, i = item % p.m;
      int64_t oa = 0, ob = 0;
      // Batch offsets: the batch plan's dims decomposed like a row index with the last dim too.
      int64_t rest = batch;
      for (int d = p.batch.rank - 1; d >= 0; --d) {
        const int64_t idx = rest % p.batch.dims[d];
        rest /= p.batch.dims[d];
        oa += idx * p.batch.a_strides[d];
        ob += idx * p.batch.b_strides[d];
      }
      const float* arow = a + oa + i * p.k;
      const float* bm = b + ob;
      float* out = y + (batch * p.m + i) * p.n;
      for (int64_t j = 0; j < p.n; ++j) out[j] = 0.0f;
      for (int64_t kk = 0; kk < p.k; ++kk) {
        const float av = arow[kk];
        const float* brow = bm + kk * p.n;
        for (int64_t j = 0; j < p.n; ++j) out[j] += av * brow[j];
      }
    }
  });
}

StridedCopyPlan plan_transpose(const std::vector<int64_t>& in, const std::vector<int64_t>& perm) {
  check_rank(in.size());
  const std::vector<int64_t> s = dense_strides(in);
  StridedCopyPlan p;
  p.rank = static_cast<int>(in.size());
  p.count = 1;
  for (size_t d = 0; d < in.size(); ++d) {
    p.dims[d] = in[static_cast<size_t>(perm[d])];
    p.strides[d] = s[static_cast<size_t>(perm[d])];
    p.count *= p.dims[d];
  }
  return p;
}

StridedCopyPlan plan_slice(const std::vector<int64_t>& in, const std::vector<int64_t>& starts,
                           const std::vector<int64_t>& steps, const std::vector<int64_t>& out) {
  check_rank(in.size());
  const std::vector<int64_t> s = dense_strides(in);
  StridedCopyPlan p;
  p.rank = static_cast<int>(in.size());
  p.count = 1;
  for (size_t d = 0; d < in.size(); ++d) {
    p.dims[d] = out[d];
    p.strides[d] = s[d] * steps[d];
    p.base += starts[d] * s[d];
    p.count *= out[d];
  }
  return p;
}

void strided_copy(const StridedCopyPlan& p, const float* x, float* y, ThreadPool* pool) {
  const int64_t len = p.dims[p.rank - 1];
  const int64_t stride = p.strides[p.rank - 1];
  for_rows(p.count, len, pool, [&](int64_t row) {
    int64_t offset = 0;
    row_offsets(p, row, p.strides, offset, nullptr, nullptr);
    const float* src = x + p.base + offset;
    float* out = y + row * len;
    for (int64_t i = 0; i < len; ++i) out[i] = src[i * stride];
  });
}

ReducePlan plan_reduce(const std::vector<int64_t>& in, const std::vector<int64_t>& axes, bool mean) {
  check_rank(in.size());
  const std::vector<int64_t> s = dense_strides(in);
  ReducePlan p;
  p.mean = mean;
  p.kept.count = 1;
  p.reduced.count = 1;
  int kept = 0, reduced = 0;
  size_t next = 0;
  for (size_t d = 0; d < in.size(); ++d) {
    const bool r = next < axes.size() && axes[next] == static_cast<int64_t>(d);
    if (r) ++next;
    StridedCopyPlan& part = r ? p.reduced : p.kept;
    int& at = r ? reduced : kept;
    part.dims[at] = in[d];
    part.strides[at] = s[d];
    part.count *= in[d];
    ++at;
  }
  // An empty set of dims is one element.
  if (kept == 0) {
    p.kept.dims[0] = 1;
    kept = 1;
  }
  if (reduced == 0) {
    p.reduced.dims[0] = 1;
    reduced = 1;
  }
  p.kept.rank = kept;
  p.reduced.rank = reduced;
  return p;
}

void reduce(const ReducePlan& p, const float* x, float* y, ThreadPool* pool) {
  const StridedCopyPlan& k = p.kept;
  const StridedCopyPlan& r = p.reduced;
  const float scale = p.mean ? 1.0f / static_cast<float>(r.count) : 1.0f;
  parallel_for(pool_for(pool, k.count * r.count), k.count, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      int64_t base = 0, rest = o;
      for (int d = k.rank - 1; d >= 0; --d) {
        base += (rest % k.dims[d]) * k.strides[d];
        rest /= k.dims[d];
      }
      float sum = 0.0f;
      const int64_t len = r.dims[r.rank - 1], stride = r.strides[r.rank - 1];
      for (int64_t row = 0; row < r.count / len; ++row) {
        int64_t offset = 0;
        row_offsets(r, row, r.strides, offset, nullptr, nullptr);
        const float* src = x + base + offset;
        for (int64_t i = 0; i < len; ++i) sum += src[i * stride];
      }
      y[o] = sum * scale;
    }
  });
}

void gather(const float* x, float* y, int64_t outer, int64_t axis_len, int64_t inner,
            const std::vector<int64_t>& indices, ThreadPool* pool) {
  const auto count = static_cast<int64_t>(indices.size());
  parallel_for(pool_for(pool, outer * count * inner), outer * count, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t o = item / count, i = item % count;
      const float* src = x + (o * axis_len + indices[static_cast<size_t>(i)]) * inner;
      float* dst = y + item * inner;
      for (int64_t j = 0; j < inner; ++j) dst[j] = src[j];
    }
  });
}

void layer_norm(const float* x, float* y, int64_t outer, int64_t size, const float* scale,
                const float* bias, float epsilon, ThreadPool* pool) {
  parallel_for(pool_for(pool, outer * size), outer, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const float* in = x + row * size;
      float* out = y + row * size;
      float sum = 0.0f;
      for (int64_t i = 0; i < size; ++i) sum += in[i];
      const float mean = sum / static_cast<float>(size);
      float sq = 0.0f;
      for (int64_t i = 0; i < size; ++i) sq += (in[i] - mean) * (in[i] - mean);
      const float inv = 1.0f / std::sqrt(sq / static_cast<float>(size) + epsilon);
      for (int64_t i = 0; i < size; ++i) {
        out[i] = (in[i] - mean) * inv * scale[i] + (bias ? bias[i] : 0.0f);
      }
    }
  });
}

}  // namespace co_up::reference
