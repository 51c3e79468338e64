#define _DEFAULT_SOURCE
#include "scangate_credential.h"

#include <cbor.h>
#include <nettle/hmac.h>
#include <sodium.h>
#include <string.h>
#include <sys/timex.h>

static void on_uint8(void *c, uint8_t v) { ((sg_cbor_item *)c)->type = SG_CBOR_UINT; ((sg_cbor_item *)c)->argument = v; }
static void on_uint16(void *c, uint16_t v) { ((sg_cbor_item *)c)->type = SG_CBOR_UINT; ((sg_cbor_item *)c)->argument = v; }
static void on_uint32(void *c, uint32_t v) { ((sg_cbor_item *)c)->type = SG_CBOR_UINT; ((sg_cbor_item *)c)->argument = v; }
static void on_uint64(void *c, uint64_t v) { ((sg_cbor_item *)c)->type = SG_CBOR_UINT; ((sg_cbor_item *)c)->argument = v; }
static void on_negint8(void *c, uint8_t v) { ((sg_cbor_item *)c)->type = SG_CBOR_NEGINT; ((sg_cbor_item *)c)->argument = v; }
static void on_negint16(void *c, uint16_t v) { ((sg_cbor_item *)c)->type = SG_CBOR_NEGINT; ((sg_cbor_item *)c)->argument = v; }
static void on_negint32(void *c, uint32_t v) { ((sg_cbor_item *)c)->type = SG_CBOR_NEGINT; ((sg_cbor_item *)c)->argument = v; }
static void on_negint64(void *c, uint64_t v) { ((sg_cbor_item *)c)->type = SG_CBOR_NEGINT; ((sg_cbor_item *)c)->argument = v; }
static void on_bytes(void *c, cbor_data d, uint64_t n) {
  sg_cbor_item *i = c; i->type = SG_CBOR_BYTES; i->bytes = d; i->length = (size_t)n; i->argument = n;
}
static void on_text(void *c, cbor_data d, uint64_t n) {
  sg_cbor_item *i = c; i->type = SG_CBOR_TEXT; i->bytes = d; i->length = (size_t)n; i->argument = n;
}
static void on_array(void *c, uint64_t n) { ((sg_cbor_item *)c)->type = SG_CBOR_ARRAY; ((sg_cbor_item *)c)->argument = n; }
static void on_map(void *c, uint64_t n) { ((sg_cbor_item *)c)->type = SG_CBOR_MAP; ((sg_cbor_item *)c)->argument = n; }
static void on_tag(void *c, uint64_t n) { ((sg_cbor_item *)c)->type = SG_CBOR_TAG; ((sg_cbor_item *)c)->argument = n; }
static void on_bool(void *c, bool v) { ((sg_cbor_item *)c)->type = v ? SG_CBOR_TRUE : SG_CBOR_FALSE; }
static void on_null(void *c) { ((sg_cbor_item *)c)->type = SG_CBOR_NULL; }

size_t sg_cbor_next(const uint8_t *buffer, size_t size, sg_cbor_item *item) {
  if (buffer == NULL || size == 0 || item == NULL) return 0;
  struct cbor_callbacks callbacks = cbor_empty_callbacks;
  callbacks.uint8 = on_uint8;
  callbacks.uint16 = on_uint16;
  callbacks.uint32 = on_uint32;
  callbacks.uint64 = on_uint64;
  callbacks.negint8 = on_negint8;
  callbacks.negint16 = on_negint16;
  callbacks.negint32 = on_negint32;
  callbacks.negint64 = on_negint64;
  callbacks.byte_string = on_bytes;
  callbacks.string = on_text;
  callbacks.array_start = on_array;
  callbacks.map_start = on_map;
  callbacks.tag = on_tag;
  callbacks.boolean = on_bool;
  callbacks.null = on_null;
  // Everything else (floats, undefined, indefinite starts, breaks) leaves the type at OTHER.
  item->type = SG_CBOR_OTHER;
  item->argument = 0;
  item->bytes = NULL;
  item->length = 0;
  // libcbor 0.8 (Debian 12) refuses the one-byte heads of tags 6–20 (0xc6–0xd4) in its
  // streaming decoder as unassigned; COSE_Sign1's tag 18 is one of them (0xd2). Only that head is
  // taken here; every other byte goes to libcbor.
  if (buffer[0] == 0xd2) {
    item->type = SG_CBOR_TAG;
    item->argument = 18;
    item->bytes = NULL;
    item->length = 0;
    return 1;
  }
  struct cbor_decoder_result result = cbor_stream_decode(buffer, size, &callbacks, item);
  if (result.status != CBOR_DECODER_FINISHED || result.read == 0 || result.read > size) return 0;
  return result.read;
}

size_t sg_cbor_head(int32_t major, uint64_t argument, uint8_t *buffer, size_t size) {
  switch (major) {
  case 0: return cbor_encode_uint(argument, buffer, size);
  case 1: return cbor_encode_negint(argument, buffer, size);
  case 2: return cbor_encode_bytestring_start(argument, buffer, size);
  case 3: return cbor_encode_string_start(argument, buffer, size);
  case 4: return cbor_encode_array_start(argument, buffer, size);
  case 5: return cbor_encode_map_start(argument, buffer, size);
  case 6: return cbor_encode_tag(argument, buffer, size);
  default: return 0;
  }
}

void sg_hmac_sha1(const uint8_t *key, size_t key_length, const uint8_t *message, size_t message_length,
                  uint8_t out[20]) {
  struct hmac_sha1_ctx ctx;
  hmac_sha1_set_key(&ctx, key_length, key);
  hmac_sha1_update(&ctx, message_length, message);
  hmac_sha1_digest(&ctx, SHA1_DIGEST_SIZE, out);
  explicit_bzero(&ctx, sizeof ctx);
}

int sg_credential_crypto_init(void) { return sodium_init() < 0 ? -1 : 0; }

int sg_ed25519_from_seed(const uint8_t seed[32], uint8_t public_key[32], uint8_t secret_key[64]) {
  return crypto_sign_seed_keypair(public_key, secret_key, seed);
}

int sg_ed25519_sign(uint8_t signature[64], const uint8_t *message, size_t length, const uint8_t secret_key[64]) {
  return crypto_sign_detached(signature, NULL, message, length, secret_key);
}

int sg_ed25519_verify(const uint8_t signature[64], const uint8_t *message, size_t length, const uint8_t public_key[32]) {
  return crypto_sign_verify_detached(signature, message, length, public_key);
}

int sg_x25519_public(const uint8_t secret_key[32], uint8_t public_key[32]) {
  return crypto_scalarmult_base(public_key, secret_key);
}

int sg_seal(uint8_t *out, const uint8_t *message, size_t length, const uint8_t public_key[32]) {
  return crypto_box_seal(out, message, length, public_key);
}

int sg_seal_open(uint8_t *out, const uint8_t *sealed, size_t length, const uint8_t public_key[32],
                 const uint8_t secret_key[32]) {
  if (length < crypto_box_SEALBYTES) return -1;
  return crypto_box_seal_open(out, sealed, length, public_key, secret_key);
}

void sg_random(uint8_t *out, size_t length) { randombytes_buf(out, length); }

void sg_wipe(void *buffer, size_t length) { sodium_memzero(buffer, length); }

int sg_clock_synchronized(void) {
  struct timex t;
  memset(&t, 0, sizeof t);
  int state = adjtimex(&t);
  return (state == -1 || state == TIME_ERROR || (t.status & STA_UNSYNC)) ? 0 : 1;
}
