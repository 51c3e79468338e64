/* A finder-candidate pre-screen, as issue 28 asks to measure it (bench/prescreen.py; the
 * result is in docs/decoder.md, "A pre-screen for hostile frames"). Not product code: it exists
 * to time what such a screen costs in C, and its counts must equal bench/prescreen.py's numpy
 * model of the same steps (the bench checks that on every frame).
 *
 * One call over an 8-bit gray buffer, no allocation (the caller passes `scratch`, at least
 * (w / factor) * (h / factor) bytes, allocated once):
 *   1. downscale by `factor` (1..4) with a box filter into scratch;
 *   2. binarise by the local mean: per 8x8 block of the small view its sum, min and max; a pixel
 *      is dark when below the mean of the 3x3 blocks around its block, unless those blocks span
 *      less than MIN_RANGE grey levels (a flat region: all light);
 *   3. scan every row for five runs dark-light-dark-light-dark in the ratio 1:1:3:1:1 (zxing's
 *      tolerance: each 1-run within half a module of total/7, the centre within 1.5 modules of
 *      3 modules), and check the column through the hit's centre the same way (five runs in
 *      that ratio, between half and twice the row's size: zxing's first cross-check); a hit
 *      continuing one of the previous row's (centre within a module) is the same candidate; a
 *      new one is counted, in total and in its tile (`tile` px of the small view, a square).
 * Returns the candidates in total; *tile_max gets the most candidates in one tile, *tiles_over
 * the number of tiles holding at least `tile_threshold`. -1 when the frame is larger than the
 * fixed tables allow. */
#include <stdint.h>
#include <string.h>

#define BLOCK 8
#define MIN_RANGE 24
#define MAX_BLOCKS 128   /* small view up to 1024 px a side */
#define MAX_TILES 4096
#define MAX_HITS 512     /* hits in one row of the small view */

