// A numeric keypad through the Linux input subsystem (evdev), read with libevdev. One owner per
// device: it is grabbed (EVIOCGRAB), so its keys go to no console or other reader meanwhile.
#ifndef SCANGATE_EVDEV_H
#define SCANGATE_EVDEV_H
#include <stdint.h>

typedef struct sg_evdev sg_evdev;

/// Why `sg_evdev_open` refused a path it could open (errno is EINVAL then).
enum {
  SG_EVDEV_OK = 0,
  /// Not a character device (`sg_evdev_refusal.mode` holds its st_mode).
  SG_EVDEV_NOT_CHARACTER_DEVICE = 1,
  /// A character device of another kind than the input subsystem's (major 13).
  SG_EVDEV_NOT_INPUT_DEVICE = 2,
  /// An input device, but not an event device (e.g. /dev/input/mouse0, js0).
  SG_EVDEV_NOT_EVENT_DEVICE = 3,
  /// An event device without EV_KEY or without all ten digit keys (KEY_0..KEY_9 or KEY_KP0..KEY_KP9).
  SG_EVDEV_NOT_KEYPAD = 4,
};
typedef struct sg_evdev_refusal {
  int32_t reason;  // SG_EVDEV_*
  uint32_t mode;   // st_mode of what was opened (SG_EVDEV_NOT_CHARACTER_DEVICE)
} sg_evdev_refusal;

/// Opens `path` (O_RDONLY | O_NONBLOCK | O_CLOEXEC: a FIFO or a device never blocks the caller),
/// checks it is an event device with the ten digit keys of the number row or of the keypad, and
/// grabs it. Returns its descriptor and sets `*out`, or -1 with errno: the open's or fstat's,
/// libevdev's (negated back), EBUSY when another program holds the grab, or EINVAL with
/// `refusal->reason` saying which check refused it. Allocates (libevdev's state) once, here.
int sg_evdev_open(const char *path, sg_evdev **out, sg_evdev_refusal *refusal);
/// The descriptor to poll (readable when events are waiting).
int sg_evdev_fd(const sg_evdev *device);
/// The device's name as the kernel reports it (libevdev's copy, valid until `sg_evdev_close`).
const char *sg_evdev_name(const sg_evdev *device);
/// Drains the events waiting (libevdev_next_event, no allocation) and writes the code of every
/// key press (EV_KEY value 1; repeats and releases are skipped) into `codes`, up to `capacity`.
/// After a SYN_DROPPED (the kernel's buffer overflowed) the device is resynced and its state
/// deltas are skipped: they are key states, not presses. Returns the count once nothing is
/// waiting or `codes` is full (call again then), or -1 with errno when nothing was read:
/// EAGAIN (nothing waiting), ENODEV (the device is gone), another (the device failed).
int sg_evdev_read(sg_evdev *device, uint16_t *codes, int capacity);
/// Releases the grab, frees libevdev's state and closes the descriptor.
void sg_evdev_close(sg_evdev *device);
#endif
