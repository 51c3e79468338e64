// sigaction, sigaltstack and stack_t are POSIX, not ISO C; pthread_setname_np is GNU.
#define _GNU_SOURCE
#include "scangate_gpiod.h"

#include <dirent.h>
#include <errno.h>
#include <gpiod.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef GPIOD_BIT
#include <linux/gpio.h>
#endif

// MARK: - Crash guard (both backends)
//
// Every output line this process holds is registered here at open and unregistered at close.
// On a fatal signal the handler drives each registered line inactive with one ioctl, writes one
// line to stderr and re-raises the signal with its default action (same core, same exit status).
// The table is fixed (no allocation in the handler); a slot's fields are written before its
// state is published with release, and the handler reads them after an acquire load, which
// orders them on ARM as well.

enum { SG_CRASH_SLOTS = 8, SG_SLOT_FREE = 0, SG_SLOT_CLAIMED = 1, SG_SLOT_LIVE = 2 };

typedef struct sg_crash_slot {
  _Atomic int state;
#ifdef GPIOD_BIT
  struct gpiod_line *line;  // v1: gpiod_line_set_value is one GPIOHANDLE_SET_LINE_VALUES ioctl
#else
  int fd;                   // v2: the line request's fd, for GPIO_V2_LINE_SET_VALUES_IOCTL
#endif
  const sg_gpio_line *owner;
} sg_crash_slot;

// A handler may only touch lock-free atomics (a lock could be held by the interrupted code).
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "int atomics must be lock-free for the signal handler");

static sg_crash_slot crash_slots[SG_CRASH_SLOTS];
static _Atomic int crash_entered;
static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP};
static pthread_once_t crash_once = PTHREAD_ONCE_INIT;
static int crash_installed;
// The alternate stack for the thread that installs the handler (the one opening the lines at
// startup): a handler for a stack overflow cannot run on the overflowed stack.
static _Alignas(16) char crash_stack[64 * 1024];

static void crash_drive_inactive(const sg_crash_slot *slot);

/// Appends the decimal digits of `value` (0..99999) to `out`; returns the new end.
static char *crash_put_int(char *out, int value) {
  char digits[8];
  int n = 0;
  do {
    digits[n++] = (char)('0' + value % 10);
    value /= 10;
  } while (value > 0 && n < 5);
  while (n > 0) *out++ = digits[--n];
  return out;
}

static void crash_handler(int sig) {
  int saved = errno;
  // A second fatal signal inside the handler (or on another thread) goes straight to default.
  if (atomic_exchange_explicit(&crash_entered, 1, memory_order_acq_rel) == 0) {
    for (int i = 0; i < SG_CRASH_SLOTS; i++) {
      if (atomic_load_explicit(&crash_slots[i].state, memory_order_acquire) == SG_SLOT_LIVE)
        crash_drive_inactive(&crash_slots[i]);
    }
    char line[80], *end = line;
    static const char head[] = "scangate: fatal signal ", tail[] = ": outputs driven inactive\n";
    memcpy(end, head, sizeof head - 1);
    end += sizeof head - 1;
    end = crash_put_int(end, sig);
    memcpy(end, tail, sizeof tail - 1);
    end += sizeof tail - 1;
    ssize_t unused = write(STDERR_FILENO, line, (size_t)(end - line));
    (void)unused;
  }
  errno = saved;
  // SA_RESETHAND restored the default action on entry; the signal is blocked while the handler
  // runs, so unblock it after raising: the default action (core, exit status) happens here.
  raise(sig);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  sigprocmask(SIG_UNBLOCK, &set, NULL);
}

static void crash_install(void) {
  stack_t current;
  if (sigaltstack(NULL, &current) == 0 && (current.ss_flags & SS_DISABLE)) {
    stack_t stack = {.ss_sp = crash_stack, .ss_size = sizeof crash_stack, .ss_flags = 0};
    sigaltstack(&stack, NULL);
  }
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = crash_handler;
  action.sa_flags = SA_RESETHAND | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  int ok = 1;
  for (size_t i = 0; i < sizeof crash_signals / sizeof crash_signals[0]; i++)
    if (sigaction(crash_signals[i], &action, NULL) != 0) ok = 0;
  crash_installed = ok;
}

