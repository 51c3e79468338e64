// TLS for the console (OpenSSL libssl): a server context and non-blocking sessions, with
// results as codes (no exceptions, no OpenSSL types in Swift). Single-threaded use: the
// console's loop owns every session.
#ifndef SCANGATE_TLS_H
#define SCANGATE_TLS_H
#include <stddef.h>

typedef struct sg_tls_context sg_tls_context;
typedef struct sg_tls_session sg_tls_session;

/// Results of sg_tls_handshake / read / write / shutdown (reads and writes return the byte
/// count when positive).
enum {
  SG_TLS_DONE = 1,         // handshake or shutdown finished
  SG_TLS_WANT_READ = -2,   // call again when the socket is readable (POLLIN)
  SG_TLS_WANT_WRITE = -3,  // call again when the socket is writable (POLLOUT)
  SG_TLS_CLOSED = -4,      // the peer closed (close_notify, or end of stream)
  SG_TLS_ERROR = -1,       // protocol or certificate failure, or a socket error: drop the session
};

/// A server context: TLS 1.2 minimum, forward-secret AEAD ciphers only, no compression, no
/// renegotiation, no session cache or tickets (nothing grows with clients). Every file is read
/// by the caller (without blocking, regular files only) and passed in memory: OpenSSL opens no
/// file. `cert_pem` is a PEM chain (leaf first); `key_pem` the private key in PEM; `client_ca_pem`
/// (NULL or length 0 for none) makes client certificates required and verified against the CA
/// certificates it holds. NULL on failure, with the reason in `error`.
sg_tls_context *sg_tls_context_new(const void *cert_pem, size_t cert_length, const void *key_pem, size_t key_length,
                                   const void *client_ca_pem, size_t client_ca_length, char *error, size_t error_length);
void sg_tls_context_free(sg_tls_context *context);

/// A client context: TLS 1.2 minimum, the same ciphers; the server is verified against the
/// certificates in `ca_pem` alone (a CA, or the server's own certificate); `cert_pem`/`key_pem`
/// (length 0 for none) are presented when the server asks. NULL on failure, with the reason.
sg_tls_context *sg_tls_client_context_new(const void *ca_pem, size_t ca_length, const void *cert_pem, size_t cert_length,
                                          const void *key_pem, size_t key_length, char *error, size_t error_length);
/// A client session on the connected non-blocking socket `fd`; the server's certificate must
/// name `host` (an IP address or a DNS name). Handshake with sg_tls_handshake. NULL on failure.
sg_tls_session *sg_tls_client_session_new(sg_tls_context *context, int fd, const char *host);

/// A server session on the connected non-blocking socket `fd` (which the caller still owns and
/// closes). Writes never raise SIGPIPE. NULL when out of memory.
sg_tls_session *sg_tls_session_new(sg_tls_context *context, int fd);
/// Frees the session (without shutdown: call sg_tls_shutdown first for a clean close).
void sg_tls_session_free(sg_tls_session *session);

/// One step of the server handshake: SG_TLS_DONE, a WANT, or SG_TLS_ERROR / SG_TLS_CLOSED.
int sg_tls_handshake(sg_tls_session *session);
/// Reads up to `length` bytes (length > 0): the count, a WANT, SG_TLS_CLOSED or SG_TLS_ERROR.
int sg_tls_read(sg_tls_session *session, void *buffer, int length);
/// Writes up to `length` bytes (length > 0; partial writes are allowed and the buffer may move
/// between retries as long as it starts with the same unsent bytes): the count taken, a WANT,
/// or SG_TLS_ERROR.
int sg_tls_write(sg_tls_session *session, const void *buffer, int length);
/// Decrypted bytes buffered in the session that a read returns without touching the socket.
int sg_tls_pending(const sg_tls_session *session);
/// Sends close_notify once, without waiting for the peer's: SG_TLS_DONE, or a WANT / error
/// (the caller closes the socket either way). Does nothing after a fatal error.
int sg_tls_shutdown(sg_tls_session *session);

/// The negotiated protocol ("TLSv1.3") and cipher, for status lines.
const char *sg_tls_protocol(const sg_tls_session *session);
const char *sg_tls_cipher(const sg_tls_session *session);
/// The reason of this session's last SG_TLS_ERROR ("" when none).
const char *sg_tls_error(const sg_tls_session *session);
/// "OpenSSL 3.0.x ..." (the library linked at run time).
const char *sg_tls_library_version(void);

// AES-128 blocks for OSDP Secure Channel (osdp_aes.c).
#include "scangate_osdp_aes.h"
#endif
