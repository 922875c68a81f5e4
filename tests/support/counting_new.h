#pragma once
// Replaces the global operator new (every form) with one that counts while
// g_counting is set, for the tests that check that kernels and steps do not
// allocate. Replacement functions cannot be inline: include this header from
// exactly one source file of a test executable.
#include <cstdlib>
#include <new>

#include "support/allocation_count.h"

namespace tessera::testing {

inline void* counted_alloc(size_t n, size_t align) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
  void* p = align > alignof(std::max_align_t) ? std::aligned_alloc(align, (n + align - 1) / align * align)
                                              : std::malloc(n ? n : 1);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace tessera::testing

void* operator new(size_t n) { return tessera::testing::counted_alloc(n, 0); }
void* operator new(size_t n, std::align_val_t a) { return tessera::testing::counted_alloc(n, (size_t)a); }
// Every form of new must come here too: a nothrow new left to the runtime
// (std::stable_sort's buffer uses one) would be freed by the delete below.
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  try { return tessera::testing::counted_alloc(n, 0); } catch (...) { return nullptr; }
}
void* operator new(size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  try { return tessera::testing::counted_alloc(n, (size_t)a); } catch (...) { return nullptr; }
}
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }
