// A numeric keypad through libevdev: see include/scangate_evdev.h. Every failure is returned as
// -1 with errno (libevdev's negative codes negated back), for the caller's errno chokepoint.
#include "scangate_evdev.h"

#include <errno.h>
#include <fcntl.h>
#include <libevdev/libevdev.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/// The input subsystem's character major (linux/major.h INPUT_MAJOR).
enum { SG_INPUT_MAJOR = 13 };

struct sg_evdev {
  struct libevdev *dev;
  int fd;
};

/// The ten digit keys, 0 to 9, of the number row and of the keypad.
static const unsigned number_row[10] = {KEY_0, KEY_1, KEY_2, KEY_3, KEY_4, KEY_5, KEY_6, KEY_7, KEY_8, KEY_9};
static const unsigned keypad[10] = {KEY_KP0, KEY_KP1, KEY_KP2, KEY_KP3, KEY_KP4,
                                    KEY_KP5, KEY_KP6, KEY_KP7, KEY_KP8, KEY_KP9};

static int has_all(const struct libevdev *dev, const unsigned codes[10]) {
  for (unsigned i = 0; i < 10; i++)
    if (!libevdev_has_event_code(dev, EV_KEY, codes[i])) return 0;
  return 1;
}

static int refuse(int fd, struct libevdev *dev, sg_evdev_refusal *refusal, int reason, int code) {
  if (dev) libevdev_free(dev);
  if (fd >= 0) close(fd);
  refusal->reason = reason;
  errno = code;
  return -1;
}

int sg_evdev_open(const char *path, sg_evdev **out, sg_evdev_refusal *refusal) {
  refusal->reason = SG_EVDEV_OK;
  refusal->mode = 0;
  *out = NULL;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return -1;
  struct stat st;
  if (fstat(fd, &st) != 0) return refuse(fd, NULL, refusal, SG_EVDEV_OK, errno);
  refusal->mode = (uint32_t)st.st_mode;
  if (!S_ISCHR(st.st_mode)) return refuse(fd, NULL, refusal, SG_EVDEV_NOT_CHARACTER_DEVICE, EINVAL);
  if (major(st.st_rdev) != SG_INPUT_MAJOR) return refuse(fd, NULL, refusal, SG_EVDEV_NOT_INPUT_DEVICE, EINVAL);
  struct libevdev *dev = NULL;
  int rc = libevdev_new_from_fd(fd, &dev);
  if (rc < 0) {
    // EVIOCGBIT and the other evdev ioctls are unknown to the mouse and joystick nodes.
    if (rc == -ENOTTY || rc == -EINVAL) return refuse(fd, NULL, refusal, SG_EVDEV_NOT_EVENT_DEVICE, EINVAL);
    return refuse(fd, NULL, refusal, SG_EVDEV_OK, -rc);
  }
  if (!libevdev_has_event_type(dev, EV_KEY) || !(has_all(dev, number_row) || has_all(dev, keypad)))
    return refuse(fd, dev, refusal, SG_EVDEV_NOT_KEYPAD, EINVAL);
  rc = libevdev_grab(dev, LIBEVDEV_GRAB);
  if (rc < 0) return refuse(fd, dev, refusal, SG_EVDEV_OK, -rc);
  sg_evdev *device = malloc(sizeof *device);
  if (!device) {
    libevdev_grab(dev, LIBEVDEV_UNGRAB);
    return refuse(fd, dev, refusal, SG_EVDEV_OK, ENOMEM);
  }
  device->dev = dev;
  device->fd = fd;
  *out = device;
  return fd;
}

int sg_evdev_fd(const sg_evdev *device) { return device->fd; }

const char *sg_evdev_name(const sg_evdev *device) {
  const char *name = libevdev_get_name(device->dev);
  return name ? name : "";
}

int sg_evdev_read(sg_evdev *device, uint16_t *codes, int capacity) {
  int count = 0;
  unsigned flags = LIBEVDEV_READ_FLAG_NORMAL;
  while (count < capacity) {
    struct input_event ev;
    int rc = libevdev_next_event(device->dev, flags, &ev);
    if (rc == LIBEVDEV_READ_STATUS_SYNC) {
      // SYN_DROPPED, then (in sync mode) the deltas that bring the state up to date: skipped.
      flags = LIBEVDEV_READ_FLAG_SYNC;
      continue;
    }
    if (rc == -EAGAIN && flags == LIBEVDEV_READ_FLAG_SYNC) {
      flags = LIBEVDEV_READ_FLAG_NORMAL;  // in sync: back to the events as they come
      continue;
    }
    if (rc < 0) {
      if (count > 0) break;  // these first; the error (EAGAIN: nothing more) comes again next call
      errno = -rc;
      return -1;
    }
    if (ev.type == EV_KEY && ev.value == 1) codes[count++] = (uint16_t)ev.code;
  }
  return count;
}

void sg_evdev_close(sg_evdev *device) {
  if (!device) return;
  libevdev_grab(device->dev, LIBEVDEV_UNGRAB);
  libevdev_free(device->dev);
  close(device->fd);
  free(device);
}
