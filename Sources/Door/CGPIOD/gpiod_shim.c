// sigaction, sigaltstack and stack_t are POSIX, not ISO C; pthread_setname_np is GNU.
#define _GNU_SOURCE
#include "scangate_gpiod.h"
#include "gpiod_internal.h"

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

// A handler may only touch lock-free atomics (a lock could be held by the interrupted code).
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "int atomics must be lock-free for the signal handler");

sg_crash_slot sg_crash_slots[SG_CRASH_SLOTS];
static _Atomic int crash_entered;
const int sg_crash_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP};
const size_t sg_crash_signal_count = sizeof sg_crash_signals / sizeof sg_crash_signals[0];
static pthread_once_t crash_once = PTHREAD_ONCE_INIT;
static int crash_installed;
// The alternate stack for the thread that installs the handler (the one opening the lines at
// startup): a handler for a stack overflow cannot run on the overflowed stack.
static _Alignas(16) char crash_stack[64 * 1024];


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
      if (atomic_load_explicit(&sg_crash_slots[i].state, memory_order_acquire) == SG_SLOT_LIVE)
        sg_crash_drive_inactive(&sg_crash_slots[i]);
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
  for (size_t i = 0; i < sizeof sg_crash_signals / sizeof sg_crash_signals[0]; i++)
    if (sigaction(sg_crash_signals[i], &action, NULL) != 0) ok = 0;
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
    if (atomic_compare_exchange_strong_explicit(&sg_crash_slots[i].state, &expected, SG_SLOT_CLAIMED,
                                                memory_order_acquire, memory_order_relaxed)) {
      sg_crash_slots[i].owner = owner;
      return &sg_crash_slots[i];
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
    if (atomic_load_explicit(&sg_crash_slots[i].state, memory_order_acquire) == SG_SLOT_LIVE &&
        sg_crash_slots[i].owner == owner) {
      sg_crash_slots[i].owner = NULL;
      atomic_store_explicit(&sg_crash_slots[i].state, SG_SLOT_FREE, memory_order_release);
    }
  }
}

int sg_gpio_crash_guarded_lines(void) {
  int n = 0;
  for (int i = 0; i < SG_CRASH_SLOTS; i++)
    if (atomic_load_explicit(&sg_crash_slots[i].state, memory_order_acquire) == SG_SLOT_LIVE) n++;
  return n;
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
void sg_crash_drive_inactive(const sg_crash_slot *slot) { gpiod_line_set_value(slot->line, 0); }

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

struct gpiod_chip *sg_gpio_open_chip(const char *name) { return open_chip(name); }

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
void sg_crash_drive_inactive(const sg_crash_slot *slot) {
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
