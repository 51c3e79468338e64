// MJPEG frames to gray with no heap allocation per frame: libjpeg's own API (libjpeg-turbo,
// the library under libturbojpeg) with one decompress object kept for the camera's lifetime,
// whose per-image memory pool is served from a fixed arena allocated with it.
//
// libjpeg allocates everything through the memory manager in cinfo->mem. Its permanent pool
// (Huffman and quantisation tables, the source manager) is filled on the first frame and kept.
// Its image pool is allocated at every jpeg_start_decompress and released at every
// jpeg_finish_decompress or jpeg_abort: those four methods (alloc_small, alloc_large,
// alloc_sarray, alloc_barray) are redirected to a bump allocator over the arena for JPOOL_IMAGE,
// and free_pool(JPOOL_IMAGE) rewinds it. Requests the arena cannot hold, the permanent pool and
// the virtual arrays (multi-scan JPEGs only: camera MJPEG is baseline) still go to the library's
// own allocator, and overflows are counted.
#include "scangate_image.h"

#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

enum { ARENA_ALIGN = 64 };

typedef struct frame_decoder {
  struct jpeg_decompress_struct cinfo;  // first: a j_common_ptr is a frame_decoder pointer
  struct jpeg_error_mgr error;
  jmp_buf failed;
  uint8_t *arena;
  size_t arena_bytes, used, high_water;
  uint64_t overflows, warnings;
  void *(*library_alloc_small)(j_common_ptr, int, size_t);
  void *(*library_alloc_large)(j_common_ptr, int, size_t);
  JSAMPARRAY (*library_alloc_sarray)(j_common_ptr, int, JDIMENSION, JDIMENSION);
  JBLOCKARRAY (*library_alloc_barray)(j_common_ptr, int, JDIMENSION, JDIMENSION);
  void (*library_free_pool)(j_common_ptr, int);
} frame_decoder;

