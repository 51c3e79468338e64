#define _GNU_SOURCE
#include "test_sched.h"

#include <errno.h>
#include <sched.h>

int test_pin_thread_to_cpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof set, &set) == 0 ? 0 : errno;
}

int test_unpin_thread(void) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int i = 0; i < CPU_SETSIZE; i++) CPU_SET(i, &set);
  return sched_setaffinity(0, sizeof set, &set) == 0 ? 0 : errno;
}
