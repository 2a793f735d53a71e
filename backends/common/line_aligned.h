// Memory for packed weights and activations: every block starts on a cache line (64 bytes), and
// blocks of 2 MiB or more start on a 2 MiB boundary and are advised as transparent huge pages.
//
// Why: packed weights read with 64-byte vector loads need line alignment (malloc places large
// blocks 16 bytes into a line, and every load then touches two lines: the AVX-512 convolutions
// of ResNet50 lost 11 % to it). Huge pages because a layer streams megabytes of weights once
// per frame (ResNet50's last stage: 4 MiB per layer), which with 4 KiB pages is a TLB miss and
// a page walk every 4 KiB (measured: that stage 3-7 % faster). Where the kernel's THP mode is
// "never" the advice is ignored and nothing changes.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace co_up::backends {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// `bytes` (> 0) of uninitialised memory aligned as above; release with std::free. Throws
// std::bad_alloc.
inline void* allocate_lines(size_t bytes) {
  const size_t align = bytes >= kHugePageBytes ? kHugePageBytes : 64;
  const size_t rounded = (bytes + align - 1) / align * align;  // aligned_alloc's contract
  void* p = std::aligned_alloc(align, rounded);
  if (!p) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // Advice only: a failure (no THP support) leaves ordinary pages.
  if (align == kHugePageBytes) madvise(p, rounded, MADV_HUGEPAGE);
#endif
  return p;
}

template <typename T>
struct LineAligned {
  using value_type = T;
  LineAligned() = default;
  template <typename U>
  LineAligned(const LineAligned<U>&) {}  // NOLINT(google-explicit-constructor): allocator rebind
  T* allocate(size_t n) { return static_cast<T*>(allocate_lines(n * sizeof(T))); }
  void deallocate(T* p, size_t) { std::free(p); }
  bool operator==(const LineAligned&) const { return true; }
};

template <typename T>
using LineAlignedVector = std::vector<T, LineAligned<T>>;

}  // namespace co_up::backends
