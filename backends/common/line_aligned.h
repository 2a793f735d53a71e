// Vectors whose storage starts on a cache line (64 bytes). Packed weights read with 64-byte
// vector loads need it: malloc places large blocks 16 bytes into a line, and every load would
// then touch two lines (measured: the AVX-512 convolutions of ResNet50 lost 11 % to it).
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace co_up::backends {

template <typename T>
struct LineAligned {
  using value_type = T;
  static constexpr std::align_val_t kAlign{64};
  LineAligned() = default;
  template <typename U>
  LineAligned(const LineAligned<U>&) {}  // NOLINT(google-explicit-constructor): allocator rebind
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlign)); }
  void deallocate(T* p, size_t n) { ::operator delete(p, n * sizeof(T), kAlign); }
  bool operator==(const LineAligned&) const { return true; }
};

template <typename T>
using LineAlignedVector = std::vector<T, LineAligned<T>>;

}  // namespace co_up::backends
