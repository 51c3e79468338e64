#include "scangate_sheet.h"

#include <cairo/cairo-pdf.h>
#include <cairo/cairo.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The page, in millimetres: A4 portrait, and where its parts go.
#define PAGE_W_MM 210.0
#define PAGE_H_MM 297.0
#define MARGIN_MM 18.0
#define TOP_MM 14.0
#define TEXT_BOTTOM_MM 279.0  // the text stays above the footer
#define FOOTER_MM 288.0
#define QUIET_MODULES 4       // ISO/IEC 18004's quiet zone
#define CODE_MIN_MM 60.0      // the code with its quiet zone, never narrower
#define PNG_DPI 150.0
#define PT_MM (25.4 / 72.0)   // one typographic point in millimetres
#define STRING_MAX 512        // the longest string measured (the caller allows 200 bytes)
#define COUNT_MAX 32
#define SIDE_MAX 177          // QR version 40

typedef struct sink {
  uint8_t *data;
  size_t size, capacity;
  int too_large;
} sink;

static cairo_status_t sink_write(void *closure, const unsigned char *bytes, unsigned int length) {
  sink *s = closure;
  if (s->size + length > SG_SHEET_BYTES_MAX) {
    s->too_large = 1;
    return CAIRO_STATUS_WRITE_ERROR;
  }
  if (s->size + length > s->capacity) {
    size_t capacity = s->capacity ? s->capacity : 65536;
    while (capacity < s->size + length) capacity *= 2;
    uint8_t *grown = realloc(s->data, capacity);
    if (grown == NULL) return CAIRO_STATUS_WRITE_ERROR;
    s->data = grown;
    s->capacity = capacity;
  }
  memcpy(s->data + s->size, bytes, length);
  s->size += length;
  return CAIRO_STATUS_SUCCESS;
}

/// Lays the text out (and draws it when `draw`): `k` device units per millimetre, `y` the top
/// of the next line in device units.
typedef struct layout {
  cairo_t *cr;
  double k, y;
  int draw;
} layout;

