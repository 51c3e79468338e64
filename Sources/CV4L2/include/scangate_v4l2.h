// V4L2 through libv4l2 for Swift: the variadic calls wrapped, the function-like macros exported.
#ifndef SCANGATE_V4L2_H
#define SCANGATE_V4L2_H
#include <stdint.h>
#include <stddef.h>
#include <linux/videodev2.h>

int sg_v4l2_open(const char *path, int flags);
int sg_v4l2_close(int fd);
int sg_v4l2_ioctl(int fd, unsigned long request, void *argument);
void *sg_v4l2_mmap(size_t length, int fd, int64_t offset);
int sg_v4l2_munmap(void *address, size_t length);

extern const unsigned long SG_VIDIOC_QUERYCAP, SG_VIDIOC_S_FMT, SG_VIDIOC_G_FMT, SG_VIDIOC_REQBUFS,
    SG_VIDIOC_QUERYBUF, SG_VIDIOC_QBUF, SG_VIDIOC_DQBUF, SG_VIDIOC_STREAMON, SG_VIDIOC_STREAMOFF,
    SG_VIDIOC_S_PARM, SG_VIDIOC_ENUM_FMT, SG_VIDIOC_ENUM_FRAMESIZES;
extern const uint32_t SG_PIX_FMT_GREY, SG_PIX_FMT_YUYV, SG_PIX_FMT_MJPEG, SG_PIX_FMT_JPEG;
extern const uint32_t SG_V4L2_CAP_VIDEO_CAPTURE, SG_V4L2_CAP_STREAMING, SG_V4L2_CAP_DEVICE_CAPS;
extern const void *const SG_MAP_FAILED;
#endif
