#include "scangate_gpiod.h"

#include <errno.h>
#include <gpiod.h>
#include <stdlib.h>

// libgpiod v1 (Debian 12 / Raspberry Pi OS bookworm).
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
  return out;
}

int sg_gpio_set(sg_gpio_line *line, int active) { return gpiod_line_set_value(line->line, active ? 1 : 0); }

void sg_gpio_release(sg_gpio_line *line) {
  if (line == NULL) return;
  gpiod_line_set_value(line->line, 0);
  gpiod_line_release(line->line);
  gpiod_chip_close(line->chip);
  free(line);
}

const char *sg_gpio_library_version(void) { return gpiod_version_string(); }
