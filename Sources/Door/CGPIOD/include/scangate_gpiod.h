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
/// The relay watchdog: one thread, started with the service, that holds the relay's hard cap
/// independently of the loop. The loop arms it (the absolute CLOCK_MONOTONIC deadline by which
/// the relay must be inactive) before it drives the relay active and disarms it after it drove
/// the relay inactive. If the deadline passes while armed, the thread drives the relay inactive
/// itself, counts the trip and leaves it for the loop to take (`sg_relay_watchdog_take_trip`).
/// It only ever drives inactive, so it may race the owner's own inactive write.
typedef struct sg_relay_watchdog sg_relay_watchdog;

/// Starts a watchdog for `line`, driven through the crash guard's table of registered lines (the
/// same one ioctl as the crash handler); the line must be open, and stay open until
/// `sg_relay_watchdog_stop`. With `line` NULL it calls `drive_inactive(context)` instead (the
/// simulated backend). The thread blocks every signal but the crash guard's and sleeps in a
/// futex wait (absolute CLOCK_MONOTONIC timeout) whenever it has nothing to do. Returns NULL
/// with errno on failure.
sg_relay_watchdog *sg_relay_watchdog_start(const sg_gpio_line *line, void (*drive_inactive)(void *context),
                                           void *context);
/// Arms with `deadline_ns` (CLOCK_MONOTONIC, nonzero): two atomic stores and one FUTEX_WAKE; no
/// lock, no allocation. A later call replaces the deadline.
void sg_relay_watchdog_arm(sg_relay_watchdog *watchdog, uint64_t deadline_ns);
/// Disarms: one atomic store.
void sg_relay_watchdog_disarm(sg_relay_watchdog *watchdog);
/// When the thread last drove the output inactive (CLOCK_MONOTONIC ns), if the owner has not
/// taken that trip yet; takes it. 0 when there is none.
uint64_t sg_relay_watchdog_take_trip(sg_relay_watchdog *watchdog);
/// Trips and arms since the start.
uint64_t sg_relay_watchdog_trips(const sg_relay_watchdog *watchdog);
uint64_t sg_relay_watchdog_arms(const sg_relay_watchdog *watchdog);
/// Stops the thread, waits for it and frees the watchdog.
void sg_relay_watchdog_stop(sg_relay_watchdog *watchdog);

/// Wiegand out: one thread that clocks frames of bits out on D0 (a 0 bit) and D1 (a 1 bit), most
/// significant first: each bit the line active for `pulse_us` (timed by spinning on
/// CLOCK_MONOTONIC), bit starts at least `interval_us` apart, timed from the return of the write
/// that made the line active (slept, timer slack 1 ns; SCHED_FIFO where permitted). The loop
/// queues frames (`sg_wiegand_send`: a few atomic stores and a FUTEX_WAKE, no lock, no
/// allocation) and never waits for them to be sent. The lines are the thread's alone
/// once started (their owner must not drive them), and stay registered with the crash guard.
typedef struct sg_wiegand sg_wiegand;
typedef struct {
  uint64_t sent;          // frames sent whole
  uint64_t errors;        // line writes that failed
  uint64_t pulse_max_ns;  // the longest pulse, as the thread timed it
  uint64_t late_bits;     // bits that started later than their slot by more than a pulse
  uint64_t resent;        // frames a stall broke (a gap halfway from the interval to the frame
                          // gap), sent again whole after the frame gap (twice at most)
  uint64_t broken;        // frames still broken after the last attempt
  int realtime;           // the thread runs SCHED_FIFO
} sg_wiegand_stats;
/// Starts the thread for lines `d0` and `d1`; with either NULL it calls `drive(context, line,
/// active)` instead (line 0 = D0, 1 = D1: the simulated backend, tests). Frames are at least
/// `frame_gap_us` of silence apart (a panel ends a frame on silence). NULL with errno on failure.
sg_wiegand *sg_wiegand_start(sg_gpio_line *d0, sg_gpio_line *d1, void (*drive)(void *context, int line, int active),
                             void *context, uint32_t pulse_us, uint32_t interval_us, uint32_t frame_gap_us);
/// Queues one frame of `count` (1–64) bits: 0, or -1 with errno EAGAIN (8 frames queued) or EINVAL.
int sg_wiegand_send(sg_wiegand *wiegand, uint64_t bits, uint32_t count);
/// Frames queued and not yet sent (the one being sent included).
uint32_t sg_wiegand_pending(const sg_wiegand *wiegand);
void sg_wiegand_counters(const sg_wiegand *wiegand, sg_wiegand_stats *out);
/// Stops the thread after the frame it is sending (frames still queued are dropped), joins it and
/// frees it. The lines stay open (their owner releases them).
void sg_wiegand_stop(sg_wiegand *wiegand);

/// Door inputs: one line requested as an input with both-edge events, for this process's life.
typedef struct sg_gpio_input sg_gpio_input;
enum { SG_BIAS_AS_IS = 0, SG_BIAS_DISABLED = 1, SG_BIAS_PULL_UP = 2, SG_BIAS_PULL_DOWN = 3 };

/// Requests `offset` on `chip` (path, name or label) as an input with both edges detected,
/// `active_low` applied and `bias` (SG_BIAS_*) set where the chip supports it. With libgpiod 2
/// the kernel debounces the line for `debounce_us` (then `*kernel_debounce` is 1); with 1.6
/// (no debounce in its uAPI) the caller debounces on the timestamps. Edge timestamps are on
/// CLOCK_MONOTONIC. Returns NULL with errno on failure.
sg_gpio_input *sg_gpio_request_input(const char *chip, uint32_t offset, int active_low, int bias,
                                     uint32_t debounce_us, const char *consumer, int *kernel_debounce);
/// The descriptor to poll for edge events (non-blocking).
int sg_gpio_input_fd(const sg_gpio_input *input);
/// The logical level now: 1 active, 0 inactive, -1 with errno.
int sg_gpio_input_get(sg_gpio_input *input);
/// Reads up to `capacity` pending edge events (one read(2), no allocation): `levels[i]` 1 when
/// the line became active, `timestamps_ns[i]` the kernel's CLOCK_MONOTONIC time. Returns the
/// count (0: none pending), or -1 with errno.
int sg_gpio_input_read(sg_gpio_input *input, int32_t *levels, uint64_t *timestamps_ns, int capacity);
/// Releases the line.
void sg_gpio_input_release(sg_gpio_input *input);

/// What `scangate probe` reads of one line before the service claims it.
typedef struct sg_gpio_line_state_info {
  int32_t used;
  int32_t output;
  /// SG_BIAS_* (SG_BIAS_AS_IS: the kernel does not say).
  int32_t bias;
  /// The physical level (0 or 1; -1: unknown, e.g. the line is in use).
  int32_t level;
} sg_gpio_line_state_info;
/// Reads a line's direction, bias and physical level without changing its direction. Returns
/// 0, or -1 with errno.
int sg_gpio_line_state(const char *chip, uint32_t offset, sg_gpio_line_state_info *info);

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
