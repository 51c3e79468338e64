// Wiegand out: a thread of its own that clocks card numbers out on two output lines, D0 (a 0 bit)
// and D1 (a 1 bit), for an access-control panel's reader input. C, not Swift, for the same reason
// as the relay watchdog: its timing must not wait for the Swift runtime, a lock or the allocator.
#define _GNU_SOURCE
#include "scangate_gpiod.h"
#include "gpiod_internal.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

// The queue is single-producer (the loop's thread: `sg_wiegand_send`) single-consumer (the
// thread). `head` is written only by the producer, `tail` only by the thread; a frame's slot is
// written before `head` is published (release) and read after `head` is seen (acquire), and a
// slot is reused only after `tail` has moved past it (release / acquire): correct on ARM's weak
// ordering as well as x86's. `wake` is the futex word, bumped after each publish.
#define SG_WIEGAND_QUEUE 8u  // a power of two
#define SG_WIEGAND_RESENDS 2  // a frame broken by a stall is sent again at most this often

struct sg_wiegand {
  _Atomic uint32_t wake;
  _Atomic int stop;
  _Atomic uint32_t head;
  _Atomic uint32_t tail;
  uint64_t bits[SG_WIEGAND_QUEUE];
  uint32_t counts[SG_WIEGAND_QUEUE];
  sg_gpio_line *lines[2];  // D0, D1 (NULL: the callback)
  void (*drive)(void *context, int line, int active);
  void *context;
  uint64_t pulse_ns, interval_ns, frame_gap_ns, stall_ns;
  _Atomic uint64_t sent;
  _Atomic uint64_t errors;
  _Atomic uint64_t pulse_max_ns;  // the longest pulse as the thread timed it
  _Atomic uint64_t late_bits;      // bits that started later than their slot by more than a pulse
  _Atomic uint64_t resent;         // frames broken by a stall and sent again whole
  _Atomic uint64_t broken;         // frames still broken after the last attempt
  _Atomic int realtime;
  pthread_t thread;
};

static uint64_t wiegand_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void wiegand_sleep_until(uint64_t at_ns) {
  struct timespec at = {.tv_sec = (time_t)(at_ns / 1000000000u), .tv_nsec = (long)(at_ns % 1000000000u)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL) == EINTR) {
  }
}

static int wiegand_drive(sg_wiegand *w, int line, int active) {
  if (w->lines[line] == NULL) {
    w->drive(w->context, line, active);
    return 0;
  }
  return sg_gpio_set(w->lines[line], active);
}

// One frame, most significant bit first. Each bit: the line active for the pulse (timed by
// spinning on the clock: a sleep's wake-up latency is of the pulse's order), then inactive until
// the next bit's slot, `interval_ns` after this bit's active write returned (slept: milliseconds).
// Returns 0 when every bit went out on time, -1 when a stall broke the frame: a gap between two
// bits reached `stall_ns`, when a panel may already have ended the frame on silence and taken the
// bits so far as a short read. The gap is measured from before the previous bit's active write to
// after this one's, an upper bound of the gap between the two changes on the wire, and checked
// before this bit is driven (then it is not) and after (a stall inside the write itself).
static int wiegand_emit(sg_wiegand *w, uint64_t bits, uint32_t count) {
  uint64_t slot = wiegand_now_ns();
  uint64_t previous = 0;  // before the previous bit's active write (0: the first bit)
  for (uint32_t i = count; i-- > 0;) {
    int line = (int)((bits >> i) & 1u);
    wiegand_sleep_until(slot);
    uint64_t start = wiegand_now_ns();
    if (previous != 0 && start - previous >= w->stall_ns) return -1;
    if (start > slot + w->pulse_ns) atomic_fetch_add_explicit(&w->late_bits, 1, memory_order_relaxed);
    if (wiegand_drive(w, line, 1) != 0) atomic_fetch_add_explicit(&w->errors, 1, memory_order_relaxed);
    // Timed from when the active write returned: the line is active by then, so the pulse is at
    // least `pulse_ns` long however long the write took.
    uint64_t on = wiegand_now_ns();
    while (wiegand_now_ns() < on + w->pulse_ns) {
    }
    if (wiegand_drive(w, line, 0) != 0) atomic_fetch_add_explicit(&w->errors, 1, memory_order_relaxed);
    uint64_t width = wiegand_now_ns() - on;
    if (width > atomic_load_explicit(&w->pulse_max_ns, memory_order_relaxed))
      atomic_store_explicit(&w->pulse_max_ns, width, memory_order_relaxed);
    if (previous != 0 && on - previous >= w->stall_ns) return -1;
    previous = start;
    // The next slot is `interval_ns` after the active write returned. The line changed somewhere
    // inside that write, and the next bit's change comes after the next write begins, so two
    // changes are at least `interval_ns` apart however late a bit or how slow a write: a late bit
    // never squeezes the next gap (timing from `start` would, by the write's own duration).
    slot = on + w->interval_ns;
  }
  return 0;
}

