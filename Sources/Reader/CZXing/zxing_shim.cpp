// The zxing-cpp backend of scangate_zxing.h, for Debian 12's 1.4 (bookworm) and Debian 13's 2.3
// (trixie), chosen by the library's own version header at compile time. Every C++ exception is
// caught here: none may cross into Swift.
#define ZX_USE_UTF8 1
#include "scangate_zxing.h"

#include "arena.h"

#if __has_include(<ZXing/Version.h>)
#include <ZXing/Version.h>
#else
#include <ZXing/ZXVersion.h>
#endif
#include <ReadBarcode.h>

#include <cstring>
#include <new>

using namespace ZXing;

#if ZXING_VERSION_MAJOR >= 2
using EngineOptions = ReaderOptions;
using EngineResult = Barcode;
using EngineResults = Barcodes;
#else
using EngineOptions = DecodeHints;
using EngineResult = Result;
using EngineResults = Results;
#endif

struct sg_zx_decoder {
  scangate::Arena arena;
  uint64_t decodes = 0;
  uint64_t engine_errors = 0;
};

namespace {

struct FormatPair {
  uint32_t ours;
  BarcodeFormat theirs;
};

constexpr FormatPair kFormats[] = {
    {SG_FORMAT_QR_CODE, BarcodeFormat::QRCode},   {SG_FORMAT_MICRO_QR_CODE, BarcodeFormat::MicroQRCode},
    {SG_FORMAT_DATA_MATRIX, BarcodeFormat::DataMatrix}, {SG_FORMAT_AZTEC, BarcodeFormat::Aztec},
    {SG_FORMAT_PDF417, BarcodeFormat::PDF417},   {SG_FORMAT_EAN8, BarcodeFormat::EAN8},
    {SG_FORMAT_EAN13, BarcodeFormat::EAN13},     {SG_FORMAT_UPCA, BarcodeFormat::UPCA},
    {SG_FORMAT_UPCE, BarcodeFormat::UPCE},       {SG_FORMAT_CODE39, BarcodeFormat::Code39},
    {SG_FORMAT_CODE93, BarcodeFormat::Code93},   {SG_FORMAT_CODE128, BarcodeFormat::Code128},
    {SG_FORMAT_CODABAR, BarcodeFormat::Codabar}, {SG_FORMAT_ITF, BarcodeFormat::ITF},
};

constexpr uint32_t kMatrixFormats = SG_FORMAT_QR_CODE | SG_FORMAT_MICRO_QR_CODE |
                                    SG_FORMAT_DATA_MATRIX | SG_FORMAT_AZTEC | SG_FORMAT_PDF417;

BarcodeFormats to_engine(uint32_t formats) {
  BarcodeFormats out;
  for (const auto &pair : kFormats)
    if (formats & pair.ours) out |= pair.theirs;
  return out;
}

uint32_t from_engine(BarcodeFormat format) {
  for (const auto &pair : kFormats)
    if (pair.theirs == format) return pair.ours;
  return 0;
}

uint32_t content_of(ContentType type) {
  switch (type) {
  case ContentType::Text: return SG_CONTENT_TEXT;
  case ContentType::Binary: return SG_CONTENT_BINARY;
  case ContentType::Mixed: return SG_CONTENT_MIXED;
  case ContentType::GS1: return SG_CONTENT_GS1;
  case ContentType::ISO15434: return SG_CONTENT_ISO15434;
  default: return SG_CONTENT_UNKNOWN_ECI;
  }
}

/// Codabar's start/stop characters: zxing-cpp 2.x returns them, 1.4 does not. ScanGate strips
/// them on 2.x so a pass reads as the same payload on both Raspberry Pi OS generations.
size_t codabar_trim(uint32_t format, const uint8_t *data, size_t size) {
#if ZXING_VERSION_MAJOR >= 2
  auto is_guard = [](uint8_t c) { return (c >= 'A' && c <= 'D') || (c >= 'a' && c <= 'd'); };
  if (format == SG_FORMAT_CODABAR && size >= 2 && is_guard(data[0]) && is_guard(data[size - 1])) return 1;
#else
  (void)format; (void)data; (void)size;
#endif
  return 0;
}

/// Whether point (x, y) lies inside the quadrilateral of `slot` (corners in order, either turn).
bool inside(const sg_zx_result &slot, int64_t x, int64_t y) {
  int sign = 0;
  for (int i = 0; i < 4; i++) {
    int64_t x0 = slot.corners[2 * i], y0 = slot.corners[2 * i + 1];
    int64_t x1 = slot.corners[(2 * i + 2) % 8], y1 = slot.corners[(2 * i + 3) % 8];
    int64_t cross = (x1 - x0) * (y - y0) - (y1 - y0) * (x - x0);
    int s = cross > 0 ? 1 : cross < 0 ? -1 : 0;
    if (s == 0) continue;
    if (sign == 0) sign = s;
    else if (s != sign) return false;
  }
  return true;
}

/// Copies one engine result into a caller slot; false when the same symbol (same format and
/// payload, centre inside an earlier one's outline) is already there. Two codes carrying the
/// same payload at different places are both kept.
bool copy_result(const EngineResult &result, sg_zx_result *slots, int32_t count) {
  const ByteArray &raw = result.bytes();
  uint32_t format = from_engine(result.format());
  size_t trim = codabar_trim(format, raw.data(), raw.size());
  struct { const uint8_t *p; size_t n; const uint8_t *data() const { return p; } size_t size() const { return n; } }
      bytes{raw.data() + trim, raw.size() - 2 * trim};
  const Position &at = result.position();
  int64_t cx = 0, cy = 0;
  for (int corner = 0; corner < 4; corner++) { cx += at[corner].x; cy += at[corner].y; }
  cx /= 4; cy /= 4;
  for (int32_t i = 0; i < count; i++) {
    if (slots[i].format == format && slots[i].bytes_total == bytes.size() &&
        std::memcmp(slots[i].bytes, bytes.data(), slots[i].bytes_count) == 0 && inside(slots[i], cx, cy))
      return false;
  }
  sg_zx_result &slot = slots[count];
  slot.format = format;
  slot.content_type = content_of(result.contentType());
  const Position &position = result.position();
  for (int corner = 0; corner < 4; corner++) {
    slot.corners[corner * 2] = position[corner].x;
    slot.corners[corner * 2 + 1] = position[corner].y;
  }
  slot.orientation = result.orientation();
  slot.mirrored = result.isMirrored() ? 1 : 0;
  slot.bytes_total = static_cast<uint32_t>(bytes.size());
  slot.bytes_count = slot.bytes_total < slot.bytes_capacity ? slot.bytes_total : slot.bytes_capacity;
  slot.truncated = slot.bytes_count < slot.bytes_total ? 1 : 0;
  if (slot.bytes_count > 0) std::memcpy(slot.bytes, bytes.data(), slot.bytes_count);
  slot.text_count = 0;
  if (slot.text != nullptr && slot.text_capacity > 0) {
    std::string full = result.text();
    size_t cut = codabar_trim(format, reinterpret_cast<const uint8_t *>(full.data()), full.size());
    std::string text = full.substr(cut, full.size() - 2 * cut);
    size_t n = text.size() < slot.text_capacity ? text.size() : slot.text_capacity;
    while (n > 0 && n < text.size() && (static_cast<uint8_t>(text[n]) & 0xC0) == 0x80) n--;
    std::memcpy(slot.text, text.data(), n);
    slot.text_count = static_cast<uint32_t>(n);
  }
  return true;
}

/// Text as 1.4 renders it (character set applied, no human-readable GS1 or control-character
/// names): the same text on both generations.
void plain_text(EngineOptions &options) {
#if ZXING_VERSION_MAJOR >= 2
  options.setTextMode(TextMode::Plain);
#else
  (void)options;
#endif
}

Binarizer binarizer_of(int32_t binarizer) {
  switch (binarizer) {
  case SG_BINARIZER_GLOBAL_HISTOGRAM: return Binarizer::GlobalHistogram;
  case SG_BINARIZER_FIXED_THRESHOLD: return Binarizer::FixedThreshold;
  case SG_BINARIZER_BOOL_CAST: return Binarizer::BoolCast;
  default: return Binarizer::LocalAverage;
  }
}

/// The engine options of one attempt, the same on both generations.
void apply(EngineOptions &hints, uint32_t formats, const sg_zx_options &options) {
  bool try_harder = options.try_harder != 0;
  hints.setFormats(to_engine(formats)).setTryHarder(try_harder).setTryRotate(try_harder);
  hints.setTryDownscale(options.try_downscale != 0);
  hints.setBinarizer(binarizer_of(options.binarizer));
#if ZXING_VERSION_MAJOR >= 2
  hints.setTryInvert(options.try_invert != 0);
#endif
  plain_text(hints);
}

int32_t decode_inside_arena(const sg_zx_image &image, uint32_t formats, const sg_zx_options &options,
                            sg_zx_result *results, int32_t capacity) {
  ImageView view(image.origin, image.width, image.height, ImageFormat::Lum, image.row_stride,
                 image.pixel_stride);
  int32_t count = 0;
  uint32_t matrix = formats & kMatrixFormats;
  uint32_t linear = formats & ~kMatrixFormats;
  if (matrix != 0) {
    EngineOptions hints;
    apply(hints, matrix, options);
    hints.setMaxNumberOfSymbols(static_cast<uint8_t>(capacity > 255 ? 255 : capacity));
    // Matrix symbols are merged by position only: the multi-symbol call is safe for them.
    EngineResults found = ReadBarcodes(view, hints);
    for (const EngineResult &result : found) {
      if (count >= capacity) break;
      if (result.isValid() && copy_result(result, results, count)) count++;
    }
  }
  if (linear != 0 && count < capacity) {
    EngineOptions hints;
    apply(hints, linear, options);
    // One linear symbol per pass, through the single-symbol call: with at most one result per
    // pyramid layer the engine never compares two merged linear results, which is where
    // zxing-cpp 1.4's `lineCount() == 1` assertion aborts the process.
    EngineResult result = ReadBarcode(view, hints);
    if (result.isValid() && copy_result(result, results, count)) count++;
  }
  return count;
}

}  // namespace

