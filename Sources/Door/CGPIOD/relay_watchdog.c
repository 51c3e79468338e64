// The relay watchdog: holds the relay's hard cap when the loop cannot (see its comment below).
// sigaction and pthread_sigmask are POSIX, not ISO C.
#define _GNU_SOURCE
#include "scangate_gpiod.h"
#include "gpiod_internal.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

// MARK: - Relay watchdog (both backends)
//
// The loop's hard cap on the relay (the actuator's period end) holds only while the loop runs;
// this thread holds it when the loop does not (a slow SD card, a hung driver call, a flood).
// State is four C11 atomics:
//   deadline   CLOCK_MONOTONIC ns by which the relay must be inactive; 0 = disarmed. The loop
//              stores it (release) before it drives the relay active, and 0 after it drove the
//              relay inactive. The thread claims an expired deadline with a compare-exchange to 0,
//              so a disarm or a re-arm that lands first wins and nothing is driven.
//   wake       the futex word: bumped (release) after each arm, and by stop; the thread reads it
//              (acquire) before it reads the deadline, and FUTEX_WAIT compares it in the kernel,
//              so an arm between the read and the wait makes the wait return at once.
//   tripped_at when the thread drove the relay inactive (release after the drive); the loop
//              exchanges it with 0 (acquire) on every tick.
//   trips, arms counters (relaxed).
// The thread only ever drives the relay INACTIVE. That is safe to race with the owner's own
// inactive write. It cannot race the owner's active write of the same period: the owner arms
// before it drives active and the deadline lies past the period's cap end, by when the owner no
// longer drives it active. (An owner late by more than the margin that starts a new period
// exactly while the thread is between its claim and its ioctl has that new pulse cut short: the
// safe direction, and the trip it then takes tells it so.)

// The drive is the crash handler's: one GPIO_V2_LINE_SET_VALUES_IOCTL on the request's fd (v2),
// or gpiod_line_set_value (v1), which besides its one ioctl only stores the value it set in the
// line object (an aligned int the owner's own set stores too; the kernel orders the ioctls).
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics must be lock-free: the loop never takes a lock to arm");

struct sg_relay_watchdog {
  _Atomic uint32_t wake;
  _Atomic int stop;
  _Atomic uint64_t deadline;
  _Atomic uint64_t tripped_at;
  _Atomic uint64_t trips;
  _Atomic uint64_t arms;
  const sg_crash_slot *slot;  // the registered line (NULL: the callback)
  void (*drive_inactive)(void *context);
  void *context;
  pthread_t thread;
};

static uint64_t watchdog_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/// Waits while `*word == seen`, until `deadline_ns` on CLOCK_MONOTONIC (0: no timeout).
/// FUTEX_WAIT_BITSET takes an absolute timeout on CLOCK_MONOTONIC (no FUTEX_CLOCK_REALTIME).
static void watchdog_wait(_Atomic uint32_t *word, uint32_t seen, uint64_t deadline_ns) {
  struct timespec at = {.tv_sec = (time_t)(deadline_ns / 1000000000u), .tv_nsec = (long)(deadline_ns % 1000000000u)};
  syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, seen,
          deadline_ns ? &at : NULL, NULL, FUTEX_BITSET_MATCH_ANY);
  // EINTR, EAGAIN (the word changed) and ETIMEDOUT all mean: look again.
}

static void *watchdog_main(void *arg) {
  sg_relay_watchdog *w = arg;
  for (;;) {
    uint32_t seen = atomic_load_explicit(&w->wake, memory_order_acquire);
    if (atomic_load_explicit(&w->stop, memory_order_acquire)) break;
    uint64_t deadline = atomic_load_explicit(&w->deadline, memory_order_acquire);
    if (deadline == 0) {
      watchdog_wait(&w->wake, seen, 0);
      continue;
    }
    if (watchdog_now_ns() < deadline) {
      watchdog_wait(&w->wake, seen, deadline);
      continue;  // re-check: the owner may have disarmed or re-armed while this slept
    }
    // Still armed with this very deadline? Then it is this thread's: the owner's disarm (or a new
    // deadline) after this point finds 0 and changes nothing.
    if (!atomic_compare_exchange_strong_explicit(&w->deadline, &deadline, 0, memory_order_acq_rel,
                                                 memory_order_acquire))
      continue;
    if (w->slot != NULL) {
      if (atomic_load_explicit(&w->slot->state, memory_order_acquire) == SG_SLOT_LIVE) sg_crash_drive_inactive(w->slot);
    } else {
      w->drive_inactive(w->context);
    }
    atomic_fetch_add_explicit(&w->trips, 1, memory_order_relaxed);
    atomic_store_explicit(&w->tripped_at, watchdog_now_ns(), memory_order_release);
  }
  return NULL;
}

