// A wall clock that jumps while the process runs, for the fault stage (deploy/faults/integrity.py):
// LD_PRELOAD=clockjump.so SCANGATE_CLOCK_SHIFT_FILE=/path/shift scangate run ...
// The file holds a number of seconds; CLOCK_REALTIME (and its coarse form), time() and
// gettimeofday() read that far off. The file is read again at most every 50 ms of the monotonic
// clock, so writing a new number steps the running process's clock, as an NTP step or `date -s`
// would, without touching the machine's clock. The monotonic and boot clocks stay real.
// (deploy/clockshift.c shifts by a fixed amount from the start, through the environment.)
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
  struct timespec mono;
  real_gettime(CLOCK_MONOTONIC, &mono);
  long long now = (long long)mono.tv_sec * 1000000000LL + mono.tv_nsec;
  if (now < __atomic_load_n(&next_read_ns, __ATOMIC_RELAXED)) return __atomic_load_n(&cached_shift, __ATOMIC_RELAXED);
  __atomic_store_n(&next_read_ns, now + 50000000LL, __ATOMIC_RELAXED);
  const char *path = getenv("SCANGATE_CLOCK_SHIFT_FILE");
  if (!path) return 0;
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
