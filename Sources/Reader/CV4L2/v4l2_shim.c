#include "scangate_v4l2.h"

#include <errno.h>
#include <fcntl.h>
#include <libv4l2.h>
#include <linux/videodev2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

const uint32_t SG_PIX_FMT_GREY = V4L2_PIX_FMT_GREY, SG_PIX_FMT_YUYV = V4L2_PIX_FMT_YUYV,
               SG_PIX_FMT_MJPEG = V4L2_PIX_FMT_MJPEG, SG_PIX_FMT_JPEG = V4L2_PIX_FMT_JPEG,
               SG_PIX_FMT_YUV420 = V4L2_PIX_FMT_YUV420, SG_PIX_FMT_NV12 = V4L2_PIX_FMT_NV12,
               SG_PIX_FMT_NV21 = V4L2_PIX_FMT_NV21, SG_PIX_FMT_RGB24 = V4L2_PIX_FMT_RGB24,
               SG_PIX_FMT_BGR24 = V4L2_PIX_FMT_BGR24;

// libv4l2 makes its open, ioctl and mmap as raw system calls, so an LD_PRELOAD layer such as
// libcamera's V4L2 compatibility layer (`libcamerify`) never sees them. Under such a layer the
// device is driven through the C library's calls instead (which the layer interposes).
static int plain_calls = -1;

int sg_v4l2_plain_calls(void) {
  if (plain_calls < 0) {
    const char *preload = getenv("LD_PRELOAD");
    plain_calls = preload != NULL && strstr(preload, "v4l2-compat") != NULL;
  }
  return plain_calls;
}

void sg_v4l2_set_plain_calls(int on) { plain_calls = on != 0; }

static int xioctl(int fd, unsigned long request, void *arg) {
  return sg_v4l2_plain_calls() ? ioctl(fd, request, arg) : v4l2_ioctl(fd, request, arg);
}

int sg_v4l2_open(const char *path) {
  return sg_v4l2_plain_calls() ? open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
                               : v4l2_open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
}
int sg_v4l2_close(int fd) { return sg_v4l2_plain_calls() ? close(fd) : v4l2_close(fd); }

int sg_v4l2_query(int fd, char *driver, size_t driver_capacity, char *card, size_t card_capacity,
                  int *capture_streaming) {
  struct v4l2_capability cap;
  memset(&cap, 0, sizeof cap);
  if (xioctl(fd, VIDIOC_QUERYCAP, &cap) != 0) return -1;
  snprintf(driver, driver_capacity, "%s", (const char *)cap.driver);
  snprintf(card, card_capacity, "%s", (const char *)cap.card);
  uint32_t caps = (cap.capabilities & V4L2_CAP_DEVICE_CAPS) ? cap.device_caps : cap.capabilities;
  *capture_streaming = (caps & V4L2_CAP_VIDEO_CAPTURE) && (caps & V4L2_CAP_STREAMING);
  return 0;
}

int sg_v4l2_enum_format(int fd, uint32_t index, uint32_t *fourcc) {
  struct v4l2_fmtdesc desc;
  memset(&desc, 0, sizeof desc);
  desc.index = index;
  desc.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
  if (xioctl(fd, VIDIOC_ENUM_FMT, &desc) != 0) return -1;
  // libv4l2 adds emulated formats it converts in software; ScanGate wants only native ones.
  if (desc.flags & V4L2_FMT_FLAG_EMULATED) *fourcc = 0;
  else *fourcc = desc.pixelformat;
  return 0;
}

int sg_v4l2_enum_size(int fd, uint32_t fourcc, uint32_t index, uint32_t *width, uint32_t *height) {
  struct v4l2_frmsizeenum size;
  memset(&size, 0, sizeof size);
  size.index = index;
  size.pixel_format = fourcc;
  if (xioctl(fd, VIDIOC_ENUM_FRAMESIZES, &size) != 0) return -1;
  if (size.type == V4L2_FRMSIZE_TYPE_DISCRETE) {
    *width = size.discrete.width;
    *height = size.discrete.height;
  } else {
    *width = size.stepwise.max_width;
    *height = size.stepwise.max_height;
  }
  return 0;
}

