// Plane mapping and luma layouts for the libcamera shim: plain C, built with or without
// libcamera, so the handoff of a buffer's luma plane is testable on any host.
#define _GNU_SOURCE
#include "scangate_camera.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int sg_cam_map_plane(int fd, uint32_t offset, uint32_t length, sg_cam_plane *out) {
  if (out == NULL) return SG_CAM_FAILED;
  memset(out, 0, sizeof *out);
  if (fd < 0 || length == 0) return SG_CAM_FAILED;
  long page = sysconf(_SC_PAGESIZE);
  if (page <= 0) page = 4096;
  size_t aligned = (size_t)offset & ~((size_t)page - 1);
  size_t lead = (size_t)offset - aligned;
  size_t span = lead + length;
  void *base = mmap(NULL, span, PROT_READ, MAP_SHARED, fd, (off_t)aligned);
  if (base == MAP_FAILED) return SG_CAM_FAILED;
  out->map_base = base;
  out->map_length = span;
  out->plane = (const uint8_t *)base + lead;
  out->plane_length = length;
  return SG_CAM_OK;
}

void sg_cam_unmap_plane(sg_cam_plane *plane) {
  if (plane == NULL || plane->map_base == NULL) return;
  munmap(plane->map_base, plane->map_length);
  memset(plane, 0, sizeof *plane);
}

typedef struct {
  const char *name;
  uint32_t pixel_stride;
  uint32_t luma_offset;
} layout;

// Planar and semi-planar YUV: plane 0 is the luma plane. Packed YUV: every other byte.
// Packed RGB: the green sample stands in for luma (it carries most of it), read in place.
static const layout kLayouts[] = {
    {"R8", 1, 0},     {"NV12", 1, 0},   {"NV21", 1, 0},   {"YUV420", 1, 0}, {"YVU420", 1, 0},
    {"NV16", 1, 0},   {"NV61", 1, 0},   {"YUV422", 1, 0}, {"YUYV", 2, 0},   {"YVYU", 2, 0},
    {"UYVY", 2, 1},   {"VYUY", 2, 1},   {"BGR888", 3, 1}, {"RGB888", 3, 1}, {"XRGB8888", 4, 1},
    {"XBGR8888", 4, 1}, {"ARGB8888", 4, 1}, {"ABGR8888", 4, 1},
};

int sg_cam_luma_layout(const char *pixel_format, uint32_t *pixel_stride, uint32_t *luma_offset) {
  if (pixel_format == NULL) return SG_CAM_FORMAT;
  for (size_t i = 0; i < sizeof kLayouts / sizeof kLayouts[0]; i++) {
    if (strcmp(kLayouts[i].name, pixel_format) == 0) {
      if (pixel_stride) *pixel_stride = kLayouts[i].pixel_stride;
      if (luma_offset) *luma_offset = kLayouts[i].luma_offset;
      return SG_CAM_OK;
    }
  }
  return SG_CAM_FORMAT;
}