int sg_gpio_crash_guard_install(void) {
  pthread_once(&crash_once, crash_install);
  return crash_installed ? 0 : -1;
}

/// Claims a slot for `owner`; the caller fills the backend field, then `crash_publish`.
static sg_crash_slot *crash_claim(const sg_gpio_line *owner) {
  for (int i = 0; i < SG_CRASH_SLOTS; i++) {
    int expected = SG_SLOT_FREE;
    if (atomic_compare_exchange_strong_explicit(&crash_slots[i].state, &expected, SG_SLOT_CLAIMED,
                                                memory_order_acquire, memory_order_relaxed)) {
      crash_slots[i].owner = owner;
      return &crash_slots[i];
    }
  }
  errno = ENOSPC;
  return NULL;
}

static void crash_publish(sg_crash_slot *slot) {
  atomic_store_explicit(&slot->state, SG_SLOT_LIVE, memory_order_release);
}

static void crash_unregister(const sg_gpio_line *owner) {
  for (int i = 0; i < SG_CRASH_SLOTS; i++) {
    if (atomic_load_explicit(&crash_slots[i].state, memory_order_acquire) == SG_SLOT_LIVE &&
        crash_slots[i].owner == owner) {
      crash_slots[i].owner = NULL;
      atomic_store_explicit(&crash_slots[i].state, SG_SLOT_FREE, memory_order_release);
    }
  }
}

int sg_gpio_crash_guarded_lines(void) {
  int n = 0;
  for (int i = 0; i < SG_CRASH_SLOTS; i++)
    if (atomic_load_explicit(&crash_slots[i].state, memory_order_acquire) == SG_SLOT_LIVE) n++;
  return n;
}

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
      if (atomic_load_explicit(&w->slot->state, memory_order_acquire) == SG_SLOT_LIVE) crash_drive_inactive(w->slot);
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
      if (atomic_load_explicit(&crash_slots[i].state, memory_order_acquire) == SG_SLOT_LIVE &&
          crash_slots[i].owner == line)
        slot = &crash_slots[i];
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
  for (size_t i = 0; i < sizeof crash_signals / sizeof crash_signals[0]; i++) sigdelset(&all, crash_signals[i]);
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

#ifdef GPIOD_BIT
// MARK: - libgpiod v1 (Debian 12 / Raspberry Pi OS bookworm)

struct sg_gpio_line {
  struct gpiod_chip *chip;
  struct gpiod_line *line;
};

sg_gpio_line *sg_gpio_request_output(const char *chip_name, uint32_t offset, int active_low,
                                     const char *consumer) {
  struct gpiod_chip *chip = gpiod_chip_open_lookup(chip_name);
  if (chip == NULL) chip = gpiod_chip_open_by_label(chip_name);
  if (chip == NULL) {
    if (errno == 0) errno = ENOENT;
    return NULL;
  }
  struct gpiod_line *line = gpiod_chip_get_line(chip, offset);
  if (line == NULL) {
    int saved = errno;
    gpiod_chip_close(chip);
    errno = saved;
    return NULL;
  }
  int flags = active_low ? GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW : 0;
  if (gpiod_line_request_output_flags(line, consumer, flags, 0) != 0) {
    int saved = errno;
    gpiod_chip_close(chip);
    errno = saved;
    return NULL;
  }
  sg_gpio_line *out = malloc(sizeof *out);
  if (out == NULL) {
    gpiod_line_release(line);
    gpiod_chip_close(chip);
    errno = ENOMEM;
    return NULL;
  }
  out->chip = chip;
  out->line = line;
  sg_crash_slot *slot = sg_gpio_crash_guard_install() == 0 ? crash_claim(out) : NULL;
  if (slot == NULL) {
    int saved = errno;
    gpiod_line_release(line);
    gpiod_chip_close(chip);
    free(out);
    errno = saved;
    return NULL;
  }
  // The line is inactive already; this resolves libgpiod's lazy bindings the handler will use.
  gpiod_line_set_value(line, 0);
  slot->line = line;
  crash_publish(slot);
  return out;
}

