// Door inputs (contact, exit button, tamper) through libgpiod edge events, for the v1 (Debian 12)
// and v2 (Debian 13) APIs, picked by the library's own header like the outputs in gpiod_shim.c.
// Every buffer is allocated when the line is requested; reading events allocates nothing.
#define _GNU_SOURCE
#include "scangate_gpiod.h"
#include "gpiod_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <gpiod.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/// Makes `fd` non-blocking: a read after poll said "readable" must never wait.
static int set_nonblocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  return flags < 0 ? -1 : fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

#ifdef GPIOD_BIT
// MARK: - libgpiod v1: both-edges events; debounce is the caller's (software, on the timestamps)

enum { SG_INPUT_BATCH = 16 };

struct sg_gpio_input {
  struct gpiod_chip *chip;
  struct gpiod_line *line;
  int fd;
  struct gpiod_line_event events[SG_INPUT_BATCH];
};

static int v1_bias_flags(int bias) {
  switch (bias) {
  case SG_BIAS_DISABLED: return GPIOD_LINE_REQUEST_FLAG_BIAS_DISABLE;
  case SG_BIAS_PULL_UP: return GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_UP;
  case SG_BIAS_PULL_DOWN: return GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_DOWN;
  default: return 0;
  }
}

sg_gpio_input *sg_gpio_request_input(const char *chip_name, uint32_t offset, int active_low, int bias,
                                     uint32_t debounce_us, const char *consumer, int *kernel_debounce) {
  (void)debounce_us;  // the v1 uAPI has no debounce
  if (kernel_debounce != NULL) *kernel_debounce = 0;
  sg_gpio_input *in = calloc(1, sizeof *in);
  if (in == NULL) {
    errno = ENOMEM;
    return NULL;
  }
  in->chip = gpiod_chip_open_lookup(chip_name);
  if (in->chip == NULL) in->chip = gpiod_chip_open_by_label(chip_name);
  if (in->chip == NULL) {
    if (errno == 0) errno = ENOENT;
    free(in);
    return NULL;
  }
  in->line = gpiod_chip_get_line(in->chip, offset);
  int flags = (active_low ? GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW : 0) | v1_bias_flags(bias);
  if (in->line == NULL || gpiod_line_request_both_edges_events_flags(in->line, consumer, flags) != 0 ||
      (in->fd = gpiod_line_event_get_fd(in->line)) < 0 || set_nonblocking(in->fd) != 0) {
    int saved = errno;
    gpiod_chip_close(in->chip);  // releases a requested line too
    free(in);
    errno = saved ? saved : EIO;
    return NULL;
  }
  return in;
}

int sg_gpio_input_fd(const sg_gpio_input *in) { return in->fd; }

int sg_gpio_input_get(sg_gpio_input *in) { return gpiod_line_get_value(in->line); }

int sg_gpio_input_read(sg_gpio_input *in, int32_t *levels, uint64_t *timestamps_ns, int capacity) {
  unsigned int n = capacity < SG_INPUT_BATCH ? (unsigned int)capacity : SG_INPUT_BATCH;
  // One read(2) of up to n gpioevent_data records into a stack array inside libgpiod.
  int got = gpiod_line_event_read_fd_multiple(in->fd, in->events, n);
  if (got < 0) return errno == EAGAIN ? 0 : -1;
  for (int i = 0; i < got; i++) {
    // The kernel reports the logical edge (active-low applied): rising = became active.
    levels[i] = in->events[i].event_type == GPIOD_LINE_EVENT_RISING_EDGE ? 1 : 0;
    timestamps_ns[i] = (uint64_t)in->events[i].ts.tv_sec * 1000000000u + (uint64_t)in->events[i].ts.tv_nsec;
  }
  return got;
}

void sg_gpio_input_release(sg_gpio_input *in) {
  if (in == NULL) return;
  gpiod_line_release(in->line);
  gpiod_chip_close(in->chip);
  free(in);
}

