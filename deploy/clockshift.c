// A wall clock set off for one process, for tests (deploy/restart-security.py, deploy/faults/):
//   LD_PRELOAD=clockshift.so SCANGATE_CLOCK_SHIFT=-3000 scangate run ...        a fixed shift
//   LD_PRELOAD=clockshift.so SCANGATE_CLOCK_SHIFT_FILE=/path/shift scangate run ...  a clock that jumps
// CLOCK_REALTIME (and its coarse form), time() and gettimeofday() read that many seconds off; the
// monotonic and boot clocks stay real. With SCANGATE_CLOCK_SHIFT_FILE the file holds the number
// and is read again at most every 50 ms of the monotonic clock, so writing a new number steps the
// running process's clock, as an NTP step or `date -s` would, without touching the machine's.
// libfaketime does the same but empties a Swift program's argv in some setups (DESIGN.md, wave 2
// hazards).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int (*real_gettime)(clockid_t, struct timespec *);
static long cached_shift;
static long long next_read_ns;

static long shift(void) {
  const char *fixed = getenv("SCANGATE_CLOCK_SHIFT");
  if (fixed) return strtol(fixed, NULL, 10);
  const char *path = getenv("SCANGATE_CLOCK_SHIFT_FILE");
  if (!path) return 0;
  struct timespec mono;
  real_gettime(CLOCK_MONOTONIC, &mono);
  long long now = (long long)mono.tv_sec * 1000000000LL + mono.tv_nsec;
  if (now < __atomic_load_n(&next_read_ns, __ATOMIC_RELAXED)) return __atomic_load_n(&cached_shift, __ATOMIC_RELAXED);
  __atomic_store_n(&next_read_ns, now + 50000000LL, __ATOMIC_RELAXED);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return __atomic_load_n(&cached_shift, __ATOMIC_RELAXED);
  char text[32] = {0};
  ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  if (n > 0) __atomic_store_n(&cached_shift, strtol(text, NULL, 10), __ATOMIC_RELAXED);
  return __atomic_load_n(&cached_shift, __ATOMIC_RELAXED);
}

int clock_gettime(clockid_t id, struct timespec *ts) {
  if (!real_gettime) real_gettime = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
  int r = real_gettime(id, ts);
  if (r == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) ts->tv_sec += shift();
  return r;
}

time_t time(time_t *out) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  if (out) *out = ts.tv_sec;
  return ts.tv_sec;
}

int gettimeofday(struct timeval *tv, void *tz) {
  (void)tz;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  if (tv) {
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
  }
  return 0;
}
