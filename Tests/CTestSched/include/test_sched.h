#pragma once

/* Binds the calling thread to CPU `cpu` (0 on success, else an errno); for tests that put two
   threads on one core. sched_setaffinity is a GNU extension Swift's Glibc module does not show. */
int test_pin_thread_to_cpu(int cpu);

/* Lets the calling thread run on every CPU again. */
int test_unpin_thread(void);