static void use_font(layout *l, double points, int bold) {
  cairo_select_font_face(l->cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(l->cr, points * PT_MM * l->k);
}

static double width_of(cairo_t *cr, const char *s, size_t n) {
  char buffer[STRING_MAX + 1];
  memcpy(buffer, s, n);
  buffer[n] = 0;
  cairo_text_extents_t e;
  cairo_text_extents(cr, buffer, &e);
  return e.x_advance;
}

/// The end of the UTF-8 character starting at `i`.
static size_t next_char(const char *s, size_t i, size_t n) {
  i++;
  while (i < n && ((unsigned char)s[i] & 0xC0) == 0x80) i++;
  return i;
}

/// One line of text at `x`, `points` high; the layout moves down by its line height.
static void emit(layout *l, const char *s, size_t n, double x, double points) {
  double size = points * PT_MM * l->k;
  if (l->draw) {
    char buffer[STRING_MAX + 1];
    memcpy(buffer, s, n);
    buffer[n] = 0;
    cairo_move_to(l->cr, x, l->y + size);
    cairo_show_text(l->cr, buffer);
  }
  l->y += size * 1.3;
}

/// `s` wrapped at spaces to `width` (a word wider than that is broken between characters).
static void wrap(layout *l, const char *s, double x, double width, double points) {
  size_t n = strlen(s), start = 0;
  while (start < n) {
    while (start < n && s[start] == ' ') start++;
    if (start >= n) break;
    size_t end = start, i = start;
    while (i < n) {
      size_t j = i;
      while (j < n && s[j] == ' ') j++;
      while (j < n && s[j] != ' ') j++;
      if (width_of(l->cr, s + start, j - start) > width) break;
      end = i = j;
    }
    if (end == start) {
      end = next_char(s, start, n);
      while (end < n && s[end] != ' ') {
        size_t e = next_char(s, end, n);
        if (width_of(l->cr, s + start, e - start) > width) break;
        end = e;
      }
    }
    emit(l, s + start, end - start, x, points);
    start = end;
  }
}

typedef struct page_text {
  const char *title, *holder, *footer;
  const char *const *lines, *const *instructions;
  int32_t line_count, instruction_count;
} page_text;

/// The text below the code from `top` (device units), in `points` type; returns where it ends.
static double lay_text(layout *l, const page_text *t, double top, double points) {
  double x = MARGIN_MM * l->k, width = (PAGE_W_MM - 2 * MARGIN_MM) * l->k, gap = points * 0.8 * PT_MM * l->k;
  l->y = top;
  cairo_set_source_rgb(l->cr, 0, 0, 0);
  use_font(l, points * 2, 1);
  wrap(l, t->title, x, width, points * 2);
  use_font(l, points * 1.5, 0);
  wrap(l, t->holder, x, width, points * 1.5);
  l->y += gap;
  use_font(l, points, 0);
  for (int32_t i = 0; i < t->line_count; i++) wrap(l, t->lines[i], x, width, points);
  if (t->instruction_count > 0) l->y += gap;
  double indent = 5 * l->k;
  for (int32_t i = 0; i < t->instruction_count; i++) {
    if (t->instructions[i][0] == 0) continue;
    if (l->draw) {
      cairo_move_to(l->cr, x, l->y + points * PT_MM * l->k);
      cairo_show_text(l->cr, "\xE2\x80\xA2");  // •
    }
    wrap(l, t->instructions[i], x + indent, width - indent, points);
  }
  return l->y;
}

/// The code: one path of filled rectangles (a run of dark modules in a row is one rectangle, so
/// a PDF viewer shows no seams), each module `module` device units, its corner at (x, y).
static void draw_code(cairo_t *cr, const uint8_t *modules, int32_t side, double x, double y, double module) {
  for (int32_t row = 0; row < side; row++) {
    int32_t column = 0;
    while (column < side) {
      if (modules[row * side + column] >= 128) {
        column++;
        continue;
      }
      int32_t run = column;
      while (run < side && modules[row * side + run] < 128) run++;
      cairo_rectangle(cr, x + column * module, y + row * module, (run - column) * module, module);
      column = run;
    }
  }
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_set_antialias(cr, CAIRO_ANTIALIAS_NONE);
  cairo_fill(cr);
  cairo_set_antialias(cr, CAIRO_ANTIALIAS_DEFAULT);
}

/// The whole page: returns 0, or SG_SHEET_NO_ROOM.
static int32_t draw_page(cairo_t *cr, double k, int pixels, const uint8_t *modules, int32_t side, const page_text *t) {
  static const struct { double code_mm, smallest_points; } tries[] = {{100, 8}, {80, 7}, {CODE_MIN_MM + 5, 5}};
  layout l = {cr, k, 0, 0};
  int32_t total = side + 2 * QUIET_MODULES;
  for (size_t attempt = 0; attempt < sizeof tries / sizeof tries[0]; attempt++) {
    double module = tries[attempt].code_mm * k / total;
    if (pixels) {
      // Whole pixels per module (sharp edges), and never below the smallest width.
      module = fmax(floor(module), ceil(CODE_MIN_MM * k / total));
    }
    double code = module * total, x = (PAGE_W_MM * k - code) / 2, y = TOP_MM * k;
    if (pixels) x = floor(x);
    double text_top = y + code - QUIET_MODULES * module + 6 * k;
    for (double points = 12; points >= tries[attempt].smallest_points; points -= 0.5) {
      l.draw = 0;
      if (lay_text(&l, t, text_top, points) > TEXT_BOTTOM_MM * k) continue;
      cairo_set_source_rgb(cr, 1, 1, 1);
      cairo_paint(cr);
      draw_code(cr, modules, side, x + QUIET_MODULES * module, y + QUIET_MODULES * module, module);
      l.draw = 1;
      lay_text(&l, t, text_top, points);
      cairo_set_source_rgb(cr, 0.35, 0.35, 0.35);
      use_font(&l, 9, 0);
      double w = width_of(cr, t->footer, strlen(t->footer));
      cairo_move_to(cr, (PAGE_W_MM * k - w) / 2, FOOTER_MM * k);
      cairo_show_text(cr, t->footer);
      return 0;
    }
  }
  return SG_SHEET_NO_ROOM;
}

static int strings_ok(const char *const *s, int32_t count) {
  if (count < 0 || count > COUNT_MAX || (count > 0 && s == NULL)) return 0;
  for (int32_t i = 0; i < count; i++) {
    if (s[i] == NULL || strlen(s[i]) > STRING_MAX) return 0;
  }
  return 1;
}

static uint8_t *fail(int32_t code, int32_t *why, char *error, size_t capacity, const char *message) {
  *why = code;
  if (error && capacity) snprintf(error, capacity, "%s", message);
  return NULL;
}

uint8_t *sg_sheet_render(int32_t format, const uint8_t *modules, int32_t side, const char *title, const char *holder,
                         const char *const *lines, int32_t line_count, const char *const *instructions,
                         int32_t instruction_count, const char *footer, size_t *size, int32_t *why, char *error,
                         size_t error_capacity) {
  const char *one[3] = {title, holder, footer};
  if ((format != SG_SHEET_PDF && format != SG_SHEET_PNG) || modules == NULL || side < 21 || side > SIDE_MAX ||
      !strings_ok(one, 3) || !strings_ok(lines, line_count) || !strings_ok(instructions, instruction_count)) {
    return fail(SG_SHEET_BAD_INPUT, why, error, error_capacity, "bad arguments");
  }
  page_text text = {title, holder, footer, lines, instructions, line_count, instruction_count};
  sink out = {NULL, 0, 0, 0};
  cairo_surface_t *surface;
  double k;
  if (format == SG_SHEET_PDF) {
    k = 72.0 / 25.4;  // points
    surface = cairo_pdf_surface_create_for_stream(sink_write, &out, PAGE_W_MM * k, PAGE_H_MM * k);
    cairo_pdf_surface_set_metadata(surface, CAIRO_PDF_METADATA_TITLE, title);
    cairo_pdf_surface_set_metadata(surface, CAIRO_PDF_METADATA_CREATOR, footer);
  } else {
    k = PNG_DPI / 25.4;  // pixels
    surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)lround(PAGE_W_MM * k), (int)lround(PAGE_H_MM * k));
  }
  cairo_t *cr = cairo_create(surface);
  int32_t drawn = draw_page(cr, k, format == SG_SHEET_PNG, modules, side, &text);
  cairo_status_t status = cairo_status(cr);
  cairo_destroy(cr);
  if (drawn == 0 && status == CAIRO_STATUS_SUCCESS) {
    if (format == SG_SHEET_PDF) {
      cairo_surface_finish(surface);
      status = cairo_surface_status(surface);
    } else {
      cairo_surface_flush(surface);
      status = cairo_surface_write_to_png_stream(surface, sink_write, &out);
    }
  }
  cairo_surface_destroy(surface);
  if (drawn != 0 || status != CAIRO_STATUS_SUCCESS) {
    free(out.data);
    if (drawn != 0) return fail(drawn, why, error, error_capacity, "the text does not fit the page");
    if (out.too_large) return fail(SG_SHEET_TOO_LARGE, why, error, error_capacity, "the page is too large");
    return fail(SG_SHEET_CAIRO, why, error, error_capacity, cairo_status_to_string(status));
  }
  *size = out.size;
  *why = 0;
  return out.data;
}

void sg_sheet_free(void *p) { free(p); }
