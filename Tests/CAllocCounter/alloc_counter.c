#define _GNU_SOURCE
#include "alloc_counter.h"

#include <errno.h>
#include <stddef.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);

static _Thread_local uint64_t thread_allocations;
static _Thread_local uint64_t thread_bytes;
static _Atomic uint64_t process_allocations;  // every thread's, for libraries with their own threads

void alloc_counter_reset(void) {
  thread_allocations = 0;
  thread_bytes = 0;
}
uint64_t alloc_counter_mallocs(void) { return thread_allocations; }
uint64_t alloc_counter_bytes(void) { return thread_bytes; }
uint64_t alloc_counter_process_mallocs(void) { return process_allocations; }

void *malloc(size_t size) {
  thread_allocations++;
  process_allocations++;
  thread_bytes += size;
  return __libc_malloc(size);
}

void *calloc(size_t count, size_t size) {
  thread_allocations++;
  process_allocations++;
  thread_bytes += count * size;
  return __libc_calloc(count, size);
}

void *realloc(void *p, size_t size) {
  thread_allocations++;
  process_allocations++;
  thread_bytes += size;
  return __libc_realloc(p, size);
}

int posix_memalign(void **out, size_t alignment, size_t size) {
  thread_allocations++;
  process_allocations++;
  thread_bytes += size;
  void *p = __libc_memalign(alignment, size);
  if (p == NULL) return ENOMEM;
  *out = p;
  return 0;
}

void *aligned_alloc(size_t alignment, size_t size) {
  thread_allocations++;
  process_allocations++;
  thread_bytes += size;
  return __libc_memalign(alignment, size);
}

void *memalign(size_t alignment, size_t size) {
  thread_allocations++;
  process_allocations++;
  thread_bytes += size;
  return __libc_memalign(alignment, size);
}

#include <malloc.h>

size_t alloc_counter_heap_in_use(void) {
  struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}
