#include "scangate_tls.h"
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

struct sg_tls_context {
  SSL_CTX *ctx;
};

struct sg_tls_session {
  SSL *ssl;
  int fd;
  int eof;     // the peer ended the stream (recv returned 0)
  int failed;  // a fatal error: no shutdown, no further I/O
  char error[200];
};

// MARK: - A socket BIO that never raises SIGPIPE (send with MSG_NOSIGNAL)

static BIO_METHOD *socket_method;

static int bio_write(BIO *bio, const char *data, int length) {
  struct sg_tls_session *s = BIO_get_data(bio);
  BIO_clear_retry_flags(bio);
  for (;;) {
    ssize_t n = send(s->fd, data, (size_t)length, MSG_NOSIGNAL);
    if (n >= 0) return (int)n;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) BIO_set_retry_write(bio);
    return -1;
  }
}

static int bio_read(BIO *bio, char *data, int length) {
  struct sg_tls_session *s = BIO_get_data(bio);
  BIO_clear_retry_flags(bio);
  for (;;) {
    ssize_t n = recv(s->fd, data, (size_t)length, 0);
    if (n > 0) return (int)n;
    if (n == 0) {
      s->eof = 1;
      return 0;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) BIO_set_retry_read(bio);
    return -1;
  }
}

static int bio_puts(BIO *bio, const char *text) { return bio_write(bio, text, (int)strlen(text)); }

static long bio_ctrl(BIO *bio, int command, long number, void *pointer) {
  (void)number;
  struct sg_tls_session *s = BIO_get_data(bio);
  switch (command) {
  case BIO_CTRL_FLUSH: return 1;
  case BIO_CTRL_EOF: return s != NULL && s->eof;
  case BIO_C_GET_FD:
    if (s == NULL) return -1;
    if (pointer != NULL) *(int *)pointer = s->fd;
    return s->fd;
  default: return 0;
  }
}

static int bio_create(BIO *bio) {
  BIO_set_init(bio, 1);
  return 1;
}

static BIO_METHOD *method(void) {
  if (socket_method != NULL) return socket_method;
  BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR, "scangate socket");
  if (m == NULL) return NULL;
  BIO_meth_set_write(m, bio_write);
  BIO_meth_set_read(m, bio_read);
  BIO_meth_set_puts(m, bio_puts);
  BIO_meth_set_ctrl(m, bio_ctrl);
  BIO_meth_set_create(m, bio_create);
  socket_method = m;
  return m;
}

// MARK: - Errors

/// The earliest queued OpenSSL error as text ("" when none), then clears the queue.
static void take_errors(char *out, size_t length, const char *prefix) {
  if (out == NULL || length == 0) {
    ERR_clear_error();
    return;
  }
  unsigned long e = ERR_get_error();
  char reason[160] = "";
  if (e != 0) ERR_error_string_n(e, reason, sizeof reason);
  ERR_clear_error();
  snprintf(out, length, "%s%s%s", prefix, (prefix[0] && reason[0]) ? ": " : "", reason);
}

/// Never prompts on a terminal for a passphrase: an encrypted key simply fails to load.
static int no_passphrase(char *buffer, int size, int writing, void *user) {
  (void)buffer; (void)size; (void)writing; (void)user;
  return -1;
}

// MARK: - Certificates from memory

/// Whether the PEM reads that ended a loop ended at the end of the data ("no start line": not an
/// error, and taken off the queue) rather than at a malformed certificate.
static int ended_cleanly(void) {
  unsigned long e = ERR_peek_last_error();
  if (e == 0) return 1;
  if (ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE) {
    ERR_clear_error();
    return 1;
  }
  return 0;
}

