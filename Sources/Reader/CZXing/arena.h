// A bump arena that serves C++ operator new while a decode runs on this thread.
#pragma once
#include <cstddef>
#include <cstdint>

namespace scangate {

struct Arena {
  uint8_t *base = nullptr;
  size_t capacity = 0;
  size_t floor = 0;        // bytes pinned for objects that outlived a decode
  size_t top = 0;          // next free byte
  size_t live = 0;         // arena blocks not yet deleted since the last reset
  uint64_t allocations = 0;
  uint64_t overflows = 0;
  uint64_t high_water = 0;
  int registry_slot = -1;
};

/// Reserves `bytes` (page-aligned, touched once so the pages are resident).
bool arena_init(Arena &arena, size_t bytes);
void arena_release(Arena &arena);

/// Routes this thread's operator new into `arena` until arena_end.
void arena_begin(Arena &arena);
/// Stops routing. If every block handed out was deleted, the arena is reset to its floor;
/// otherwise what is still live (an engine's lazily created static, say) is pinned by raising
/// the floor, so it is never overwritten.
void arena_end(Arena &arena);

}  // namespace scangate
