// AES-128 blocks for OSDP Secure Channel through OpenSSL's libcrypto. The low-level AES_*
// functions are deprecated in OpenSSL 3 in favour of EVP, but EVP contexts are heap objects;
// these take a stack key schedule, so the reader's loop stays allocation-free.
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include "scangate_osdp_aes.h"

#include <openssl/aes.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

int sg_osdp_aes128_encrypt_block(const void *key, void *block) {
  AES_KEY schedule;
  if (AES_set_encrypt_key(key, 128, &schedule) != 0) return -1;
  AES_encrypt(block, block, &schedule);
  OPENSSL_cleanse(&schedule, sizeof schedule);
  return 0;
}

int sg_osdp_aes128_decrypt_block(const void *key, void *block) {
  AES_KEY schedule;
  if (AES_set_decrypt_key(key, 128, &schedule) != 0) return -1;
  AES_decrypt(block, block, &schedule);
  OPENSSL_cleanse(&schedule, sizeof schedule);
  return 0;
}

int sg_osdp_random(void *bytes, size_t count) {
  if (count > 0x7fffffff) return -1;
  return RAND_bytes(bytes, (int)count) == 1 ? 0 : -1;
}
