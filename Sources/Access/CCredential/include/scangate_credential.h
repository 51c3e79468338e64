// Signed credentials: CBOR through libcbor's streaming decoder and encoders (no allocation per
// call), and HMAC-SHA1 for TOTP through nettle (a caller-owned context, no allocation).
#ifndef SCANGATE_CREDENTIAL_H
#define SCANGATE_CREDENTIAL_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// What one CBOR data item's head says (libcbor's callbacks, flattened).
enum {
  SG_CBOR_UINT = 0,
  SG_CBOR_NEGINT = 1,   ///< value is -1 - argument
  SG_CBOR_BYTES = 2,    ///< definite; bytes lent from the input
  SG_CBOR_TEXT = 3,     ///< definite; bytes lent from the input
  SG_CBOR_ARRAY = 4,    ///< definite; argument = count
  SG_CBOR_MAP = 5,      ///< definite; argument = pairs
  SG_CBOR_TAG = 6,
  SG_CBOR_FALSE = 7,
  SG_CBOR_TRUE = 8,
  SG_CBOR_NULL = 9,
  SG_CBOR_OTHER = 10,   ///< floats, undefined, indefinite-length starts, breaks: never accepted
};

typedef struct sg_cbor_item {
  int32_t type;
  uint64_t argument;
  const uint8_t *bytes;
  size_t length;
} sg_cbor_item;

/// Decodes the item head at `buffer` (strings with their bytes). Returns the bytes consumed,
/// or 0 when the input is malformed or truncated.
size_t sg_cbor_next(const uint8_t *buffer, size_t size, sg_cbor_item *item);

/// Encodes a head of major type `major` (0 uint, 1 negint, 2 bytes, 3 text, 4 array, 5 map,
/// 6 tag) with `argument`, in the shortest form. Returns the bytes written, 0 if it does not fit.
size_t sg_cbor_head(int32_t major, uint64_t argument, uint8_t *buffer, size_t size);

/// HMAC-SHA1 (RFC 2104) of `message` under `key` into `out` (20 bytes).
void sg_hmac_sha1(const uint8_t *key, size_t key_length, const uint8_t *message, size_t message_length,
                  uint8_t out[20]);

// libsodium: Ed25519 signatures, X25519 sealed boxes. Each returns 0 on success.
enum { SG_ED25519_SEED = 32, SG_ED25519_PUBLIC = 32, SG_ED25519_SECRET = 64, SG_ED25519_SIGNATURE = 64,
       SG_X25519_KEY = 32, SG_SEAL_OVERHEAD = 48 };
int sg_credential_crypto_init(void);
/// Both key types are kept as a 32-byte seed/secret; the public half is derived.
int sg_ed25519_from_seed(const uint8_t seed[32], uint8_t public_key[32], uint8_t secret_key[64]);
int sg_ed25519_sign(uint8_t signature[64], const uint8_t *message, size_t length, const uint8_t secret_key[64]);
int sg_ed25519_verify(const uint8_t signature[64], const uint8_t *message, size_t length, const uint8_t public_key[32]);
int sg_x25519_public(const uint8_t secret_key[32], uint8_t public_key[32]);
/// `out` holds length + SG_SEAL_OVERHEAD bytes.
int sg_seal(uint8_t *out, const uint8_t *message, size_t length, const uint8_t public_key[32]);
/// `out` holds length - SG_SEAL_OVERHEAD bytes.
int sg_seal_open(uint8_t *out, const uint8_t *sealed, size_t length, const uint8_t public_key[32],
                 const uint8_t secret_key[32]);
void sg_random(uint8_t *out, size_t length);
void sg_wipe(void *buffer, size_t length);
/// The kernel's NTP status (set by systemd-timesyncd, chrony, ntpd): 1 synchronised, 0 not.
int sg_clock_synchronized(void);

#ifdef __cplusplus
}
#endif
#endif
