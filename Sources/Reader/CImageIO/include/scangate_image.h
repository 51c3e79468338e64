// ScanGate's image file codecs and QR fixture renderer (Debian libraries behind a C interface).
#ifndef SCANGATE_IMAGE_H
#define SCANGATE_IMAGE_H

#include <stddef.h>
#include <stdint.h>

/// Container formats recognised by their leading bytes.
enum { SG_IMAGE_UNKNOWN = 0, SG_IMAGE_JPEG = 1, SG_IMAGE_PNG = 2, SG_IMAGE_PNM = 3, SG_IMAGE_GIF = 4,
       SG_IMAGE_BMP = 5 };

/// Reads an encoded image's kind and dimensions without decoding pixels.
/// Returns 0 on success; -1 with a message in `error` otherwise.
int32_t sg_image_info(const uint8_t *data, size_t size, int32_t *kind, int32_t *width,
                      int32_t *height, char *error, size_t error_capacity);

/// Decodes an encoded image to 8-bit gray into `out` (`width * height` bytes, row stride `width`).
/// The caller checked the dimensions with sg_image_info first. Returns 0, or -1 with a message.
int32_t sg_image_decode_gray(const uint8_t *data, size_t size, uint8_t *out, size_t out_capacity,
                             int32_t width, int32_t height, char *error, size_t error_capacity);

/// Encodes an 8-bit gray or RGB image as PNG into a file. Returns 0, or -1.
int32_t sg_png_write(const char *path, const uint8_t *pixels, int32_t width, int32_t height,
                     int32_t components);

/// Renders `data` as a QR code with libqrencode: dark modules 0, light 255, `scale` pixels per
/// module, a quiet zone of `margin` modules. Writes at most `capacity` bytes; returns the side
/// length in pixels, or -1 (encoding failed or `capacity` too small; then nothing is written).
int32_t sg_qr_render(const uint8_t *data, size_t size, int32_t scale, int32_t margin, uint8_t *out,
                     size_t capacity);
/// Like sg_qr_render for text, in the most compact segment modes (base45 is all alphanumeric);
/// `modules` receives the symbol's side in modules (quiet zone excluded).
int32_t sg_qr_render_text(const char *text, int32_t scale, int32_t margin, uint8_t *out, size_t capacity,
                          int32_t *modules);


/// Encodes an image as PNG in memory. Returns a malloc'd buffer (free with sg_free) and its size.
uint8_t *sg_png_encode(const uint8_t *pixels, int32_t width, int32_t height, int32_t components,
                       size_t *size);
void sg_free(void *p);

/// Decodes an encoded image to 8-bit RGB into `out` (`width * height * 3` bytes). Returns 0 or -1.
int32_t sg_image_decode_rgb(const uint8_t *data, size_t size, uint8_t *out, size_t out_capacity,
                            int32_t width, int32_t height);

/// Draws ASCII `text` (stb_easy_font, 7 px high per `scale`) into an RGB image at (x, y).
/// Returns the width drawn in pixels.
int32_t sg_draw_text(uint8_t *rgb, int32_t width, int32_t height, int32_t x, int32_t y,
                     const char *text, uint8_t r, uint8_t g, uint8_t b, int32_t scale);
/// The width in pixels `text` would take at `scale`.
int32_t sg_text_width(const char *text, int32_t scale);
#endif

/// A JPEG decompressor kept for the camera's lifetime (MJPEG frames): libjpeg with a fixed
/// arena of `arena_bytes` for its per-image memory, so decoding a frame makes no heap allocation
/// after the first (what does not fit goes to libjpeg's own allocator, and is counted).
typedef void *sg_jpeg_handle;
sg_jpeg_handle sg_jpeg_create(size_t arena_bytes);
void sg_jpeg_destroy(sg_jpeg_handle handle);
/// Decodes a JPEG frame to gray into `out` (row stride `width`), optionally at 1/`scale_denominator`
/// (1 or 2). Writes the decoded size. Returns 0, or -1 (corrupt frame, or larger than `capacity`).
int32_t sg_jpeg_decode_frame(sg_jpeg_handle handle, const uint8_t *data, size_t size,
                             int32_t scale_denominator, uint8_t *out, size_t capacity,
                             int32_t *width, int32_t *height);
/// The most of the arena one frame used, requests the arena could not hold (served by the
/// library's allocator instead), and warnings (corrupt data still decoded).
void sg_jpeg_statistics(sg_jpeg_handle handle, size_t *arena_high_water, uint64_t *overflows,
                        uint64_t *warnings);
