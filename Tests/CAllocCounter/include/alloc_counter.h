// Counts heap allocations made by the calling thread (malloc, calloc, realloc, posix_memalign,
// aligned_alloc, memalign), by interposing glibc's allocator entry points. Linked only into the
// test executable; every call still goes to glibc.
#ifndef ALLOC_COUNTER_H
#define ALLOC_COUNTER_H
#include <stddef.h>
#include <stdint.h>
/// Resets this thread's counter.
void alloc_counter_reset(void);
/// Allocations by this thread since the last reset.
uint64_t alloc_counter_mallocs(void);
/// Bytes requested by this thread since the last reset.
uint64_t alloc_counter_bytes(void);
/// Allocations by every thread of the process since it started (never reset).
uint64_t alloc_counter_process_mallocs(void);
/// Bytes the C allocator (glibc) has handed out to every thread and not had back: its own accounting.
size_t alloc_counter_heap_in_use(void);
#endif
