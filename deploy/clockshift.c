// A wall clock set back or forward for one process, for tests (deploy/restart-security.py):
// LD_PRELOAD=clockshift.so SCANGATE_CLOCK_SHIFT=-3000 scangate run ...
// CLOCK_REALTIME (and its coarse form), time() and gettimeofday() are shifted by that many
// seconds; the monotonic and boot clocks stay real. libfaketime does the same but empties a
// Swift program's argv in some setups (DESIGN.md, wave 2 hazards).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

static long shift(void) {
  const char *s = getenv("SCANGATE_CLOCK_SHIFT");
  return s ? strtol(s, NULL, 10) : 0;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
  static int (*real)(clockid_t, struct timespec *);
  if (!real) real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
  int r = real(id, ts);
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
