// A pass's printable sheet: one A4 portrait page drawn with cairo, the same drawing code for a
// PDF (vector: each dark module a filled rectangle) and a PNG (150 dpi, modules on whole pixels).
#ifndef SCANGATE_SHEET_H
#define SCANGATE_SHEET_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The page's kind.
enum { SG_SHEET_PDF = 1, SG_SHEET_PNG = 2 };

/// Why sg_sheet_render returned NULL.
enum {
  SG_SHEET_BAD_INPUT = 1,  ///< an argument out of range (format, side, counts, NULL strings)
  SG_SHEET_NO_ROOM = 2,    ///< the text does not fit below the code, even in the smallest type
  SG_SHEET_CAIRO = 3,      ///< cairo failed (out of memory, no font); `error` says how
  SG_SHEET_TOO_LARGE = 4,  ///< the encoded page would exceed SG_SHEET_BYTES_MAX
};

/// The most one encoded page may take.
#define SG_SHEET_BYTES_MAX ((size_t)16 << 20)

/// Draws one page and returns it encoded (a malloc'd buffer: free it with sg_sheet_free), its
/// size in `size`; NULL with `*why` and a message in `error` otherwise.
/// `modules` is the QR symbol, `side` × `side` bytes row by row, dark where below 128 (quiet
/// zone excluded: the page keeps four light modules around it). The code is drawn at least
/// 60 mm wide, centred at the top; below it `title` (bold), `holder`, `lines` and
/// `instructions` (bulleted), each wrapped to the page's width, and `footer` at the bottom.
/// Strings are UTF-8 without control characters (the caller checks); type shrinks until the
/// text fits.
uint8_t *sg_sheet_render(int32_t format, const uint8_t *modules, int32_t side, const char *title, const char *holder,
                         const char *const *lines, int32_t line_count, const char *const *instructions,
                         int32_t instruction_count, const char *footer, size_t *size, int32_t *why, char *error,
                         size_t error_capacity);
void sg_sheet_free(void *p);

#ifdef __cplusplus
}
#endif
#endif