/// Logical 0 is inactive: the request carries the active-low flag, so the kernel maps it to the
/// line's inactive physical level. libgpiod 1.6's gpiod_line_set_value_bulk only checks the
/// line's state in memory and issues one GPIOHANDLE_SET_LINE_VALUES_IOCTL (no allocation, no
/// locks, no stdio): async-signal-safe.
static void crash_drive_inactive(const sg_crash_slot *slot) { gpiod_line_set_value(slot->line, 0); }

int sg_gpio_set(sg_gpio_line *line, int active) { return gpiod_line_set_value(line->line, active ? 1 : 0); }

void sg_gpio_release(sg_gpio_line *line) {
  if (line == NULL) return;
  crash_unregister(line);
  gpiod_line_set_value(line->line, 0);
  gpiod_line_release(line->line);
  gpiod_chip_close(line->chip);
  free(line);
}

const char *sg_gpio_library_version(void) { return gpiod_version_string(); }

int sg_gpio_probe(const char *path, sg_gpio_chip_info *info, sg_gpio_line_info *lines, uint32_t capacity) {
  struct gpiod_chip *chip = gpiod_chip_open(path);
  if (chip == NULL) return -1;
  snprintf(info->name, sizeof info->name, "%s", gpiod_chip_name(chip));
  snprintf(info->label, sizeof info->label, "%s", gpiod_chip_label(chip));
  info->lines = gpiod_chip_num_lines(chip);
  for (uint32_t i = 0; i < info->lines && i < capacity; i++) {
    struct gpiod_line *line = gpiod_chip_get_line(chip, i);
    memset(&lines[i], 0, sizeof lines[i]);
    if (line == NULL) continue;
    snprintf(lines[i].name, sizeof lines[i].name, "%s", gpiod_line_name(line) ? gpiod_line_name(line) : "");
    snprintf(lines[i].consumer, sizeof lines[i].consumer, "%s", gpiod_line_consumer(line) ? gpiod_line_consumer(line) : "");
    lines[i].used = gpiod_line_is_used(line);
    lines[i].output = gpiod_line_direction(line) == GPIOD_LINE_DIRECTION_OUTPUT;
  }
  gpiod_chip_close(chip);
  return 0;
}

#else
// MARK: - libgpiod v2 (Debian 13 / Raspberry Pi OS trixie)

struct sg_gpio_line {
  struct gpiod_line_request *request;
  unsigned int offset;
};

/// Opens a chip by path, by name ("gpiochip4") or by label ("pinctrl-rp1"): v2 dropped the
/// lookup helpers, so the character devices are walked here.
static struct gpiod_chip *open_chip(const char *name) {
  if (strchr(name, '/') != NULL) return gpiod_chip_open(name);
  char path[300];
  snprintf(path, sizeof path, "/dev/%s", name);
  struct gpiod_chip *chip = gpiod_chip_open(path);
  if (chip != NULL) return chip;
  DIR *dir = opendir("/dev");
  if (dir == NULL) return NULL;
  struct dirent *entry;
  while ((entry = readdir(dir)) != NULL) {
    if (strncmp(entry->d_name, "gpiochip", 8) != 0) continue;
    snprintf(path, sizeof path, "/dev/%s", entry->d_name);
    chip = gpiod_chip_open(path);
    if (chip == NULL) continue;
    struct gpiod_chip_info *info = gpiod_chip_get_info(chip);
    int match = info != NULL && strcmp(gpiod_chip_info_get_label(info), name) == 0;
    if (info != NULL) gpiod_chip_info_free(info);
    if (match) {
      closedir(dir);
      return chip;
    }
    gpiod_chip_close(chip);
  }
  closedir(dir);
  errno = ENOENT;
  return NULL;
}