int prescreen(const uint8_t *img, int w, int h, int stride, int factor, int tile, int tile_threshold,
              uint8_t *scratch, int *tile_max, int *tiles_over) {
  int dw = w / factor, dh = h / factor;
  int bw = (dw + BLOCK - 1) / BLOCK, bh = (dh + BLOCK - 1) / BLOCK;
  int tw = (dw + tile - 1) / tile, th = (dh + tile - 1) / tile;
  if (factor < 1 || factor > 4 || bw > MAX_BLOCKS || bh > MAX_BLOCKS || tw * th > MAX_TILES) return -1;

  /* 1. the small view */
  int area = factor * factor;
  for (int y = 0; y < dh; y++) {
    uint8_t *out = scratch + y * dw;
    if (factor == 1) { memcpy(out, img + y * stride, dw); continue; }
    for (int x = 0; x < dw; x++) {
      int s = 0;
      const uint8_t *p = img + (y * factor) * stride + x * factor;
      for (int j = 0; j < factor; j++, p += stride)
        for (int i = 0; i < factor; i++) s += p[i];
      out[x] = (uint8_t)(s / area);
    }
  }

  /* 2. block statistics, then a threshold per block (-1: flat) */
  int32_t sum[MAX_BLOCKS][MAX_BLOCKS];
  int16_t cnt[MAX_BLOCKS][MAX_BLOCKS];
  uint8_t mn[MAX_BLOCKS][MAX_BLOCKS], mx[MAX_BLOCKS][MAX_BLOCKS];
  int16_t thr[MAX_BLOCKS][MAX_BLOCKS];
  for (int by = 0; by < bh; by++)
    for (int bx = 0; bx < bw; bx++) {
      int s = 0, n = 0, lo = 255, hi = 0;
      for (int y = by * BLOCK; y < by * BLOCK + BLOCK && y < dh; y++)
        for (int x = bx * BLOCK; x < bx * BLOCK + BLOCK && x < dw; x++) {
          int v = scratch[y * dw + x];
          s += v; n++;
          if (v < lo) lo = v;
          if (v > hi) hi = v;
        }
      sum[by][bx] = s; cnt[by][bx] = (int16_t)n; mn[by][bx] = (uint8_t)lo; mx[by][bx] = (uint8_t)hi;
    }
  for (int by = 0; by < bh; by++)
    for (int bx = 0; bx < bw; bx++) {
      int s = 0, n = 0, lo = 255, hi = 0;
      for (int j = by - 1; j <= by + 1; j++)
        for (int i = bx - 1; i <= bx + 1; i++) {
          if (j < 0 || j >= bh || i < 0 || i >= bw) continue;
          s += sum[j][i]; n += cnt[j][i];
          if (mn[j][i] < lo) lo = mn[j][i];
          if (mx[j][i] > hi) hi = mx[j][i];
        }
      thr[by][bx] = (int16_t)(hi - lo < MIN_RANGE ? -1 : s / n);
    }

  /* 3. rows, each hit checked across (the column through its centre) */
#define DARK(x, y) (thr[(y) / BLOCK][(x) / BLOCK] >= 0 && scratch[(y) * dw + (x)] < thr[(y) / BLOCK][(x) / BLOCK])
  int32_t tiles[MAX_TILES];
  for (int t = 0; t < tw * th; t++) tiles[t] = 0;
  int prev_c[MAX_HITS], prev_m[MAX_HITS], cur_c[MAX_HITS], cur_m[MAX_HITS];
  int n_prev = 0, total = 0;
  for (int y = 0; y < dh; y++) {
    const uint8_t *row = scratch + y * dw;
    const int16_t *trow = thr[y / BLOCK];
    int n_cur = 0;
    int run[5] = {0, 0, 0, 0, 0};  /* the last five completed runs, oldest first */
    int runs = 0, len = 0, start = 0, starts[5] = {0, 0, 0, 0, 0};
    int dark = -1;
    for (int x = 0; x <= dw; x++) {
      int d;
      if (x < dw) {
        int t = trow[x / BLOCK];
        d = t >= 0 && row[x] < t;
        if (x == 0) { dark = d; len = 1; start = 0; continue; }
        if (d == dark) { len++; continue; }
      } else {
        d = !dark;
      }
      /* the run that ended at x - 1 */
      for (int k = 0; k < 4; k++) { run[k] = run[k + 1]; starts[k] = starts[k + 1]; }
      run[4] = len; starts[4] = start;
      runs++;
      if (runs >= 5 && dark) {  /* dark, light, dark, light, dark */
        int total7 = run[0] + run[1] + run[2] + run[3] + run[4];
        int ok = total7 >= 7;
        for (int k = 0; k < 5 && ok; k++) {
          int e = 14 * run[k] - (k == 2 ? 6 : 2) * total7;   /* 14 * (run - expected) */
          if (e < 0) e = -e;
          ok = e < (k == 2 ? 3 : 1) * total7;                 /* < 14 * tolerance */
        }
        int c = starts[2] + run[2] / 2;
        if (ok) {
          /* the column through the centre: the same five runs, of a similar size */
          int v[5] = {0, 0, 0, 0, 0}, lim = 2 * total7, yy = y;
          while (yy >= 0 && DARK(c, yy) && v[2] <= lim) { v[2]++; yy--; }
          while (yy >= 0 && !DARK(c, yy) && v[1] <= lim) { v[1]++; yy--; }
          while (yy >= 0 && DARK(c, yy) && v[0] <= lim) { v[0]++; yy--; }
          yy = y + 1;
          while (yy < dh && DARK(c, yy) && v[2] <= lim) { v[2]++; yy++; }
          while (yy < dh && !DARK(c, yy) && v[3] <= lim) { v[3]++; yy++; }
          while (yy < dh && DARK(c, yy) && v[4] <= lim) { v[4]++; yy++; }
          int tv = v[0] + v[1] + v[2] + v[3] + v[4];
          ok = 2 * tv >= total7 && tv <= 2 * total7;
          for (int k = 0; k < 5 && ok; k++) {
            int e = 14 * v[k] - (k == 2 ? 6 : 2) * tv;
            if (e < 0) e = -e;
            ok = v[k] > 0 && e < (k == 2 ? 3 : 1) * tv;
          }
        }
        if (ok) {
          int m = (total7 + 6) / 7;
          int same = 0;
          for (int k = 0; k < n_prev && !same; k++) {
            int dc = prev_c[k] - c;
            if (dc < 0) dc = -dc;
            same = dc <= m && dc <= prev_m[k];
          }
          if (n_cur < MAX_HITS) { cur_c[n_cur] = c; cur_m[n_cur] = m; n_cur++; }
          if (!same) {
            total++;
            tiles[(y / tile) * tw + c / tile]++;
          }
        }
      }
      dark = d; len = 1; start = x;
    }
    memcpy(prev_c, cur_c, n_cur * sizeof(int));
    memcpy(prev_m, cur_m, n_cur * sizeof(int));
    n_prev = n_cur;
  }
  int best = 0, over = 0;
  for (int t = 0; t < tw * th; t++) {
    if (tiles[t] > best) best = tiles[t];
    if (tiles[t] >= tile_threshold) over++;
  }
  *tile_max = best;
  *tiles_over = over;
  return total;
}
