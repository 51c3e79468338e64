#include "scangate_v4l2.h"
#include <libv4l2.h>
#include <sys/mman.h>
#include <fcntl.h>

int sg_v4l2_open(const char *path, int flags) { return v4l2_open(path, flags); }
int sg_v4l2_close(int fd) { return v4l2_close(fd); }
int sg_v4l2_ioctl(int fd, unsigned long request, void *argument) { return v4l2_ioctl(fd, request, argument); }
void *sg_v4l2_mmap(size_t length, int fd, int64_t offset) {
  return v4l2_mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset);
}
int sg_v4l2_munmap(void *address, size_t length) { return v4l2_munmap(address, length); }

const unsigned long SG_VIDIOC_QUERYCAP = VIDIOC_QUERYCAP, SG_VIDIOC_S_FMT = VIDIOC_S_FMT,
    SG_VIDIOC_G_FMT = VIDIOC_G_FMT, SG_VIDIOC_REQBUFS = VIDIOC_REQBUFS,
    SG_VIDIOC_QUERYBUF = VIDIOC_QUERYBUF, SG_VIDIOC_QBUF = VIDIOC_QBUF, SG_VIDIOC_DQBUF = VIDIOC_DQBUF,
    SG_VIDIOC_STREAMON = VIDIOC_STREAMON, SG_VIDIOC_STREAMOFF = VIDIOC_STREAMOFF,
    SG_VIDIOC_S_PARM = VIDIOC_S_PARM, SG_VIDIOC_ENUM_FMT = VIDIOC_ENUM_FMT,
    SG_VIDIOC_ENUM_FRAMESIZES = VIDIOC_ENUM_FRAMESIZES;
const uint32_t SG_PIX_FMT_GREY = V4L2_PIX_FMT_GREY, SG_PIX_FMT_YUYV = V4L2_PIX_FMT_YUYV,
    SG_PIX_FMT_MJPEG = V4L2_PIX_FMT_MJPEG, SG_PIX_FMT_JPEG = V4L2_PIX_FMT_JPEG;
const uint32_t SG_V4L2_CAP_VIDEO_CAPTURE = V4L2_CAP_VIDEO_CAPTURE,
    SG_V4L2_CAP_STREAMING = V4L2_CAP_STREAMING, SG_V4L2_CAP_DEVICE_CAPS = V4L2_CAP_DEVICE_CAPS;
const void *const SG_MAP_FAILED = MAP_FAILED;
