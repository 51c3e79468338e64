#include "scangate_gpiod.h"

#include <dirent.h>
#include <errno.h>
#include <gpiod.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
  return out;
}

int sg_gpio_set(sg_gpio_line *line, int active) {
  return gpiod_line_request_set_value(line->request, line->offset,
                                      active ? GPIOD_LINE_VALUE_ACTIVE : GPIOD_LINE_VALUE_INACTIVE);
}

void sg_gpio_release(sg_gpio_line *line) {
  if (line == NULL) return;
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
