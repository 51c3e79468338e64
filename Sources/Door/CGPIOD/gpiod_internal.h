// Shared by the GPIO shim's files (not part of its C API): the table of registered output lines
// that the crash guard (gpiod_shim.c) and the relay watchdog (relay_watchdog.c) drive inactive.
#ifndef SCANGATE_GPIOD_INTERNAL_H
#define SCANGATE_GPIOD_INTERNAL_H

#include "scangate_gpiod.h"

#include <gpiod.h>
#include <stdatomic.h>
#include <stddef.h>

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

/// The registered lines (written at open and close, read by the handler and the watchdog).
extern sg_crash_slot sg_crash_slots[SG_CRASH_SLOTS];
/// The fatal signals the crash guard handles (the watchdog thread leaves them unblocked).
extern const int sg_crash_signals[];
extern const size_t sg_crash_signal_count;
/// Drives a registered line inactive with one ioctl: async-signal-safe (per backend).
void sg_crash_drive_inactive(const sg_crash_slot *slot);
#ifndef GPIOD_BIT
/// Opens a chip by path, name or label (libgpiod 2 has no lookup helpers); gpiod_shim.c.
struct gpiod_chip *sg_gpio_open_chip(const char *name);
#endif

#endif
