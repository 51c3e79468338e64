// JPEG encoding for tests only (libturbojpeg's encoder): camera-like MJPEG frames from gray
// pixels, to feed the frame decoder.
#ifndef TEST_JPEG_H
#define TEST_JPEG_H
#include <stddef.h>
#include <stdint.h>
/// Encodes gray pixels (stride `width`) as a baseline JPEG at `quality`; `chroma` 1 makes a
/// three-component YCbCr 4:2:2 JPEG (as UVC cameras send), 0 a one-component gray JPEG.
/// Returns the size written into `out`, or 0 when it does not fit or fails.
size_t test_jpeg_encode(const uint8_t *gray, int32_t width, int32_t height, int32_t quality,
                        int32_t chroma, uint8_t *out, size_t capacity);
/// The decoder the frame path used before its arena: libturbojpeg's tjDecompress2 to gray with
/// one handle kept across calls (create it with test_jpeg_turbo_create). Returns 0 or -1.
void *test_jpeg_turbo_create(void);
void test_jpeg_turbo_destroy(void *handle);
int32_t test_jpeg_turbo_decode(void *handle, const uint8_t *data, size_t size, uint8_t *out,
                               int32_t width, int32_t height);
#endif
