// ScanGate's C interface to the barcode engine.
//
// Swift sees only this header. Behind it sits Debian's zxing-cpp (1.4 on bookworm through C++;
// a 2.x backend can implement the same functions). Nothing here throws, aborts on bad input or
// hands out memory: results are written into caller-owned fixed storage.
#ifndef SCANGATE_ZXING_H
#define SCANGATE_ZXING_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Barcode formats, as ScanGate numbers them (stable; independent of the engine's numbering).
enum {
  SG_FORMAT_QR_CODE = 1u << 0,
  SG_FORMAT_MICRO_QR_CODE = 1u << 1,
  SG_FORMAT_DATA_MATRIX = 1u << 2,
  SG_FORMAT_AZTEC = 1u << 3,
  SG_FORMAT_PDF417 = 1u << 4,
  SG_FORMAT_EAN8 = 1u << 5,
  SG_FORMAT_EAN13 = 1u << 6,
  SG_FORMAT_UPCA = 1u << 7,
  SG_FORMAT_UPCE = 1u << 8,
  SG_FORMAT_CODE39 = 1u << 9,
  SG_FORMAT_CODE93 = 1u << 10,
  SG_FORMAT_CODE128 = 1u << 11,
  SG_FORMAT_CODABAR = 1u << 12,
  SG_FORMAT_ITF = 1u << 13,
};

/// Content type as the engine classifies the payload bytes.
enum { SG_CONTENT_TEXT = 0, SG_CONTENT_BINARY = 1, SG_CONTENT_MIXED = 2, SG_CONTENT_GS1 = 3,
       SG_CONTENT_ISO15434 = 4, SG_CONTENT_UNKNOWN_ECI = 5 };

/// One decoded symbol. `bytes` points into caller storage of `bytes_capacity`.
typedef struct sg_zx_result {
  uint32_t format;          ///< one SG_FORMAT_* bit
  uint32_t content_type;    ///< SG_CONTENT_*
  int32_t corners[8];       ///< x0 y0 x1 y1 x2 y2 x3 y3: top-left, top-right, bottom-right, bottom-left
  int32_t orientation;      ///< degrees, as the engine reports it
  uint8_t mirrored;         ///< the symbol was read mirrored
  uint8_t truncated;        ///< the payload was longer than bytes_capacity (bytes_count is clipped)
  uint32_t bytes_count;     ///< valid bytes written to `bytes`
  uint32_t bytes_total;     ///< the payload's real length
  uint8_t *bytes;           ///< caller storage
  uint32_t bytes_capacity;  ///< size of `bytes`
  char *text;               ///< caller storage: the payload as UTF-8 text (character sets applied)
  uint32_t text_capacity;   ///< size of `text`
  uint32_t text_count;      ///< valid bytes written to `text` (clipped at a character boundary)
} sg_zx_result;

/// The engine's view of a borrowed 8-bit luma plane. Strides may be negative (mirrored views).
typedef struct sg_zx_image {
  const uint8_t *origin;    ///< address of pixel (0, 0)
  int32_t width, height;
  int32_t row_stride;       ///< bytes from one row to the next
  int32_t pixel_stride;     ///< bytes from one pixel to the next (2 for YUYV luma)
} sg_zx_image;

typedef struct sg_zx_decoder sg_zx_decoder;

/// Arena and engine counters, for STATUS and the benchmarks.
typedef struct sg_zx_stats {
  uint64_t decodes;
  uint64_t arena_allocations;   ///< C++ allocations served from the arena
  uint64_t arena_overflows;     ///< C++ allocations that did not fit and went to malloc
  uint64_t arena_high_water;    ///< most arena bytes one decode used
  uint64_t arena_pinned;        ///< bytes kept for engine objects that outlive a decode (lazy statics)
  uint64_t arena_capacity;
  uint64_t engine_errors;       ///< calls that ended in a caught C++ exception
} sg_zx_stats;

/// Creates a decoder with an allocation arena of `arena_bytes` (0: no arena, engine uses malloc).
/// Returns NULL when memory cannot be had.
sg_zx_decoder *sg_zx_create(size_t arena_bytes);
void sg_zx_destroy(sg_zx_decoder *decoder);

/// Decodes `image`, writing at most `capacity` results. `formats` is a set of SG_FORMAT_* bits;
/// `try_harder` trades time for accuracy. Returns the number of results (>= 0), or -1 when the
/// engine failed (an exception was caught; nothing was written).
///
/// Matrix formats are read with the engine's multi-symbol call; linear formats with its
/// single-symbol call, which never reaches the assertion that aborts zxing-cpp 1.4's
/// multi-symbol merge of linear results (see docs/decoder.md).
int32_t sg_zx_decode(sg_zx_decoder *decoder, sg_zx_image image, uint32_t formats,
                     int32_t try_harder, sg_zx_result *results, int32_t capacity);

/// How the engine turns gray into black and white (zxing-cpp's `Binarizer`, the same four in
/// 1.4 and 2.x).
enum { SG_BINARIZER_LOCAL_AVERAGE = 0, SG_BINARIZER_GLOBAL_HISTOGRAM = 1, SG_BINARIZER_FIXED_THRESHOLD = 2,
       SG_BINARIZER_BOOL_CAST = 3 };

/// One decode attempt's engine options.
typedef struct sg_zx_options {
  int32_t binarizer;        ///< SG_BINARIZER_*
  uint8_t try_harder;       ///< trade time for accuracy (also tries rotated linear codes)
  uint8_t try_downscale;    ///< let the engine add its own downscaled layers (large images)
  uint8_t try_invert;       ///< let the engine also read light-on-dark (2.x only; ignored on 1.4)
  uint8_t reserved;
} sg_zx_options;

/// `sg_zx_decode` with explicit options. Every located symbol is written, also two carrying the
/// same payload at different places (the engine merges only results at the same position).
int32_t sg_zx_decode_with(sg_zx_decoder *decoder, sg_zx_image image, uint32_t formats,
                          sg_zx_options options, sg_zx_result *results, int32_t capacity);

void sg_zx_get_stats(const sg_zx_decoder *decoder, sg_zx_stats *out);

/// The engine's version as "major.minor.patch".
const char *sg_zx_engine_version(void);
/// 1 when the engine reads light-on-dark (inverted) codes by itself (zxing-cpp 2.x), else 0.
int32_t sg_zx_engine_reads_inverted(void);

#ifdef __cplusplus
}
#endif
#endif