/// The server's chain from PEM in memory (leaf first, then its CAs), as
/// SSL_CTX_use_certificate_chain_file reads it from a file. 1 on success.
static int use_chain(SSL_CTX *ctx, const void *pem, size_t length) {
  if (length > INT32_MAX) return 0;
  BIO *bio = BIO_new_mem_buf(pem, (int)length);
  if (bio == NULL) return 0;
  X509 *leaf = PEM_read_bio_X509_AUX(bio, NULL, no_passphrase, NULL);
  int ok = leaf != NULL && SSL_CTX_use_certificate(ctx, leaf) == 1 && SSL_CTX_clear_chain_certs(ctx) == 1;
  X509_free(leaf);
  while (ok) {
    X509 *ca = PEM_read_bio_X509(bio, NULL, no_passphrase, NULL);
    if (ca == NULL) {
      ok = ended_cleanly();
      break;
    }
    if (SSL_CTX_add0_chain_cert(ctx, ca) != 1) {  // takes the certificate on success
      X509_free(ca);
      ok = 0;
    }
  }
  BIO_free(bio);
  return ok;
}

/// The client CAs from PEM in memory: each certificate verifies clients and its subject is sent
/// in the CertificateRequest (SSL_CTX_load_verify_locations and SSL_load_client_CA_file from a
/// file). 1 on success, 0 on a bad certificate, -1 when the data holds none.
static int use_client_cas(SSL_CTX *ctx, const void *pem, size_t length) {
  if (length > INT32_MAX) return 0;
  BIO *bio = BIO_new_mem_buf(pem, (int)length);
  STACK_OF(X509_NAME) *names = sk_X509_NAME_new_null();
  X509_STORE *store = SSL_CTX_get_cert_store(ctx);
  int ok = bio != NULL && names != NULL && store != NULL, count = 0;
  while (ok) {
    X509 *ca = PEM_read_bio_X509(bio, NULL, no_passphrase, NULL);
    if (ca == NULL) {
      ok = ended_cleanly();
      break;
    }
    X509_NAME *name = X509_NAME_dup(X509_get_subject_name(ca));
    if (name == NULL || X509_STORE_add_cert(store, ca) != 1 || sk_X509_NAME_push(names, name) <= 0) {
      X509_NAME_free(name);
      ok = 0;
    }
    X509_free(ca);  // the store holds its own reference
    count++;
  }
  BIO_free(bio);
  if (!ok || count == 0) {
    sk_X509_NAME_pop_free(names, X509_NAME_free);
    return ok ? -1 : 0;
  }
  SSL_CTX_set_client_CA_list(ctx, names);  // takes the list
  return 1;
}

// MARK: - Context

/// A context with what the server and the client share: TLS 1.2 minimum, no compression,
/// renegotiation, session cache or tickets, partial writes; for TLS 1.2 ECDHE key exchange
/// (forward secrecy) with AEAD ciphers only (TLS 1.3's suites all are: OpenSSL's list stays).
/// NULL on failure, with the reason in `error`.
static SSL_CTX *new_context(const SSL_METHOD *kind, long options, char *error, size_t error_length) {
  if (error != NULL && error_length > 0) error[0] = 0;
  ERR_clear_error();
  if (method() == NULL) {
    take_errors(error, error_length, "cannot create the socket BIO");
    return NULL;
  }
  SSL_CTX *ctx = SSL_CTX_new(kind);
  if (ctx == NULL) {
    take_errors(error, error_length, "cannot create a TLS context");
    return NULL;
  }
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_TICKET | options);
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_num_tickets(ctx, 0);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (SSL_CTX_set_cipher_list(ctx, "ECDHE+AESGCM:ECDHE+CHACHA20:!aNULL:!eNULL:!SHA1") != 1) {
    take_errors(error, error_length, "cipher list");
    SSL_CTX_free(ctx);
    return NULL;
  }
  return ctx;
}

/// The private key (PEM in memory, unencrypted) for the certificate already set: NULL when it is
/// in use, else what failed.
static const char *use_key(SSL_CTX *ctx, const void *key_pem, size_t key_length) {
  BIO *bio = key_length > INT32_MAX ? NULL : BIO_new_mem_buf(key_pem, (int)key_length);
  EVP_PKEY *key = bio == NULL ? NULL : PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL);
  BIO_free(bio);
  if (key == NULL) return "private key (PEM, not encrypted)";
  int used = SSL_CTX_use_PrivateKey(ctx, key);
  EVP_PKEY_free(key);
  if (used != 1) return "private key";
  if (SSL_CTX_check_private_key(ctx) != 1) return "the private key does not match the certificate";
  return NULL;
}

