// V4L2 capture through libv4l2, one ioctl per function, for Swift (libv4l2's calls are variadic
// and the VIDIOC_* / V4L2_PIX_FMT_* macros are function-like, so Swift cannot use them directly).
// Every function returns -1 with errno set on failure; policy lives in ScanLinux/Errno.swift.
#ifndef SCANGATE_V4L2_H
#define SCANGATE_V4L2_H
#include <stddef.h>
#include <stdint.h>

extern const uint32_t SG_PIX_FMT_GREY, SG_PIX_FMT_YUYV, SG_PIX_FMT_MJPEG, SG_PIX_FMT_JPEG;
// Planar YUV 4:2:0 (the luma plane first, read in place) and packed RGB (the green bytes read in
// place as luma): what libcamera's V4L2 compatibility layer offers for a Pi camera or vimc.
extern const uint32_t SG_PIX_FMT_YUV420, SG_PIX_FMT_NV12, SG_PIX_FMT_NV21, SG_PIX_FMT_RGB24, SG_PIX_FMT_BGR24;

// Whether the device is driven through the C library's open/ioctl/mmap (under an LD_PRELOAD
// layer such as libcamerify, detected from LD_PRELOAD) rather than libv4l2's raw system calls.
int sg_v4l2_plain_calls(void);
void sg_v4l2_set_plain_calls(int on);

/// v4l2_open with O_RDWR | O_NONBLOCK | O_CLOEXEC.
int sg_v4l2_open(const char *path);
int sg_v4l2_close(int fd);

/// VIDIOC_QUERYCAP: driver and card names; `capture_streaming` is 1 when the node can capture
/// with mmap streaming.
int sg_v4l2_query(int fd, char *driver, size_t driver_capacity, char *card, size_t card_capacity,
                  int *capture_streaming);
/// VIDIOC_ENUM_FMT entry `index`: its fourcc. -1 with EINVAL past the last.
int sg_v4l2_enum_format(int fd, uint32_t index, uint32_t *fourcc);
/// VIDIOC_ENUM_FRAMESIZES entry `index` for `fourcc` (discrete sizes; stepwise gives the max).
int sg_v4l2_enum_size(int fd, uint32_t fourcc, uint32_t index, uint32_t *width, uint32_t *height);
/// VIDIOC_S_FMT then the driver's answer: size, row bytes, buffer bytes.
int sg_v4l2_set_format(int fd, uint32_t fourcc, uint32_t width, uint32_t height, uint32_t *out_fourcc,
                       uint32_t *out_width, uint32_t *out_height, uint32_t *bytes_per_line,
                       uint32_t *size_image);
/// VIDIOC_S_PARM frame interval 1/fps (drivers may ignore it; not an error for ScanGate).
int sg_v4l2_set_fps(int fd, uint32_t fps);
/// VIDIOC_REQBUFS (MMAP): returns the count granted.
int sg_v4l2_request_buffers(int fd, uint32_t count);
/// VIDIOC_QUERYBUF + mmap: the mapping of buffer `index`.
int sg_v4l2_map_buffer(int fd, uint32_t index, void **address, size_t *length);
int sg_v4l2_unmap(void *address, size_t length);
/// VIDIOC_QBUF of buffer `index`.
int sg_v4l2_queue(int fd, uint32_t index);
/// VIDIOC_DQBUF (non-blocking fd: -1 with EAGAIN when none is ready).
int sg_v4l2_dequeue(int fd, uint32_t *index, uint32_t *bytes_used, uint64_t *timestamp_ns,
                    uint32_t *sequence);
/// VIDIOC_STREAMON / VIDIOC_STREAMOFF.
int sg_v4l2_stream(int fd, int on);
/// The fourcc as four characters.
void sg_v4l2_fourcc_name(uint32_t fourcc, char out[5]);
#endif