static void *wiegand_main(void *arg) {
  sg_wiegand *w = arg;
  uint64_t quiet_until = 0;  // a panel ends a frame on silence: the next one waits for it
  // Timer slack of 1 ns (the default 50 µs would stretch every gap), and SCHED_FIFO where the
  // process may have it (CAP_SYS_NICE, or systemd's CPUSchedulingPolicy): not required.
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  struct sched_param param = {.sched_priority = 10};
  atomic_store_explicit(&w->realtime, pthread_setschedparam(pthread_self(), SCHED_FIFO, &param) == 0,
                        memory_order_relaxed);
  for (;;) {
    uint32_t seen = atomic_load_explicit(&w->wake, memory_order_acquire);
    if (atomic_load_explicit(&w->stop, memory_order_acquire)) break;
    uint32_t tail = atomic_load_explicit(&w->tail, memory_order_relaxed);
    uint32_t head = atomic_load_explicit(&w->head, memory_order_acquire);
    if (tail == head) {
      syscall(SYS_futex, (uint32_t *)&w->wake, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
      continue;
    }
    uint32_t slot = tail & (SG_WIEGAND_QUEUE - 1u);
    // A frame a stall broke is sent again whole after the frame gap's silence (the panel drops
    // the short read: its length or parity is wrong), twice at most.
    for (int attempt = 0;; attempt++) {
      if (wiegand_now_ns() < quiet_until) wiegand_sleep_until(quiet_until);
      int rc = wiegand_emit(w, w->bits[slot], w->counts[slot]);
      quiet_until = wiegand_now_ns() + w->frame_gap_ns;
      if (rc == 0) {
        atomic_fetch_add_explicit(&w->sent, 1, memory_order_relaxed);
        break;
      }
      if (attempt == SG_WIEGAND_RESENDS) {
        atomic_fetch_add_explicit(&w->broken, 1, memory_order_relaxed);
        break;
      }
      atomic_fetch_add_explicit(&w->resent, 1, memory_order_relaxed);
    }
    atomic_store_explicit(&w->tail, tail + 1, memory_order_release);
  }
  return NULL;
}

sg_wiegand *sg_wiegand_start(sg_gpio_line *d0, sg_gpio_line *d1, void (*drive)(void *context, int line, int active),
                             void *context, uint32_t pulse_us, uint32_t interval_us, uint32_t frame_gap_us) {
  if ((d0 == NULL || d1 == NULL) && drive == NULL) {
    errno = EINVAL;
    return NULL;
  }
  sg_wiegand *w = calloc(1, sizeof *w);
  if (w == NULL) return NULL;
  w->lines[0] = d0;
  w->lines[1] = d1;
  w->drive = drive;
  w->context = context;
  w->pulse_ns = (uint64_t)pulse_us * 1000u;
  w->interval_ns = (uint64_t)interval_us * 1000u;
  w->frame_gap_ns = (uint64_t)frame_gap_us * 1000u;
  // A panel's silence timeout lies between the interval (it must accept every gap of a frame) and
  // the frame gap (the silence this sender leaves between frames): a gap halfway may have ended
  // the frame at some panel.
  w->stall_ns = (w->interval_ns + w->frame_gap_ns) / 2;
  // The thread takes no signal: the loop's signal handling and the crash guard stay with the
  // threads that installed them (the crash guard's handler runs on the faulting thread).
  sigset_t all, old;
  sigfillset(&all);
  sigdelset(&all, SIGSEGV);
  sigdelset(&all, SIGBUS);
  sigdelset(&all, SIGILL);
  sigdelset(&all, SIGFPE);
  sigdelset(&all, SIGABRT);
  sigdelset(&all, SIGTRAP);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  int rc = pthread_create(&w->thread, NULL, wiegand_main, w);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    free(w);
    errno = rc;
    return NULL;
  }
  return w;
}

int sg_wiegand_send(sg_wiegand *w, uint64_t bits, uint32_t count) {
  if (count == 0 || count > 64) {
    errno = EINVAL;
    return -1;
  }
  uint32_t head = atomic_load_explicit(&w->head, memory_order_relaxed);
  uint32_t tail = atomic_load_explicit(&w->tail, memory_order_acquire);
  if (head - tail >= SG_WIEGAND_QUEUE) {
    errno = EAGAIN;
    return -1;
  }
  uint32_t slot = head & (SG_WIEGAND_QUEUE - 1u);
  w->bits[slot] = bits;
  w->counts[slot] = count;
  atomic_store_explicit(&w->head, head + 1, memory_order_release);
  atomic_fetch_add_explicit(&w->wake, 1, memory_order_release);
  syscall(SYS_futex, (uint32_t *)&w->wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
  return 0;
}

uint32_t sg_wiegand_pending(const sg_wiegand *w) {
  return atomic_load_explicit(&((sg_wiegand *)w)->head, memory_order_relaxed) -
         atomic_load_explicit(&((sg_wiegand *)w)->tail, memory_order_acquire);
}

void sg_wiegand_counters(const sg_wiegand *w, sg_wiegand_stats *out) {
  sg_wiegand *m = (sg_wiegand *)w;
  out->sent = atomic_load_explicit(&m->sent, memory_order_relaxed);
  out->errors = atomic_load_explicit(&m->errors, memory_order_relaxed);
  out->pulse_max_ns = atomic_load_explicit(&m->pulse_max_ns, memory_order_relaxed);
  out->late_bits = atomic_load_explicit(&m->late_bits, memory_order_relaxed);
  out->resent = atomic_load_explicit(&m->resent, memory_order_relaxed);
  out->broken = atomic_load_explicit(&m->broken, memory_order_relaxed);
  out->realtime = atomic_load_explicit(&m->realtime, memory_order_relaxed);
}

void sg_wiegand_stop(sg_wiegand *w) {
  if (w == NULL) return;
  atomic_store_explicit(&w->stop, 1, memory_order_release);
  atomic_fetch_add_explicit(&w->wake, 1, memory_order_release);
  syscall(SYS_futex, (uint32_t *)&w->wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
  pthread_join(w->thread, NULL);
  free(w);
}
