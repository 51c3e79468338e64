// Image decoding for files (not the frame path): libturbojpeg for JPEG, stb_image for PNG, PNM,
// GIF and BMP; stb_image_write for PNG output; libqrencode for QR fixtures.
#include "scangate_image.h"

#include <qrencode.h>
#include <stdio.h>
#include <string.h>
#include <turbojpeg.h>

#define STB_IMAGE_IMPLEMENTATION
#define STBI_NO_STDIO
#define STBI_NO_HDR
#define STBI_NO_LINEAR
#define STBI_NO_PSD
#define STBI_NO_PIC
#define STBI_NO_TGA
#define STBI_FAILURE_USERMSG
#include <stb_image.h>

#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>
#include <stb_easy_font.h>
#include <stdlib.h>

static void set_error(char *error, size_t capacity, const char *message) {
  if (error == NULL || capacity == 0) return;
  snprintf(error, capacity, "%s", message);
}

static int32_t sniff(const uint8_t *d, size_t n) {
  if (n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF) return SG_IMAGE_JPEG;
  if (n >= 8 && memcmp(d, "\x89PNG\r\n\x1a\n", 8) == 0) return SG_IMAGE_PNG;
  if (n >= 2 && d[0] == 'P' && (d[1] == '5' || d[1] == '6')) return SG_IMAGE_PNM;
  if (n >= 4 && memcmp(d, "GIF8", 4) == 0) return SG_IMAGE_GIF;
  if (n >= 2 && d[0] == 'B' && d[1] == 'M') return SG_IMAGE_BMP;
  return SG_IMAGE_UNKNOWN;
}

int32_t sg_image_info(const uint8_t *data, size_t size, int32_t *kind, int32_t *width,
                      int32_t *height, char *error, size_t error_capacity) {
  *kind = sniff(data, size);
  *width = 0;
  *height = 0;
  if (*kind == SG_IMAGE_UNKNOWN) {
    set_error(error, error_capacity, size == 0 ? "empty file" : "not a JPEG, PNG, PNM, GIF or BMP image");
    return -1;
  }
  if (size > 0x7fffffff) {
    set_error(error, error_capacity, "file too large");
    return -1;
  }
  if (*kind == SG_IMAGE_JPEG) {
    tjhandle handle = tjInitDecompress();
    if (handle == NULL) {
      set_error(error, error_capacity, "libturbojpeg could not start");
      return -1;
    }
    int w = 0, h = 0, subsampling = 0, colorspace = 0;
    int rc = tjDecompressHeader3(handle, data, (unsigned long)size, &w, &h, &subsampling, &colorspace);
    if (rc != 0) set_error(error, error_capacity, tjGetErrorStr2(handle));
    tjDestroy(handle);
    if (rc != 0) return -1;
    *width = w;
    *height = h;
    return 0;
  }
  int w = 0, h = 0, components = 0;
  if (!stbi_info_from_memory(data, (int)size, &w, &h, &components)) {
    set_error(error, error_capacity, stbi_failure_reason());
    return -1;
  }
  *width = w;
  *height = h;
  return 0;
}

int32_t sg_image_decode_gray(const uint8_t *data, size_t size, uint8_t *out, size_t out_capacity,
                             int32_t width, int32_t height, char *error, size_t error_capacity) {
  if (width <= 0 || height <= 0 || (size_t)width * (size_t)height > out_capacity) {
    set_error(error, error_capacity, "output buffer too small for the image");
    return -1;
  }
  if (sniff(data, size) == SG_IMAGE_JPEG) {
    tjhandle handle = tjInitDecompress();
    if (handle == NULL) {
      set_error(error, error_capacity, "libturbojpeg could not start");
      return -1;
    }
    int rc = tjDecompress2(handle, data, (unsigned long)size, out, width, width, height, TJPF_GRAY,
                           TJFLAG_ACCURATEDCT);
    // A warning (e.g. premature end of data) still delivers pixels; only errors are fatal.
    if (rc != 0 && tjGetErrorCode(handle) == TJERR_FATAL) {
      set_error(error, error_capacity, tjGetErrorStr2(handle));
      tjDestroy(handle);
      return -1;
    }
    tjDestroy(handle);
    return 0;
  }
  int w = 0, h = 0, components = 0;
  stbi_uc *pixels = stbi_load_from_memory(data, (int)size, &w, &h, &components, 1);
  if (pixels == NULL) {
    set_error(error, error_capacity, stbi_failure_reason());
    return -1;
  }
  if (w != width || h != height) {
    stbi_image_free(pixels);
    set_error(error, error_capacity, "image dimensions changed between header and pixels");
    return -1;
  }
  memcpy(out, pixels, (size_t)w * (size_t)h);
  stbi_image_free(pixels);
  return 0;
}

int32_t sg_png_write(const char *path, const uint8_t *pixels, int32_t width, int32_t height,
                     int32_t components) {
  return stbi_write_png(path, width, height, components, pixels, width * components) ? 0 : -1;
}

static int32_t render_code(QRcode *code, int32_t scale, int32_t margin, uint8_t *out, size_t capacity);