static void *from_arena(frame_decoder *d, size_t size) {
  size_t start = (d->used + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
  if (size > d->arena_bytes || start > d->arena_bytes - size) return NULL;
  d->used = start + size;
  if (d->used > d->high_water) d->high_water = d->used;
  return d->arena + start;
}

static void *arena_alloc_small(j_common_ptr c, int pool, size_t size) {
  frame_decoder *d = (frame_decoder *)c;
  void *p = pool == JPOOL_IMAGE ? from_arena(d, size) : NULL;
  if (p != NULL) return p;
  if (pool == JPOOL_IMAGE) d->overflows++;
  return d->library_alloc_small(c, pool, size);
}

static void *arena_alloc_large(j_common_ptr c, int pool, size_t size) {
  frame_decoder *d = (frame_decoder *)c;
  void *p = pool == JPOOL_IMAGE ? from_arena(d, size) : NULL;
  if (p != NULL) return p;
  if (pool == JPOOL_IMAGE) d->overflows++;
  return d->library_alloc_large(c, pool, size);
}

static JSAMPARRAY arena_alloc_sarray(j_common_ptr c, int pool, JDIMENSION samples, JDIMENSION rows) {
  frame_decoder *d = (frame_decoder *)c;
  if (pool == JPOOL_IMAGE) {
    size_t row = ((size_t)samples * sizeof(JSAMPLE) + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    size_t mark = d->used;
    JSAMPARRAY array = from_arena(d, (size_t)rows * sizeof(JSAMPROW));
    uint8_t *data = array != NULL ? from_arena(d, row * rows) : NULL;
    if (data != NULL) {
      for (JDIMENSION i = 0; i < rows; i++) array[i] = (JSAMPROW)(data + row * i);
      return array;
    }
    d->used = mark;
    d->overflows++;
  }
  return d->library_alloc_sarray(c, pool, samples, rows);
}

static JBLOCKARRAY arena_alloc_barray(j_common_ptr c, int pool, JDIMENSION blocks, JDIMENSION rows) {
  frame_decoder *d = (frame_decoder *)c;
  if (pool == JPOOL_IMAGE) {
    size_t row = ((size_t)blocks * sizeof(JBLOCK) + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    size_t mark = d->used;
    JBLOCKARRAY array = from_arena(d, (size_t)rows * sizeof(JBLOCKROW));
    uint8_t *data = array != NULL ? from_arena(d, row * rows) : NULL;
    if (data != NULL) {
      for (JDIMENSION i = 0; i < rows; i++) array[i] = (JBLOCKROW)(data + row * i);
      return array;
    }
    d->used = mark;
    d->overflows++;
  }
  return d->library_alloc_barray(c, pool, blocks, rows);
}

static void arena_free_pool(j_common_ptr c, int pool) {
  frame_decoder *d = (frame_decoder *)c;
  if (pool == JPOOL_IMAGE) d->used = 0;
  d->library_free_pool(c, pool);
}

static void fail(j_common_ptr c) { longjmp(((frame_decoder *)c)->failed, 1); }

// Warnings (a truncated frame, a corrupt segment) still deliver pixels; they are counted, not
// printed per frame.
static void warn(j_common_ptr c, int level) {
  if (level < 0) ((frame_decoder *)c)->warnings++;
}

sg_jpeg_handle sg_jpeg_create(size_t arena_bytes) {
  frame_decoder *d = calloc(1, sizeof *d);
  if (d == NULL) return NULL;
  d->arena_bytes = arena_bytes;
  if (posix_memalign((void **)&d->arena, ARENA_ALIGN, arena_bytes > 0 ? arena_bytes : ARENA_ALIGN) != 0) {
    free(d);
    return NULL;
  }
  d->cinfo.err = jpeg_std_error(&d->error);
  d->error.error_exit = fail;
  d->error.emit_message = warn;
  if (setjmp(d->failed)) {
    free(d->arena);
    free(d);
    return NULL;
  }
  jpeg_create_decompress(&d->cinfo);
  struct jpeg_memory_mgr *mem = d->cinfo.mem;
  d->library_alloc_small = mem->alloc_small;
  d->library_alloc_large = mem->alloc_large;
  d->library_alloc_sarray = mem->alloc_sarray;
  d->library_alloc_barray = mem->alloc_barray;
  d->library_free_pool = mem->free_pool;
  mem->alloc_small = arena_alloc_small;
  mem->alloc_large = arena_alloc_large;
  mem->alloc_sarray = arena_alloc_sarray;
  mem->alloc_barray = arena_alloc_barray;
  mem->free_pool = arena_free_pool;
  return d;
}

void sg_jpeg_destroy(sg_jpeg_handle handle) {
  frame_decoder *d = handle;
  if (d == NULL) return;
  jpeg_destroy_decompress(&d->cinfo);
  free(d->arena);
  free(d);
}

int32_t sg_jpeg_decode_frame(sg_jpeg_handle handle, const uint8_t *data, size_t size,
                             int32_t scale_denominator, uint8_t *out, size_t capacity,
                             int32_t *width, int32_t *height) {
  frame_decoder *d = handle;
  if (d == NULL || size == 0 || size > 0xffffffffu) return -1;
  if (setjmp(d->failed)) {
    jpeg_abort_decompress(&d->cinfo);
    return -1;
  }
  jpeg_mem_src(&d->cinfo, data, (unsigned long)size);
  if (jpeg_read_header(&d->cinfo, TRUE) != JPEG_HEADER_OK) {
    jpeg_abort_decompress(&d->cinfo);
    return -1;
  }
  d->cinfo.out_color_space = JCS_GRAYSCALE;
  d->cinfo.scale_num = 1;
  d->cinfo.scale_denom = scale_denominator == 2 ? 2 : 1;
  d->cinfo.dct_method = JDCT_IFAST;
  d->cinfo.do_fancy_upsampling = FALSE;
  jpeg_calc_output_dimensions(&d->cinfo);
  size_t w = d->cinfo.output_width, h = d->cinfo.output_height;
  if (w == 0 || h == 0 || w * h > capacity) {
    jpeg_abort_decompress(&d->cinfo);
    return -1;
  }
  jpeg_start_decompress(&d->cinfo);
  while (d->cinfo.output_scanline < d->cinfo.output_height) {
    JSAMPROW rows[16];
    JDIMENSION first = d->cinfo.output_scanline, count = d->cinfo.output_height - first;
    if (count > 16) count = 16;
    for (JDIMENSION i = 0; i < count; i++) rows[i] = out + (size_t)(first + i) * w;
    if (jpeg_read_scanlines(&d->cinfo, rows, count) == 0) break;
  }
  // Rewinds the image pool (the arena) without reading past the last scan line.
  jpeg_abort_decompress(&d->cinfo);
  *width = (int32_t)w;
  *height = (int32_t)h;
  return 0;
}

void sg_jpeg_statistics(sg_jpeg_handle handle, size_t *arena_high_water, uint64_t *overflows,
                        uint64_t *warnings) {
  const frame_decoder *d = handle;
  *arena_high_water = d != NULL ? d->high_water : 0;
  *overflows = d != NULL ? d->overflows : 0;
  *warnings = d != NULL ? d->warnings : 0;
}