sg_relay_watchdog *sg_relay_watchdog_start(const sg_gpio_line *line, void (*drive_inactive)(void *), void *context) {
  const sg_crash_slot *slot = NULL;
  if (line != NULL) {
    for (int i = 0; i < SG_CRASH_SLOTS && slot == NULL; i++)
      if (atomic_load_explicit(&sg_crash_slots[i].state, memory_order_acquire) == SG_SLOT_LIVE &&
          sg_crash_slots[i].owner == line)
        slot = &sg_crash_slots[i];
    if (slot == NULL) {
      errno = ENOENT;
      return NULL;
    }
  } else if (drive_inactive == NULL) {
    errno = EINVAL;
    return NULL;
  }
  sg_relay_watchdog *w = calloc(1, sizeof *w);
  if (w == NULL) return NULL;
  w->slot = slot;
  w->drive_inactive = drive_inactive;
  w->context = context;
  atomic_init(&w->wake, 0);
  atomic_init(&w->stop, 0);
  atomic_init(&w->deadline, 0);
  atomic_init(&w->tripped_at, 0);
  atomic_init(&w->trips, 0);
  atomic_init(&w->arms, 0);
  // The thread takes no signal but a fault of its own: a SIGTERM must reach the loop's
  // signalfd, never end the process with its default action from here.
  sigset_t all, saved;
  sigfillset(&all);
  for (size_t i = 0; i < sg_crash_signal_count; i++) sigdelset(&all, sg_crash_signals[i]);
  pthread_sigmask(SIG_BLOCK, &all, &saved);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 64 * 1024);
  int rc = pthread_create(&w->thread, &attr, watchdog_main, w);
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &saved, NULL);
  if (rc != 0) {
    free(w);
    errno = rc;
    return NULL;
  }
  pthread_setname_np(w->thread, "relay-watchdog");
  return w;
}

void sg_relay_watchdog_arm(sg_relay_watchdog *w, uint64_t deadline_ns) {
  atomic_store_explicit(&w->deadline, deadline_ns ? deadline_ns : 1, memory_order_release);
  atomic_fetch_add_explicit(&w->arms, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&w->wake, 1, memory_order_release);
  syscall(SYS_futex, (uint32_t *)&w->wake, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0);
}

void sg_relay_watchdog_disarm(sg_relay_watchdog *w) {
  // No wake: a thread sleeping until the old deadline wakes then, finds 0 and sleeps on.
  atomic_store_explicit(&w->deadline, 0, memory_order_release);
}

uint64_t sg_relay_watchdog_take_trip(sg_relay_watchdog *w) {
  // A plain load first: the common case (no trip, every tick) takes the cache line shared.
  if (atomic_load_explicit(&w->tripped_at, memory_order_relaxed) == 0) return 0;
  return atomic_exchange_explicit(&w->tripped_at, 0, memory_order_acquire);
}

uint64_t sg_relay_watchdog_trips(const sg_relay_watchdog *w) {
  return atomic_load_explicit(&w->trips, memory_order_relaxed);
}

uint64_t sg_relay_watchdog_arms(const sg_relay_watchdog *w) {
  return atomic_load_explicit(&w->arms, memory_order_relaxed);
}

void sg_relay_watchdog_stop(sg_relay_watchdog *w) {
  if (w == NULL) return;
  atomic_store_explicit(&w->stop, 1, memory_order_release);
  atomic_fetch_add_explicit(&w->wake, 1, memory_order_release);
  syscall(SYS_futex, (uint32_t *)&w->wake, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0);
  pthread_join(w->thread, NULL);
  free(w);
}