int32_t sg_qr_render(const uint8_t *data, size_t size, int32_t scale, int32_t margin, uint8_t *out,
                     size_t capacity) {
  if (scale <= 0 || margin < 0 || size > 2953) return -1;
  QRcode *code = QRcode_encodeData((int)size, data, 0, QR_ECLEVEL_M);
  if (code == NULL) return -1;
  return render_code(code, scale, margin, out, capacity);
}

int32_t sg_qr_render_text(const char *text, int32_t scale, int32_t margin, uint8_t *out, size_t capacity,
                          int32_t *modules) {
  if (scale <= 0 || margin < 0 || strlen(text) > 4296) return -1;
  // Case-sensitive, with libqrencode choosing numeric / alphanumeric / byte segments.
  QRcode *code = QRcode_encodeString(text, 0, QR_ECLEVEL_M, QR_MODE_8, 1);
  if (code == NULL) return -1;
  if (modules) *modules = code->width;
  return render_code(code, scale, margin, out, capacity);
}

static int32_t render_code(QRcode *code, int32_t scale, int32_t margin, uint8_t *out, size_t capacity) {
  int32_t modules = code->width + 2 * margin;
  int32_t side = modules * scale;
  if ((size_t)side * (size_t)side > capacity) {
    QRcode_free(code);
    return -1;
  }
  memset(out, 255, (size_t)side * (size_t)side);
  for (int32_t y = 0; y < code->width; y++) {
    for (int32_t x = 0; x < code->width; x++) {
      if ((code->data[y * code->width + x] & 1) == 0) continue;
      for (int32_t dy = 0; dy < scale; dy++) {
        uint8_t *row = out + (size_t)((y + margin) * scale + dy) * (size_t)side;
        memset(row + (x + margin) * scale, 0, (size_t)scale);
      }
    }
  }
  QRcode_free(code);
  return side;
}

typedef struct png_sink {
  uint8_t *data;
  size_t size, capacity;
  int failed;
} png_sink;

static void png_append(void *context, void *bytes, int size) {
  png_sink *sink = context;
  if (sink->failed || size <= 0) return;
  if (sink->size + (size_t)size > sink->capacity) {
    size_t capacity = sink->capacity ? sink->capacity * 2 : 65536;
    while (capacity < sink->size + (size_t)size) capacity *= 2;
    uint8_t *grown = realloc(sink->data, capacity);
    if (grown == NULL) { sink->failed = 1; return; }
    sink->data = grown;
    sink->capacity = capacity;
  }
  memcpy(sink->data + sink->size, bytes, (size_t)size);
  sink->size += (size_t)size;
}

uint8_t *sg_png_encode(const uint8_t *pixels, int32_t width, int32_t height, int32_t components,
                       size_t *size) {
  png_sink sink = {0};
  if (!stbi_write_png_to_func(png_append, &sink, width, height, components, pixels, width * components) || sink.failed) {
    free(sink.data);
    *size = 0;
    return NULL;
  }
  *size = sink.size;
  return sink.data;
}

void sg_free(void *p) { free(p); }

int32_t sg_image_decode_rgb(const uint8_t *data, size_t size, uint8_t *out, size_t out_capacity,
                            int32_t width, int32_t height) {
  int w = 0, h = 0, components = 0;
  stbi_uc *pixels = stbi_load_from_memory(data, (int)size, &w, &h, &components, 3);
  if (pixels == NULL) return -1;
  if (w != width || h != height || (size_t)w * (size_t)h * 3 > out_capacity) {
    stbi_image_free(pixels);
    return -1;
  }
  memcpy(out, pixels, (size_t)w * (size_t)h * 3);
  stbi_image_free(pixels);
  return 0;
}

int32_t sg_draw_text(uint8_t *rgb, int32_t width, int32_t height, int32_t x, int32_t y,
                     const char *text, uint8_t r, uint8_t g, uint8_t b, int32_t scale) {
  static char vertices[16 * 4 * 1200];  /* one caller at a time: the snapshot thread */
  int quads = stb_easy_font_print(0, 0, (char *)text, NULL, vertices, sizeof vertices);
  for (int q = 0; q < quads; q++) {
    float *v0 = (float *)(vertices + (q * 4 + 0) * 16);
    float *v2 = (float *)(vertices + (q * 4 + 2) * 16);
    int qx0 = x + (int)(v0[0] * scale), qy0 = y + (int)(v0[1] * scale);
    int qx1 = x + (int)(v2[0] * scale), qy1 = y + (int)(v2[1] * scale);
    for (int py = qy0; py < qy1; py++) {
      if (py < 0 || py >= height) continue;
      for (int px = qx0; px < qx1; px++) {
        if (px < 0 || px >= width) continue;
        uint8_t *p = rgb + ((size_t)py * (size_t)width + (size_t)px) * 3;
        p[0] = r; p[1] = g; p[2] = b;
      }
    }
  }
  return stb_easy_font_width((char *)text) * scale;
}

int32_t sg_text_width(const char *text, int32_t scale) { return stb_easy_font_width((char *)text) * scale; }
