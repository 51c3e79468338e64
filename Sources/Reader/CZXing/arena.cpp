// Replaces the global C++ allocation functions so the decoding engine's per-call allocations
// land in a preallocated arena instead of the heap (ScanGate's fixed-memory promise).
//
// Outside a decode (arena not active on this thread) every call goes straight to malloc/free,
// so other C++ code in the process behaves as usual. operator delete recognises arena blocks by
// address range and never hands them to free().
#include "arena.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <sys/mman.h>

namespace scangate {
namespace {

constexpr int kRegistrySlots = 256;
std::atomic<uintptr_t> registry_lo[kRegistrySlots];
std::atomic<uintptr_t> registry_hi[kRegistrySlots];
std::atomic<Arena *> registry_arena[kRegistrySlots];

thread_local Arena *active_arena = nullptr;

constexpr size_t kAlign = 16;

Arena *owner_of(void *p) {
  auto address = reinterpret_cast<uintptr_t>(p);
  for (int i = 0; i < kRegistrySlots; i++) {
    uintptr_t lo = registry_lo[i].load(std::memory_order_acquire);
    if (lo != 0 && address >= lo && address < registry_hi[i].load(std::memory_order_acquire))
      return registry_arena[i].load(std::memory_order_acquire);
  }
  return nullptr;
}

void *arena_allocate(size_t size, size_t alignment) {
  Arena *arena = active_arena;
  if (arena != nullptr) {
    if (alignment < kAlign) alignment = kAlign;
    size_t start = (arena->top + alignment - 1) & ~(alignment - 1);
    if (size <= arena->capacity && start <= arena->capacity - size) {
      arena->top = start + size;
      arena->live++;
      arena->allocations++;
      if (arena->top - arena->floor > arena->high_water) arena->high_water = arena->top - arena->floor;
      return arena->base + start;
    }
    arena->overflows++;
  }
  if (alignment <= kAlign) return std::malloc(size == 0 ? 1 : size);
  void *p = nullptr;
  if (posix_memalign(&p, alignment, size == 0 ? alignment : size) != 0) return nullptr;
  return p;
}

void arena_free(void *p) {
  if (p == nullptr) return;
  if (Arena *arena = owner_of(p)) {
    // Blocks below the floor are pinned survivors of earlier decodes; they do not count.
    if (static_cast<uint8_t *>(p) >= arena->base + arena->floor && arena->live > 0) arena->live--;
    return;
  }
  std::free(p);
}

}  // namespace

bool arena_init(Arena &arena, size_t bytes) {
  arena = Arena{};
  if (bytes == 0) return true;
  void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return false;
  std::memset(p, 0, bytes);  // make the pages resident now, not during the first frames
  arena.base = static_cast<uint8_t *>(p);
  arena.capacity = bytes;
  for (int i = 0; i < kRegistrySlots; i++) {
    uintptr_t expected = 0;
    if (registry_lo[i].load() == 0 && registry_arena[i].load() == nullptr) {
      registry_arena[i].store(&arena, std::memory_order_release);
      registry_hi[i].store(reinterpret_cast<uintptr_t>(arena.base) + bytes, std::memory_order_release);
      if (registry_lo[i].compare_exchange_strong(expected, reinterpret_cast<uintptr_t>(arena.base))) {
        arena.registry_slot = i;
        return true;
      }
    }
  }
  // No free slot: work without an arena rather than fail.
  munmap(p, bytes);
  arena.base = nullptr;
  arena.capacity = 0;
  return true;
}

void arena_release(Arena &arena) {
  if (arena.base == nullptr) return;
  if (arena.floor > 0) {
    // Engine objects pinned here live until the process ends: keep their pages (and the
    // registration, so deleting them later never reaches free()), return the rest.
    size_t page = 4096;
    size_t keep = (arena.floor + page - 1) & ~(page - 1);
    if (keep < arena.capacity) munmap(arena.base + keep, arena.capacity - keep);
    return;
  }
  int slot = arena.registry_slot;
  if (slot >= 0) {
    registry_lo[slot].store(0, std::memory_order_release);
    registry_hi[slot].store(0, std::memory_order_release);
    registry_arena[slot].store(nullptr, std::memory_order_release);
  }
  munmap(arena.base, arena.capacity);
  arena.base = nullptr;
}

void arena_begin(Arena &arena) {
  if (arena.base != nullptr) active_arena = &arena;
}

void arena_end(Arena &arena) {
  if (active_arena != &arena) return;  // this decode ran on the heap (a thread's first)
  active_arena = nullptr;
  if (arena.base == nullptr) return;
  if (arena.live == 0) {
    arena.top = arena.floor;
  } else {
    arena.floor = arena.top;  // pin: something allocated during the decode is still in use
    arena.live = 0;
  }
}

}  // namespace scangate

// MARK: - The replaced allocation functions.

void *operator new(size_t size) {
  void *p = scangate::arena_allocate(size, 0);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void *operator new[](size_t size) { return operator new(size); }
void *operator new(size_t size, const std::nothrow_t &) noexcept {
  return scangate::arena_allocate(size, 0);
}
void *operator new[](size_t size, const std::nothrow_t &) noexcept {
  return scangate::arena_allocate(size, 0);
}
void *operator new(size_t size, std::align_val_t alignment) {
  void *p = scangate::arena_allocate(size, static_cast<size_t>(alignment));
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void *operator new[](size_t size, std::align_val_t alignment) {
  return operator new(size, alignment);
}
void operator delete(void *p) noexcept { scangate::arena_free(p); }
void operator delete[](void *p) noexcept { scangate::arena_free(p); }
void operator delete(void *p, size_t) noexcept { scangate::arena_free(p); }
void operator delete[](void *p, size_t) noexcept { scangate::arena_free(p); }
void operator delete(void *p, std::align_val_t) noexcept { scangate::arena_free(p); }
void operator delete[](void *p, std::align_val_t) noexcept { scangate::arena_free(p); }
void operator delete(void *p, size_t, std::align_val_t) noexcept { scangate::arena_free(p); }
void operator delete[](void *p, size_t, std::align_val_t) noexcept { scangate::arena_free(p); }
void operator delete(void *p, const std::nothrow_t &) noexcept { scangate::arena_free(p); }
void operator delete[](void *p, const std::nothrow_t &) noexcept { scangate::arena_free(p); }
