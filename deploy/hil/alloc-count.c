// A heap allocation counter for a whole process, every thread: LD_PRELOAD it. The rig builds it
// (gcc -shared -fPIC -pthread) and runs the real service under it in the guest.
//
// Interposes glibc's allocator entry points (malloc, calloc, realloc, free, posix_memalign,
// aligned_alloc, memalign, valloc, pvalloc); C++ operator new and the Swift runtime allocate
// through them. Every call still goes to glibc. Counters are process-wide atomics.
//
// Reading it from outside, with no code in the service: when ALLOC_COUNT_FIFO and
// ALLOC_COUNT_OUT are set, a thread of this library (all signals blocked, so the service's
// signal handling is unchanged) reads the FIFO; for every byte written to it, it appends
// "allocations A frees F bytes B" to ALLOC_COUNT_OUT. The thread itself allocates nothing.
#define _GNU_SOURCE
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void __libc_free(void *p);

static _Atomic uint64_t allocations, frees, bytes, main_thread_allocations;
static pid_t process;

// Where allocations come from: with ALLOC_COUNT_TRACE set, the call stacks (up to 12 return
// addresses) of every 97th allocation after the first snapshot, up to 64 of them, are kept and
// reported (samples spread over the window, not just its first burst).
enum { TRACES = 64, DEPTH = 12, EVERY = 97 };
static _Atomic uint64_t since_armed;
static int tracing;
static _Atomic int armed, traced;
static void *traces[TRACES][DEPTH];
static _Thread_local int in_trace;

static inline void counted(size_t size) {
  atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&bytes, size, memory_order_relaxed);
  if (gettid() == process) atomic_fetch_add_explicit(&main_thread_allocations, 1, memory_order_relaxed);
  if (atomic_load_explicit(&armed, memory_order_relaxed) && !in_trace &&
      atomic_fetch_add(&since_armed, 1) % EVERY == 0) {
    int slot = atomic_fetch_add(&traced, 1);
    if (slot < TRACES) {
      in_trace = 1;
      backtrace(traces[slot], DEPTH);
      in_trace = 0;
    }
  }
}

void *malloc(size_t size) {
  counted(size);
  return __libc_malloc(size);
}
void *calloc(size_t count, size_t size) {
  counted(count * size);
  return __libc_calloc(count, size);
}
void *realloc(void *p, size_t size) {
  counted(size);
  return __libc_realloc(p, size);
}
void free(void *p) {
  if (p != NULL) atomic_fetch_add_explicit(&frees, 1, memory_order_relaxed);
  __libc_free(p);
}
int posix_memalign(void **out, size_t alignment, size_t size) {
  if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0) return EINVAL;
  counted(size);
  void *p = __libc_memalign(alignment, size);
  if (p == NULL) return ENOMEM;
  *out = p;
  return 0;
}
void *aligned_alloc(size_t alignment, size_t size) {
  counted(size);
  return __libc_memalign(alignment, size);
}
void *memalign(size_t alignment, size_t size) {
  counted(size);
  return __libc_memalign(alignment, size);
}
void *valloc(size_t size) {
  counted(size);
  return __libc_memalign((size_t)sysconf(_SC_PAGESIZE), size);
}
void *pvalloc(size_t size) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  counted(size);
  return __libc_memalign(page, (size + page - 1) / page * page);
}

/// The counters now (for a program that loads this library and asks directly).
void alloc_count_read(uint64_t out[3]) {
  out[0] = atomic_load(&allocations);
  out[1] = atomic_load(&frees);
  out[2] = atomic_load(&bytes);
}

static char fifo_path[512], out_path[512];

static char *put(char *p, const char *s) {
  while (*s) *p++ = *s++;
  return p;
}
static char *put_number(char *p, uint64_t v) {
  char digits[24];
  int n = 0;
  do { digits[n++] = (char)('0' + v % 10); v /= 10; } while (v != 0);
  while (n > 0) *p++ = digits[--n];
  return p;
}

static void *reporter(void *unused) {
  (void)unused;
  int fifo = open(fifo_path, O_RDWR | O_CLOEXEC);  // read-write: never sees end of file
  if (fifo < 0) return NULL;
  for (;;) {
    char byte;
    ssize_t n = read(fifo, &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return NULL;
    uint64_t c[3];
    alloc_count_read(c);
    char line[128], *p = line;
    p = put(p, "allocations "); p = put_number(p, c[0]);
    p = put(p, " frees "); p = put_number(p, c[1]);
    p = put(p, " bytes "); p = put_number(p, c[2]);
    p = put(p, " main-thread "); p = put_number(p, atomic_load(&main_thread_allocations));
    *p++ = '\n';
    int out = open(out_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (out < 0) continue;
    ssize_t written = write(out, line, (size_t)(p - line));
    int seen = atomic_load(&traced);
    for (int t = 0; t < seen && t < TRACES; t++) {
      char trace[DEPTH * 20 + 16], *q = put(trace, "trace");
      for (int f = 0; f < DEPTH && traces[t][f] != NULL; f++) {
        q = put(q, " 0x");
        uintptr_t a = (uintptr_t)traces[t][f];
        char hex[17];
        int n = 0;
        do { hex[n++] = "0123456789abcdef"[a & 15]; a >>= 4; } while (a != 0);
        while (n > 0) *q++ = hex[--n];
      }
      *q++ = '\n';
      written = write(out, trace, (size_t)(q - trace));
    }
    (void)written;
    close(out);
    if (tracing) atomic_store(&armed, 1);
  }
}

__attribute__((constructor)) static void start_reporter(void) {
  const char *fifo = getenv("ALLOC_COUNT_FIFO"), *out = getenv("ALLOC_COUNT_OUT");
  if (fifo == NULL || out == NULL || strlen(fifo) >= sizeof fifo_path || strlen(out) >= sizeof out_path) return;
  strcpy(fifo_path, fifo);
  strcpy(out_path, out);
  process = getpid();
  tracing = getenv("ALLOC_COUNT_TRACE") != NULL;
  if (tracing) {  // loads the unwinder now, not inside an allocation
    void *warm[2];
    backtrace(warm, 2);
  }
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  pthread_t thread;
  if (pthread_create(&thread, NULL, reporter, NULL) == 0) pthread_detach(thread);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}