extern "C" {

sg_zx_decoder *sg_zx_create(size_t arena_bytes) {
  auto *decoder = new (std::nothrow) sg_zx_decoder();
  if (decoder == nullptr) return nullptr;
  if (!scangate::arena_init(decoder->arena, arena_bytes)) {
    delete decoder;
    return nullptr;
  }
  return decoder;
}

void sg_zx_destroy(sg_zx_decoder *decoder) {
  if (decoder == nullptr) return;
  scangate::arena_release(decoder->arena);
  if (decoder->arena.base != nullptr) return;  // pinned statics keep the arena (and its owner) alive
  delete decoder;
}

int32_t sg_zx_decode(sg_zx_decoder *decoder, sg_zx_image image, uint32_t formats,
                     int32_t try_harder, sg_zx_result *results, int32_t capacity) {
  sg_zx_options options{};
  options.binarizer = SG_BINARIZER_LOCAL_AVERAGE;
  options.try_harder = try_harder != 0 ? 1 : 0;
  options.try_downscale = 1;
  options.try_invert = 1;
  return sg_zx_decode_with(decoder, image, formats, options, results, capacity);
}

int32_t sg_zx_decode_with(sg_zx_decoder *decoder, sg_zx_image image, uint32_t formats,
                          sg_zx_options options, sg_zx_result *results, int32_t capacity) {
  if (decoder == nullptr || results == nullptr || capacity <= 0 || image.origin == nullptr ||
      image.width <= 0 || image.height <= 0 || formats == 0)
    return 0;
  decoder->decodes++;
  int32_t count = -1;
  // A thread's first decode, and a decoder's first, run on the heap (the warm-up): whatever the
  // engine keeps per thread or per process (thread_local scratch sized to the image, lazily
  // built tables) is created there, not in the arena. Anything created later during a decode is
  // still safe: the arena pins it.
  static thread_local bool thread_warmed = false;
  if (thread_warmed && decoder->decodes > 1) scangate::arena_begin(decoder->arena);
  thread_warmed = true;
  try {
    count = decode_inside_arena(image, formats, options, results, capacity);
  } catch (...) {
    decoder->engine_errors++;
    count = -1;
  }
  scangate::arena_end(decoder->arena);
  return count;
}

void sg_zx_get_stats(const sg_zx_decoder *decoder, sg_zx_stats *out) {
  if (decoder == nullptr || out == nullptr) return;
  out->decodes = decoder->decodes;
  out->arena_allocations = decoder->arena.allocations;
  out->arena_overflows = decoder->arena.overflows;
  out->arena_high_water = decoder->arena.high_water;
  out->arena_pinned = decoder->arena.floor;
  out->arena_capacity = decoder->arena.capacity;
  out->engine_errors = decoder->engine_errors;
}

int32_t sg_zx_engine_reads_inverted(void) { return ZXING_VERSION_MAJOR >= 2 ? 1 : 0; }

const char *sg_zx_engine_version(void) {
#define SG_STR2(x) #x
#define SG_STR(x) SG_STR2(x)
  return "zxing-cpp " SG_STR(ZXING_VERSION_MAJOR) "." SG_STR(ZXING_VERSION_MINOR) "." SG_STR(
      ZXING_VERSION_PATCH);
}

}  // extern "C"
