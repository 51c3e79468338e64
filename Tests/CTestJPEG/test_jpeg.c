#include "test_jpeg.h"

#include <stdlib.h>
#include <string.h>
#include <turbojpeg.h>

size_t test_jpeg_encode(const uint8_t *gray, int32_t width, int32_t height, int32_t quality,
                        int32_t chroma, uint8_t *out, size_t capacity) {
  tjhandle handle = tjInitCompress();
  if (handle == NULL) return 0;
  uint8_t *rgb = NULL;
  const uint8_t *source = gray;
  int format = TJPF_GRAY, subsampling = TJSAMP_GRAY;
  if (chroma) {
    rgb = malloc((size_t)width * (size_t)height * 3);
    if (rgb == NULL) { tjDestroy(handle); return 0; }
    for (size_t i = 0; i < (size_t)width * (size_t)height; i++) memset(rgb + 3 * i, gray[i], 3);
    source = rgb;
    format = TJPF_RGB;
    subsampling = TJSAMP_422;
  }
  unsigned char *jpeg = NULL;
  unsigned long size = 0;
  int rc = tjCompress2(handle, source, width, 0, height, format, &jpeg, &size, subsampling, quality, 0);
  free(rgb);
  size_t written = 0;
  if (rc == 0 && size <= capacity) {
    memcpy(out, jpeg, size);
    written = size;
  }
  tjFree(jpeg);
  tjDestroy(handle);
  return written;
}

void *test_jpeg_turbo_create(void) { return tjInitDecompress(); }
void test_jpeg_turbo_destroy(void *handle) { tjDestroy(handle); }
int32_t test_jpeg_turbo_decode(void *handle, const uint8_t *data, size_t size, uint8_t *out,
                               int32_t width, int32_t height) {
  return tjDecompress2(handle, data, (unsigned long)size, out, width, width, height, TJPF_GRAY,
                       TJFLAG_FASTDCT) == 0 ? 0 : -1;
}
