// ScanGate's C interface to libcamera (CSI camera modules: Camera Module 2/3, HQ, Global
// Shutter; and any camera libcamera serves, the kernel's vimc included).
//
// Swift sees only this header. Behind it sits libcamera's C++ API (Debian 12's 0.0.3, Debian
// 13's 0.4, Raspberry Pi OS's own), chosen at build time; without libcamera the same functions
// build into a stub whose open fails with SG_CAM_NOT_BUILT and a message saying so. Nothing here
// throws: every C++ exception is caught inside. After `sg_cam_open` returns, taking and
// returning frames allocate nothing in the shim (libcamera's own internals are measured apart).
#ifndef SCANGATE_CAMERA_H
#define SCANGATE_CAMERA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Outcomes (negative: failures).
enum {
  SG_CAM_OK = 0,
  SG_CAM_NOT_BUILT = -1,   ///< this build has no libcamera
  SG_CAM_NOT_FOUND = -2,   ///< no such camera (or none at all)
  SG_CAM_BUSY = -3,        ///< another process holds the camera
  SG_CAM_FORMAT = -4,      ///< the camera offers no luma-bearing format at a usable size
  SG_CAM_FAILED = -5,      ///< libcamera refused a step (the message says which)
  SG_CAM_LOST = -6,        ///< the camera went away or stopped completing requests
};

/// Autofocus, for lenses that have it (Camera Module 3).
enum { SG_CAM_AF_DEFAULT = 0, SG_CAM_AF_MANUAL = 1, SG_CAM_AF_CONTINUOUS = 2 };

/// Control bits in `sg_cam_info.controls_applied` / `controls_missing`.
enum {
  SG_CAM_CTRL_EXPOSURE = 1u << 0,         ///< fixed exposure time (auto exposure off)
  SG_CAM_CTRL_FRAME_DURATION = 1u << 1,   ///< frame duration limits (rate; bounds auto exposure)
  SG_CAM_CTRL_AF_MODE = 1u << 2,          ///< autofocus mode
  SG_CAM_CTRL_LENS_POSITION = 1u << 3,    ///< manual lens position
};

typedef struct sg_cam_settings {
  const char *camera;        ///< libcamera id, or a decimal index into the list; "" = the first
  uint32_t width, height;    ///< wanted size; the camera may give a smaller one, never larger
  uint32_t fps;              ///< frame rate asked for (frame duration limits)
  uint32_t buffers;          ///< frame buffers allocated at open, 2...8
  int32_t exposure_us;       ///< > 0: fixed exposure time; 0: auto exposure
  int32_t exposure_max_us;   ///< auto exposure: longest frame (and so exposure); 0: one frame time
  int32_t af_mode;           ///< SG_CAM_AF_*
  float lens_dioptres;       ///< SG_CAM_AF_MANUAL: lens position (1/metres); < 0: leave it
} sg_cam_settings;

/// What the camera was opened with.
typedef struct sg_cam_info {
  char id[160];
  char model[64];
  char pixel_format[16];     ///< libcamera's name of the stream format (R8, NV12, YUV420, BGR888, ...)
  uint32_t width, height;
  uint32_t row_stride;       ///< bytes from one row of the luma plane to the next
  uint32_t pixel_stride;     ///< bytes from one luma sample to the next (1 planar, 2 YUYV, 3 RGB)
  uint32_t luma_offset;      ///< byte of the first luma sample in the plane (green for RGB)
  uint32_t buffers;
  uint32_t controls_applied; ///< SG_CAM_CTRL_* the camera took
  uint32_t controls_missing; ///< SG_CAM_CTRL_* asked for but the camera has no such control
} sg_cam_info;

typedef struct sg_cam sg_cam;

/// 1 when this build has libcamera, else 0.
int sg_cam_built(void);
/// libcamera's version this build was compiled against ("" without libcamera).
const char *sg_cam_library_version(void);

/// Opens, configures, allocates every buffer, maps their luma planes and starts streaming.
/// On failure returns a negative SG_CAM_* with a one-line reason in `error`.
int sg_cam_open(const sg_cam_settings *settings, sg_cam **out, sg_cam_info *info, char *error, size_t error_capacity);

/// The eventfd that becomes readable when a request completes (or the camera is lost).
int sg_cam_event_fd(const sg_cam *cam);

/// Takes the newest completed frame: its luma plane in place (`*plane` spans `*length` bytes
/// from the plane's start, `luma_offset` included), its sensor timestamp (CLOCK_MONOTONIC ns)
/// and sequence. Older completed frames are queued again at once and added to `*dropped`.
/// Returns 1 with a frame (give it back with `sg_cam_return`), 0 when none is ready, or
/// SG_CAM_LOST.
int sg_cam_take(sg_cam *cam, const uint8_t **plane, size_t *length, uint64_t *timestamp_ns, uint64_t *sequence,
                uint64_t *dropped);
/// Gives the taken frame back to the camera. Returns 0, or SG_CAM_LOST.
int sg_cam_return(sg_cam *cam);
/// Frames that completed with an error (counted, not lent).
uint64_t sg_cam_failed_frames(const sg_cam *cam);

/// Stops streaming, frees the buffers, releases the camera. NULL is ignored.
void sg_cam_close(sg_cam *cam);

/// Writes the cameras and their modes as text lines into `out` (NUL-terminated, truncated to
/// fit). Returns the number of cameras, or a negative SG_CAM_* (reason in `out`).
int sg_cam_list(char *out, size_t capacity);

/// The luma plane of one frame buffer, mapped in place.
typedef struct sg_cam_plane {
  void *map_base;            ///< what mmap returned (page-aligned)
  size_t map_length;
  const uint8_t *plane;      ///< the plane's first byte inside the mapping
  size_t plane_length;
} sg_cam_plane;

/// Maps `length` bytes at `offset` of a dmabuf (or any mappable fd) read-only and points
/// `out->plane` at them, no copy. The open path maps every buffer with this; exposed for tests.
int sg_cam_map_plane(int fd, uint32_t offset, uint32_t length, sg_cam_plane *out);
void sg_cam_unmap_plane(sg_cam_plane *plane);

/// Luma layout of a libcamera pixel format name: pixel stride and first-sample offset.
/// Returns 0, or SG_CAM_FORMAT for a format without a usable luma plane.
int sg_cam_luma_layout(const char *pixel_format, uint32_t *pixel_stride, uint32_t *luma_offset);

#ifdef __cplusplus
}
#endif

#endif