/// `ctx` as a context of ours, or NULL (and `ctx` freed) when out of memory.
static sg_tls_context *wrap(SSL_CTX *ctx) {
  ERR_clear_error();
  sg_tls_context *context = malloc(sizeof *context);
  if (context == NULL) {
    SSL_CTX_free(ctx);
    return NULL;
  }
  context->ctx = ctx;
  return context;
}

sg_tls_context *sg_tls_context_new(const void *cert_pem, size_t cert_length, const void *key_pem, size_t key_length,
                                   const void *client_ca_pem, size_t client_ca_length, char *error, size_t error_length) {
  SSL_CTX *ctx = new_context(TLS_server_method(), SSL_OP_CIPHER_SERVER_PREFERENCE, error, error_length);
  if (ctx == NULL) return NULL;
  if (use_chain(ctx, cert_pem, cert_length) != 1) {
    take_errors(error, error_length, "certificate");
    goto fail;
  }
  const char *key_problem = use_key(ctx, key_pem, key_length);
  if (key_problem != NULL) {
    take_errors(error, error_length, key_problem);
    goto fail;
  }
  if (client_ca_pem != NULL && client_ca_length > 0) {
    int cas = use_client_cas(ctx, client_ca_pem, client_ca_length);
    if (cas != 1) {
      take_errors(error, error_length, cas < 0 ? "client CA: no PEM certificate" : "client CA");
      goto fail;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    SSL_CTX_set_verify_depth(ctx, 4);
  }
  return wrap(ctx);
fail:
  SSL_CTX_free(ctx);
  return NULL;
}

void sg_tls_context_free(sg_tls_context *context) {
  if (context == NULL) return;
  SSL_CTX_free(context->ctx);
  free(context);
}

// MARK: - A client context (the web page on another host, to a reader's TLS console)

sg_tls_context *sg_tls_client_context_new(const void *ca_pem, size_t ca_length, const void *cert_pem, size_t cert_length,
                                          const void *key_pem, size_t key_length, char *error, size_t error_length) {
  SSL_CTX *ctx = new_context(TLS_client_method(), 0, error, error_length);
  if (ctx == NULL) return NULL;
  // The reader is verified against these certificates alone (its CA, or its own certificate),
  // never the system's store: a LAN reader's certificate is the site's.
  int cas = use_client_cas(ctx, ca_pem, ca_length);
  if (cas != 1) {
    take_errors(error, error_length, cas < 0 ? "reader CA: no PEM certificate" : "reader CA");
    goto fail;
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
  SSL_CTX_set_verify_depth(ctx, 4);
  if (cert_pem != NULL && cert_length > 0) {
    const char *key_problem = use_chain(ctx, cert_pem, cert_length) != 1 ? "client certificate" : use_key(ctx, key_pem, key_length);
    if (key_problem != NULL) {
      take_errors(error, error_length, key_problem);
      goto fail;
    }
  }
  return wrap(ctx);
fail:
  SSL_CTX_free(ctx);
  return NULL;
}

// MARK: - Sessions

sg_tls_session *sg_tls_session_new(sg_tls_context *context, int fd) {
  sg_tls_session *s = calloc(1, sizeof *s);
  if (s == NULL) return NULL;
  s->fd = fd;
  s->ssl = SSL_new(context->ctx);
  BIO *bio = s->ssl == NULL ? NULL : BIO_new(method());
  if (bio == NULL) {
    SSL_free(s->ssl);
    free(s);
    ERR_clear_error();
    return NULL;
  }
  BIO_set_data(bio, s);
  SSL_set_bio(s->ssl, bio, bio);  // the SSL owns the BIO (one reference for both directions)
  SSL_set_accept_state(s->ssl);
  return s;
}

sg_tls_session *sg_tls_client_session_new(sg_tls_context *context, int fd, const char *host) {
  sg_tls_session *s = sg_tls_session_new(context, fd);
  if (s == NULL) return NULL;
  SSL_set_connect_state(s->ssl);
  // The reader's name or address must be in its certificate (subjectAltName).
  int named;
  if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(s->ssl), host) == 1) {
    named = 1;  // an address: checked against the certificate's IP names (no SNI for an address)
  } else {
    ERR_clear_error();
    named = SSL_set1_host(s->ssl, host) == 1 && SSL_set_tlsext_host_name(s->ssl, host) == 1;
  }
  ERR_clear_error();
  if (!named) {
    sg_tls_session_free(s);
    return NULL;
  }
  return s;
}

