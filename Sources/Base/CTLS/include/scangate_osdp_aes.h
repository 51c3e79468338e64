// AES-128 single blocks and random bytes for OSDP Secure Channel (OpenSSL libcrypto). No
// allocation per call: the key schedule lives on the stack and is wiped before returning.
#ifndef SCANGATE_OSDP_AES_H
#define SCANGATE_OSDP_AES_H
#include <stddef.h>

/// AES-128 ECB encryption of one 16-byte block in place under the 16-byte `key`. 0 on success.
int sg_osdp_aes128_encrypt_block(const void *key, void *block);
/// AES-128 ECB decryption of one 16-byte block in place under the 16-byte `key`. 0 on success.
int sg_osdp_aes128_decrypt_block(const void *key, void *block);
/// `count` bytes from OpenSSL's CSPRNG (RAND_bytes). 0 on success.
int sg_osdp_random(void *bytes, size_t count);

#endif
