// config.toml through toml++ (a full TOML 1.0 parser), flattened for Swift: every value with
// its dotted key, type and source line. No C++ exception leaves the shim.
#ifndef SCANGATE_TOML_H
#define SCANGATE_TOML_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { SG_TOML_STRING = 1, SG_TOML_INTEGER = 2, SG_TOML_FLOAT = 3, SG_TOML_BOOLEAN = 4,
       SG_TOML_OTHER = 5 };

typedef struct sg_toml_entry {
  const char *key;    ///< dotted path, e.g. "camera.width"
  int32_t index;      ///< position in an array, or -1 for a plain value
  int32_t type;       ///< SG_TOML_*
  const char *text;   ///< string value (SG_TOML_STRING), or the value as TOML text otherwise
  int64_t integer;
  double real;
  int32_t boolean;
  uint32_t line;
  uint32_t column;
} sg_toml_entry;

typedef struct sg_toml_document sg_toml_document;

/// Parses TOML text. On failure returns NULL and fills `error`, `error_line`, `error_column`.
sg_toml_document *sg_toml_parse(const char *text, size_t size, char *error, size_t error_capacity,
                                uint32_t *error_line, uint32_t *error_column);
size_t sg_toml_count(const sg_toml_document *document);
const sg_toml_entry *sg_toml_entry_at(const sg_toml_document *document, size_t index);
void sg_toml_free(sg_toml_document *document);

#ifdef __cplusplus
}
#endif
#endif