sg_gpio_line *sg_gpio_request_output(const char *chip_name, uint32_t offset, int active_low,
                                     const char *consumer) {
  struct gpiod_chip *chip = open_chip(chip_name);
  if (chip == NULL) {
    if (errno == 0) errno = ENOENT;
    return NULL;
  }
  struct gpiod_line_settings *settings = gpiod_line_settings_new();
  struct gpiod_line_config *line_config = gpiod_line_config_new();
  struct gpiod_request_config *request_config = gpiod_request_config_new();
  struct gpiod_line_request *request = NULL;
  unsigned int offsets[1] = {offset};
  if (settings != NULL && line_config != NULL && request_config != NULL &&
      gpiod_line_settings_set_direction(settings, GPIOD_LINE_DIRECTION_OUTPUT) == 0 &&
      gpiod_line_settings_set_output_value(settings, GPIOD_LINE_VALUE_INACTIVE) == 0) {
    gpiod_line_settings_set_active_low(settings, active_low ? true : false);
    gpiod_request_config_set_consumer(request_config, consumer);
    if (gpiod_line_config_add_line_settings(line_config, offsets, 1, settings) == 0)
      request = gpiod_chip_request_lines(chip, request_config, line_config);
  }
  int saved = errno;
  gpiod_request_config_free(request_config);
  gpiod_line_config_free(line_config);
  gpiod_line_settings_free(settings);
  gpiod_chip_close(chip);  // the request keeps its own file descriptor
  if (request == NULL) {
    errno = saved ? saved : EIO;
    return NULL;
  }
  sg_gpio_line *out = malloc(sizeof *out);
  if (out == NULL) {
    gpiod_line_request_release(request);
    errno = ENOMEM;
    return NULL;
  }
  out->request = request;
  out->offset = offset;
  sg_crash_slot *slot = sg_gpio_crash_guard_install() == 0 ? crash_claim(out) : NULL;
  if (slot == NULL) {
    int saved = errno;
    gpiod_line_request_release(request);
    free(out);
    errno = saved;
    return NULL;
  }
  slot->fd = gpiod_line_request_get_fd(request);
  crash_publish(slot);
  return out;
}

/// One GPIO_V2_LINE_SET_VALUES_IOCTL on the request's fd, bit 0 (its only line) to logical 0:
/// the request carries the active-low flag, so the kernel drives the inactive physical level.
static void crash_drive_inactive(const sg_crash_slot *slot) {
  struct gpio_v2_line_values values = {.bits = 0, .mask = 1};
  ioctl(slot->fd, GPIO_V2_LINE_SET_VALUES_IOCTL, &values);
}

int sg_gpio_set(sg_gpio_line *line, int active) {
  return gpiod_line_request_set_value(line->request, line->offset,
                                      active ? GPIOD_LINE_VALUE_ACTIVE : GPIOD_LINE_VALUE_INACTIVE);
}

void sg_gpio_release(sg_gpio_line *line) {
  if (line == NULL) return;
  crash_unregister(line);
  gpiod_line_request_set_value(line->request, line->offset, GPIOD_LINE_VALUE_INACTIVE);
  gpiod_line_request_release(line->request);
  free(line);
}

const char *sg_gpio_library_version(void) { return gpiod_api_version(); }

int sg_gpio_probe(const char *path, sg_gpio_chip_info *info, sg_gpio_line_info *lines, uint32_t capacity) {
  struct gpiod_chip *chip = gpiod_chip_open(path);
  if (chip == NULL) return -1;
  struct gpiod_chip_info *ci = gpiod_chip_get_info(chip);
  if (ci == NULL) {
    gpiod_chip_close(chip);
    return -1;
  }
  snprintf(info->name, sizeof info->name, "%s", gpiod_chip_info_get_name(ci));
  snprintf(info->label, sizeof info->label, "%s", gpiod_chip_info_get_label(ci));
  info->lines = (uint32_t)gpiod_chip_info_get_num_lines(ci);
  gpiod_chip_info_free(ci);
  for (uint32_t i = 0; i < info->lines && i < capacity; i++) {
    memset(&lines[i], 0, sizeof lines[i]);
    struct gpiod_line_info *li = gpiod_chip_get_line_info(chip, i);
    if (li == NULL) continue;
    const char *name = gpiod_line_info_get_name(li), *consumer = gpiod_line_info_get_consumer(li);
    snprintf(lines[i].name, sizeof lines[i].name, "%s", name ? name : "");
    snprintf(lines[i].consumer, sizeof lines[i].consumer, "%s", consumer ? consumer : "");
    lines[i].used = gpiod_line_info_is_used(li);
    lines[i].output = gpiod_line_info_get_direction(li) == GPIOD_LINE_DIRECTION_OUTPUT;
    gpiod_line_info_free(li);
  }
  gpiod_chip_close(chip);
  return 0;
}
#endif