int sg_gpio_line_state(const char *chip_name, uint32_t offset, sg_gpio_line_state_info *out) {
  memset(out, 0, sizeof *out);
  struct gpiod_chip *chip = gpiod_chip_open_lookup(chip_name);
  if (chip == NULL) chip = gpiod_chip_open_by_label(chip_name);
  if (chip == NULL) {
    if (errno == 0) errno = ENOENT;
    return -1;
  }
  struct gpiod_line *line = gpiod_chip_get_line(chip, offset);
  if (line == NULL) {
    int saved = errno;
    gpiod_chip_close(chip);
    errno = saved;
    return -1;
  }
  out->used = gpiod_line_is_used(line);
  out->output = gpiod_line_direction(line) == GPIOD_LINE_DIRECTION_OUTPUT;
  switch (gpiod_line_bias(line)) {
  case GPIOD_LINE_BIAS_DISABLE: out->bias = SG_BIAS_DISABLED; break;
  case GPIOD_LINE_BIAS_PULL_UP: out->bias = SG_BIAS_PULL_UP; break;
  case GPIOD_LINE_BIAS_PULL_DOWN: out->bias = SG_BIAS_PULL_DOWN; break;
  default: out->bias = SG_BIAS_AS_IS; break;
  }
  out->level = -1;
  // Read the physical level without changing the direction (an output stays driven).
  if (!out->used && gpiod_line_request(line,
                                       &(struct gpiod_line_request_config){
                                           .consumer = "scangate-probe",
                                           .request_type = GPIOD_LINE_REQUEST_DIRECTION_AS_IS,
                                           .flags = 0},
                                       0) == 0) {
    out->level = gpiod_line_get_value(line);
    gpiod_line_release(line);
  }
  gpiod_chip_close(chip);
  return 0;
}

#else
// MARK: - libgpiod v2: edge detection with the kernel's debounce and monotonic timestamps

enum { SG_INPUT_BATCH = 16 };

struct sg_gpio_input {
  struct gpiod_line_request *request;
  struct gpiod_edge_event_buffer *buffer;
  unsigned int offset;
  int fd;
};

static enum gpiod_line_bias v2_bias(int bias) {
  switch (bias) {
  case SG_BIAS_DISABLED: return GPIOD_LINE_BIAS_DISABLED;
  case SG_BIAS_PULL_UP: return GPIOD_LINE_BIAS_PULL_UP;
  case SG_BIAS_PULL_DOWN: return GPIOD_LINE_BIAS_PULL_DOWN;
  default: return GPIOD_LINE_BIAS_AS_IS;
  }
}

sg_gpio_input *sg_gpio_request_input(const char *chip_name, uint32_t offset, int active_low, int bias,
                                     uint32_t debounce_us, const char *consumer, int *kernel_debounce) {
  if (kernel_debounce != NULL) *kernel_debounce = 0;
  struct gpiod_chip *chip = sg_gpio_open_chip(chip_name);
  if (chip == NULL) {
    if (errno == 0) errno = ENOENT;
    return NULL;
  }
  sg_gpio_input *in = calloc(1, sizeof *in);
  struct gpiod_line_settings *settings = gpiod_line_settings_new();
  struct gpiod_line_config *line_config = gpiod_line_config_new();
  struct gpiod_request_config *request_config = gpiod_request_config_new();
  unsigned int offsets[1] = {offset};
  int ok = in != NULL && settings != NULL && line_config != NULL && request_config != NULL &&
           gpiod_line_settings_set_direction(settings, GPIOD_LINE_DIRECTION_INPUT) == 0 &&
           gpiod_line_settings_set_edge_detection(settings, GPIOD_LINE_EDGE_BOTH) == 0 &&
           gpiod_line_settings_set_bias(settings, v2_bias(bias)) == 0 &&
           gpiod_line_settings_set_event_clock(settings, GPIOD_LINE_CLOCK_MONOTONIC) == 0;
  if (ok) {
    gpiod_line_settings_set_active_low(settings, active_low ? true : false);
    gpiod_line_settings_set_debounce_period_us(settings, debounce_us);
    gpiod_request_config_set_consumer(request_config, consumer);
    if (gpiod_line_config_add_line_settings(line_config, offsets, 1, settings) == 0)
      in->request = gpiod_chip_request_lines(chip, request_config, line_config);
  }
  int saved = errno;
  gpiod_request_config_free(request_config);
  gpiod_line_config_free(line_config);
  gpiod_line_settings_free(settings);
  gpiod_chip_close(chip);  // the request keeps its own file descriptor
  if (in != NULL && in->request != NULL) in->buffer = gpiod_edge_event_buffer_new(SG_INPUT_BATCH);
  if (in == NULL || in->request == NULL || in->buffer == NULL ||
      set_nonblocking(in->fd = gpiod_line_request_get_fd(in->request)) != 0) {
    if (in != NULL) {
      saved = errno ? errno : saved;
      if (in->buffer != NULL) gpiod_edge_event_buffer_free(in->buffer);
      if (in->request != NULL) gpiod_line_request_release(in->request);
      free(in);
    }
    errno = saved ? saved : EIO;
    return NULL;
  }
  in->offset = offset;
  if (kernel_debounce != NULL) *kernel_debounce = debounce_us > 0;
  return in;
}

