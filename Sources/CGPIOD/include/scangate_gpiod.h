// Output lines through libgpiod, behind an interface that fits both the v1 (Debian 12) and
// v2 (Debian 13) APIs. The implementation is chosen by the library's own header.
#ifndef SCANGATE_GPIOD_H
#define SCANGATE_GPIOD_H
#include <stdint.h>

typedef struct sg_gpio_line sg_gpio_line;

/// Requests one output line for this process, driven to its inactive level at once.
/// `chip` is a path (/dev/gpiochip0), a name (gpiochip0) or a label (pinctrl-bcm2711).
/// Registers the line with the crash guard (at most 8 lines at once: ENOSPC beyond that).
/// Returns NULL with errno set on failure.
sg_gpio_line *sg_gpio_request_output(const char *chip, uint32_t offset, int active_low,
                                     const char *consumer);
/// Sets the logical level (1 = active). Returns 0, or -1 with errno.
int sg_gpio_set(sg_gpio_line *line, int active);
/// Drives the line inactive and releases it.
void sg_gpio_release(sg_gpio_line *line);

/// Installs the crash guard (once; `sg_gpio_request_output` does it before the first line is
/// registered): for SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT and SIGTRAP, with SA_RESETHAND and
/// SA_ONSTACK (an alternate stack for the calling thread if it has none), a handler drives
/// every open output line inactive, writes "scangate: fatal signal N: outputs driven inactive"
/// to stderr and re-raises the signal with its default action. Returns 0, or -1 with errno.
int sg_gpio_crash_guard_install(void);
/// How many open output lines the crash guard would drive inactive now.
int sg_gpio_crash_guarded_lines(void);
/// The libgpiod version string.
const char *sg_gpio_library_version(void);

/// What `scangate probe` reports about one chip and its lines.
typedef struct sg_gpio_chip_info {
  char name[64];
  char label[64];
  uint32_t lines;
} sg_gpio_chip_info;
typedef struct sg_gpio_line_info {
  char name[48];
  char consumer[48];
  int32_t used;
  int32_t output;
} sg_gpio_line_info;

/// Reads a chip (by path) and up to `capacity` of its lines. Returns 0, or -1 with errno.
int sg_gpio_probe(const char *path, sg_gpio_chip_info *chip, sg_gpio_line_info *lines, uint32_t capacity);
#endif