void sg_tls_session_free(sg_tls_session *s) {
  if (s == NULL) return;
  SSL_free(s->ssl);
  free(s);
}

/// Maps the result `r` of an SSL call to a code; records the reason of a failure.
static int result(sg_tls_session *s, int r) {
  int e = SSL_get_error(s->ssl, r);
  switch (e) {
  case SSL_ERROR_WANT_READ: return SG_TLS_WANT_READ;
  case SSL_ERROR_WANT_WRITE: return SG_TLS_WANT_WRITE;
  case SSL_ERROR_ZERO_RETURN:
    ERR_clear_error();
    return SG_TLS_CLOSED;
  default:
    s->failed = 1;
    if (s->eof) {
      ERR_clear_error();
      snprintf(s->error, sizeof s->error, "the peer closed the connection");
      return SG_TLS_CLOSED;
    }
    if (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
      snprintf(s->error, sizeof s->error, "socket: %s", strerror(errno));
      return SG_TLS_ERROR;
    }
    long verify = SSL_get_verify_result(s->ssl);
    take_errors(s->error, sizeof s->error, "");
    if (verify != X509_V_OK) {
      size_t used = strlen(s->error);
      snprintf(s->error + used, sizeof s->error - used, " (certificate: %s)", X509_verify_cert_error_string(verify));
    }
    return SG_TLS_ERROR;
  }
}

int sg_tls_handshake(sg_tls_session *s) {
  if (s->failed) return SG_TLS_ERROR;
  ERR_clear_error();
  int r = SSL_do_handshake(s->ssl);
  return r == 1 ? SG_TLS_DONE : result(s, r);
}

int sg_tls_read(sg_tls_session *s, void *buffer, int length) {
  if (s->failed) return SG_TLS_ERROR;
  ERR_clear_error();
  int r = SSL_read(s->ssl, buffer, length);
  return r > 0 ? r : result(s, r);
}

int sg_tls_write(sg_tls_session *s, const void *buffer, int length) {
  if (s->failed) return SG_TLS_ERROR;
  ERR_clear_error();
  int r = SSL_write(s->ssl, buffer, length);
  if (r > 0) return r;
  r = result(s, r);
  return r == SG_TLS_CLOSED ? SG_TLS_ERROR : r;
}

int sg_tls_pending(const sg_tls_session *s) { return s->failed ? 0 : SSL_pending(s->ssl); }

int sg_tls_shutdown(sg_tls_session *s) {
  if (s->failed || !SSL_is_init_finished(s->ssl)) return SG_TLS_ERROR;
  ERR_clear_error();
  int r = SSL_shutdown(s->ssl);
  if (r >= 0) return SG_TLS_DONE;  // 0: ours sent, the peer's not awaited
  r = result(s, r);
  return r;
}

const char *sg_tls_protocol(const sg_tls_session *s) { return SSL_get_version(s->ssl); }

const char *sg_tls_cipher(const sg_tls_session *s) {
  const char *name = SSL_get_cipher_name(s->ssl);
  return name == NULL ? "" : name;
}

const char *sg_tls_error(const sg_tls_session *s) { return s->error; }

const char *sg_tls_library_version(void) { return OpenSSL_version(OPENSSL_VERSION); }
