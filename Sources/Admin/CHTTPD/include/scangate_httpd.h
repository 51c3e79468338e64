#ifndef SCANGATE_HTTPD_H
#define SCANGATE_HTTPD_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/// The web admin page's HTTPS server: libmicrohttpd (TLS through GnuTLS), a thread per
/// connection, bounded everywhere (connections, per client, request body, header memory, idle
/// time). Every request is handed whole to one Swift handler; every response carries the same
/// security headers (a strict Content-Security-Policy: no inline script, nothing from elsewhere).

#define SG_HTTP_QUERY_MAX 2048

/// One request as the handler sees it: strings are NUL-terminated (empty when absent).
struct sg_http_request {
  const char *method;
  const char *url;
  const char *cookie;        // the Cookie header
  const char *origin;        // the Origin header
  const char *host;          // the Host header
  const char *csrf;          // the X-CSRF-Token header
  const char *authorization; // the Authorization header
  const char *content_type;
  const uint8_t *body;       // the body, at most SG_HTTP_BODY_MAX bytes
  size_t body_length;
  char client[64];           // the client's address, without its port
  char query[SG_HTTP_QUERY_MAX]; // the URL's query arguments, re-encoded as k=v&k=v (%XX)
  int query_too_long;        // the arguments did not fit `query`
};

#define SG_HTTP_BODY_MAX 65536

/// Fills `buffer` with up to `capacity` bytes of a streamed response (Server-Sent Events);
/// returns how many, 0 for "nothing yet" (called again), -1 at the end. Blocks at most ~1 s.
typedef ssize_t (*sg_http_stream_fn)(void *context, uint64_t stream, char *buffer, size_t capacity);
/// Ends a stream (the client went away or the stream ended).
typedef void (*sg_http_stream_end_fn)(void *context, uint64_t stream);
/// Handles one request: answers it with sg_http_reply or sg_http_reply_stream on `reply`.
typedef void (*sg_http_handler_fn)(void *context, const struct sg_http_request *request, void *reply);

/// A whole response: `headers` is extra header lines ("Name: value\n" each, may be empty).
void sg_http_reply(void *reply, unsigned status, const char *content_type, const char *headers, const uint8_t *body, size_t length);
/// A streamed response: `stream` is handed to the stream functions given at start.
void sg_http_reply_stream(void *reply, unsigned status, const char *content_type, const char *headers, uint64_t stream);

/// Starts serving on `address` (a sockaddr of `address_length`) with the PEM certificate and
/// key; NULL with `error` filled when it cannot.
void *sg_http_start(const void *address, unsigned address_length, const char *certificate_pem, const char *key_pem,
                    sg_http_handler_fn handler, sg_http_stream_fn stream, sg_http_stream_end_fn stream_end, void *context,
                    unsigned connections_max, unsigned per_client_max, char error[256]);
void sg_http_stop(void *daemon);

/// The SHA-256 fingerprint of the first certificate in `pem` as "AB:CD:..." (95 characters and a
/// NUL), through GnuTLS; 0, or -1 when `pem` holds no certificate.
int sg_http_certificate_fingerprint(const char *pem, char out[96]);

#endif