int sg_gpio_input_fd(const sg_gpio_input *in) { return in->fd; }

int sg_gpio_input_get(sg_gpio_input *in) {
  enum gpiod_line_value v = gpiod_line_request_get_value(in->request, in->offset);
  return v == GPIOD_LINE_VALUE_ERROR ? -1 : v == GPIOD_LINE_VALUE_ACTIVE;
}

int sg_gpio_input_read(sg_gpio_input *in, int32_t *levels, uint64_t *timestamps_ns, int capacity) {
  size_t n = capacity < SG_INPUT_BATCH ? (size_t)capacity : SG_INPUT_BATCH;
  // One read(2) into the buffer allocated at request time.
  int got = gpiod_line_request_read_edge_events(in->request, in->buffer, n);
  if (got < 0) return errno == EAGAIN ? 0 : -1;
  for (int i = 0; i < got; i++) {
    struct gpiod_edge_event *e = gpiod_edge_event_buffer_get_event(in->buffer, (unsigned long)i);
    // Logical edges (active-low applied): rising = became active.
    levels[i] = gpiod_edge_event_get_event_type(e) == GPIOD_EDGE_EVENT_RISING_EDGE ? 1 : 0;
    timestamps_ns[i] = gpiod_edge_event_get_timestamp_ns(e);
  }
  return got;
}

void sg_gpio_input_release(sg_gpio_input *in) {
  if (in == NULL) return;
  gpiod_edge_event_buffer_free(in->buffer);
  gpiod_line_request_release(in->request);
  free(in);
}

int sg_gpio_line_state(const char *chip_name, uint32_t offset, sg_gpio_line_state_info *out) {
  memset(out, 0, sizeof *out);
  struct gpiod_chip *chip = sg_gpio_open_chip(chip_name);
  if (chip == NULL) {
    if (errno == 0) errno = ENOENT;
    return -1;
  }
  struct gpiod_line_info *info = gpiod_chip_get_line_info(chip, offset);
  if (info == NULL) {
    int saved = errno;
    gpiod_chip_close(chip);
    errno = saved;
    return -1;
  }
  out->used = gpiod_line_info_is_used(info);
  out->output = gpiod_line_info_get_direction(info) == GPIOD_LINE_DIRECTION_OUTPUT;
  switch (gpiod_line_info_get_bias(info)) {
  case GPIOD_LINE_BIAS_DISABLED: out->bias = SG_BIAS_DISABLED; break;
  case GPIOD_LINE_BIAS_PULL_UP: out->bias = SG_BIAS_PULL_UP; break;
  case GPIOD_LINE_BIAS_PULL_DOWN: out->bias = SG_BIAS_PULL_DOWN; break;
  default: out->bias = SG_BIAS_AS_IS; break;
  }
  gpiod_line_info_free(info);
  out->level = -1;
  if (!out->used) {
    // Read the physical level without changing the direction (an output stays driven).
    struct gpiod_line_settings *settings = gpiod_line_settings_new();
    struct gpiod_line_config *line_config = gpiod_line_config_new();
    struct gpiod_request_config *request_config = gpiod_request_config_new();
    unsigned int offsets[1] = {offset};
    struct gpiod_line_request *request = NULL;
    if (settings != NULL && line_config != NULL && request_config != NULL &&
        gpiod_line_settings_set_direction(settings, GPIOD_LINE_DIRECTION_AS_IS) == 0) {
      gpiod_request_config_set_consumer(request_config, "scangate-probe");
      if (gpiod_line_config_add_line_settings(line_config, offsets, 1, settings) == 0)
        request = gpiod_chip_request_lines(chip, request_config, line_config);
    }
    if (request != NULL) {
      enum gpiod_line_value v = gpiod_line_request_get_value(request, offset);
      out->level = v == GPIOD_LINE_VALUE_ERROR ? -1 : (int)v;
      gpiod_line_request_release(request);
    }
    gpiod_request_config_free(request_config);
    gpiod_line_config_free(line_config);
    gpiod_line_settings_free(settings);
  }
  gpiod_chip_close(chip);
  return 0;
}
#endif