int sg_v4l2_set_format(int fd, uint32_t fourcc, uint32_t width, uint32_t height, uint32_t *out_fourcc,
                       uint32_t *out_width, uint32_t *out_height, uint32_t *bytes_per_line,
                       uint32_t *size_image) {
  struct v4l2_format fmt;
  memset(&fmt, 0, sizeof fmt);
  fmt.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
  fmt.fmt.pix.width = width;
  fmt.fmt.pix.height = height;
  fmt.fmt.pix.pixelformat = fourcc;
  fmt.fmt.pix.field = V4L2_FIELD_NONE;
  if (xioctl(fd, VIDIOC_S_FMT, &fmt) != 0) return -1;
  if (xioctl(fd, VIDIOC_G_FMT, &fmt) != 0) return -1;
  *out_fourcc = fmt.fmt.pix.pixelformat;
  *out_width = fmt.fmt.pix.width;
  *out_height = fmt.fmt.pix.height;
  *bytes_per_line = fmt.fmt.pix.bytesperline;
  *size_image = fmt.fmt.pix.sizeimage;
  return 0;
}

int sg_v4l2_set_fps(int fd, uint32_t fps) {
  struct v4l2_streamparm parm;
  memset(&parm, 0, sizeof parm);
  parm.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
  parm.parm.capture.timeperframe.numerator = 1;
  parm.parm.capture.timeperframe.denominator = fps;
  return xioctl(fd, VIDIOC_S_PARM, &parm);
}

int sg_v4l2_request_buffers(int fd, uint32_t count) {
  struct v4l2_requestbuffers req;
  memset(&req, 0, sizeof req);
  req.count = count;
  req.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
  req.memory = V4L2_MEMORY_MMAP;
  if (xioctl(fd, VIDIOC_REQBUFS, &req) != 0) return -1;
  return (int)req.count;
}

/// A capture buffer descriptor for mmap streaming, zeroed but for type, memory and index.
static struct v4l2_buffer capture_buffer(uint32_t index) {
  struct v4l2_buffer buf;
  memset(&buf, 0, sizeof buf);
  buf.type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
  buf.memory = V4L2_MEMORY_MMAP;
  buf.index = index;
  return buf;
}

int sg_v4l2_map_buffer(int fd, uint32_t index, void **address, size_t *length) {
  struct v4l2_buffer buf = capture_buffer(index);
  if (xioctl(fd, VIDIOC_QUERYBUF, &buf) != 0) return -1;
  void *p = sg_v4l2_plain_calls() ? mmap(NULL, buf.length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, buf.m.offset)
                                  : v4l2_mmap(NULL, buf.length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, buf.m.offset);
  if (p == MAP_FAILED) return -1;
  *address = p;
  *length = buf.length;
  return 0;
}

int sg_v4l2_unmap(void *address, size_t length) {
  return sg_v4l2_plain_calls() ? munmap(address, length) : v4l2_munmap(address, length);
}

int sg_v4l2_queue(int fd, uint32_t index) {
  struct v4l2_buffer buf = capture_buffer(index);
  return xioctl(fd, VIDIOC_QBUF, &buf);
}

int sg_v4l2_dequeue(int fd, uint32_t *index, uint32_t *bytes_used, uint64_t *timestamp_ns,
                    uint32_t *sequence) {
  struct v4l2_buffer buf = capture_buffer(0);
  if (xioctl(fd, VIDIOC_DQBUF, &buf) != 0) return -1;
  *index = buf.index;
  *bytes_used = buf.bytesused;
  *timestamp_ns = (uint64_t)buf.timestamp.tv_sec * 1000000000ull + (uint64_t)buf.timestamp.tv_usec * 1000ull;
  *sequence = buf.sequence;
  return 0;
}

int sg_v4l2_stream(int fd, int on) {
  int type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
  return xioctl(fd, on ? VIDIOC_STREAMON : VIDIOC_STREAMOFF, &type);
}

void sg_v4l2_fourcc_name(uint32_t fourcc, char out[5]) {
  for (int i = 0; i < 4; i++) {
    char c = (char)((fourcc >> (8 * i)) & 0xFF);
    out[i] = (c >= 0x20 && c < 0x7F) ? c : '?';
  }
  out[4] = 0;
}
