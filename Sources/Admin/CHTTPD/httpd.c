#include "scangate_httpd.h"
#include <arpa/inet.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct server {
  sg_http_handler_fn handler;
  sg_http_stream_fn stream;
  sg_http_stream_end_fn stream_end;
  void *context;
};

struct pending {
  uint8_t body[SG_HTTP_BODY_MAX];
  size_t length;
  int too_large;
};

struct reply {
  struct MHD_Connection *connection;
  struct server *server;
  enum MHD_Result result;
  int answered;
};

struct stream_state {
  struct server *server;
  uint64_t stream;
};

static const char *header(struct MHD_Connection *c, const char *name) {
  const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
  return v ? v : "";
}

/// Appends one query argument to `q->query`, percent-encoding every byte but [A-Za-z0-9._-].
static enum MHD_Result query_argument(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
  (void)kind;
  struct sg_http_request *q = cls;
  size_t used = strlen(q->query);
  const char *parts[2] = {key, value ? value : ""};
  char out[SG_HTTP_QUERY_MAX];
  size_t n = 0;
  if (used > 0) out[n++] = '&';
  for (int k = 0; k < 2; k++) {
    if (k == 1) out[n++] = '=';
    for (const unsigned char *s = (const unsigned char *)parts[k]; *s; s++) {
      if (n + 4 >= sizeof out) {
        q->query_too_long = 1;
        return MHD_NO;
      }
      if (isalnum(*s) || *s == '.' || *s == '_' || *s == '-') {
        out[n++] = (char)*s;
      } else {
        n += (size_t)snprintf(out + n, 4, "%%%02X", *s);
      }
    }
  }
  if (used + n + 1 > sizeof q->query) {
    q->query_too_long = 1;
    return MHD_NO;
  }
  memcpy(q->query + used, out, n);
  q->query[used + n] = 0;
  return MHD_YES;
}

static void add_headers(struct MHD_Response *response, const char *content_type, const char *headers) {
  MHD_add_response_header(response, "Content-Type", content_type);
  MHD_add_response_header(response, "Content-Security-Policy",
                          "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
                          "form-action 'self'; frame-ancestors 'none'; base-uri 'none'");
  MHD_add_response_header(response, "X-Content-Type-Options", "nosniff");
  MHD_add_response_header(response, "X-Frame-Options", "DENY");
  MHD_add_response_header(response, "Referrer-Policy", "same-origin");  // "no-referrer" would make a form's Origin "null"
  MHD_add_response_header(response, "Cache-Control", "no-store");
  MHD_add_response_header(response, "Strict-Transport-Security", "max-age=31536000");
  // Extra lines "Name: value\n".
  char line[512];
  const char *p = headers ? headers : "";
  while (*p) {
    const char *end = strchr(p, '\n');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n > 0 && n < sizeof line) {
      memcpy(line, p, n);
      line[n] = 0;
      char *colon = strchr(line, ':');
      if (colon) {
        *colon = 0;
        const char *value = colon + 1;
        while (*value == ' ') value++;
        MHD_add_response_header(response, line, value);
      }
    }
    p += n + (end ? 1 : 0);
  }
}

void sg_http_reply(void *opaque, unsigned status, const char *content_type, const char *headers, const uint8_t *body, size_t length) {
  struct reply *r = opaque;
  if (r->answered) return;
  r->answered = 1;
  struct MHD_Response *response = MHD_create_response_from_buffer(length, (void *)body, MHD_RESPMEM_MUST_COPY);
  if (!response) {
    r->result = MHD_NO;
    return;
  }
  add_headers(response, content_type, headers);
  r->result = MHD_queue_response(r->connection, status, response);
  MHD_destroy_response(response);
}

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max) {
  (void)pos;
  struct stream_state *s = cls;
  for (;;) {
    ssize_t n = s->server->stream(s->server->context, s->stream, buf, max);
    if (n < 0) return MHD_CONTENT_READER_END_OF_STREAM;
    if (n > 0) return n;
    // Nothing yet: a comment line keeps the connection (and notices a client gone).
    if (max < 2) return 0;
    memcpy(buf, ":\n", 2);
    return 2;
  }
}

static void stream_free(void *cls) {
  struct stream_state *s = cls;
  s->server->stream_end(s->server->context, s->stream);
  free(s);
}

void sg_http_reply_stream(void *opaque, unsigned status, const char *content_type, const char *headers, uint64_t stream) {
  struct reply *r = opaque;
  if (r->answered) return;
  r->answered = 1;
  struct stream_state *s = malloc(sizeof *s);
  if (!s) {
    r->result = MHD_NO;
    return;
  }
  s->server = r->server;
  s->stream = stream;
  struct MHD_Response *response = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_reader, s, stream_free);
  if (!response) {
    free(s);
    r->result = MHD_NO;
    return;
  }
  add_headers(response, content_type, headers);
  r->result = MHD_queue_response(r->connection, status, response);
  MHD_destroy_response(response);
}

static enum MHD_Result access_handler(void *cls, struct MHD_Connection *connection, const char *url, const char *method,
                                      const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls) {
  (void)version;
  struct server *server = cls;
  struct pending *p = *con_cls;
  if (!p) {
    p = calloc(1, sizeof *p);
    if (!p) return MHD_NO;
    *con_cls = p;
    return MHD_YES;
  }
  if (*upload_data_size > 0) {
    if (p->length + *upload_data_size > SG_HTTP_BODY_MAX) {
      p->too_large = 1;
    } else {
      memcpy(p->body + p->length, upload_data, *upload_data_size);
      p->length += *upload_data_size;
    }
    *upload_data_size = 0;
    return MHD_YES;
  }
  struct reply r = {connection, server, MHD_YES, 0};
  if (p->too_large) {
    static const char text[] = "request body too large\n";
    sg_http_reply(&r, 413, "text/plain; charset=utf-8", "", (const uint8_t *)text, sizeof text - 1);
    return r.result;
  }
  struct sg_http_request q;
  memset(&q, 0, sizeof q);
  q.method = method;
  q.url = url;
  q.cookie = header(connection, "Cookie");
  q.origin = header(connection, "Origin");
  q.host = header(connection, "Host");
  q.csrf = header(connection, "X-CSRF-Token");
  q.authorization = header(connection, "Authorization");
  q.content_type = header(connection, "Content-Type");
  q.body = p->body;
  q.body_length = p->length;
  MHD_get_connection_values(connection, MHD_GET_ARGUMENT_KIND, query_argument, &q);
  const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  if (info && info->client_addr) {
    const struct sockaddr *a = info->client_addr;
    if (a->sa_family == AF_INET) inet_ntop(AF_INET, &((const struct sockaddr_in *)a)->sin_addr, q.client, sizeof q.client);
    if (a->sa_family == AF_INET6) inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)a)->sin6_addr, q.client, sizeof q.client);
  }
  server->handler(server->context, &q, &r);
  if (!r.answered) {
    static const char text[] = "no answer\n";
    sg_http_reply(&r, 500, "text/plain; charset=utf-8", "", (const uint8_t *)text, sizeof text - 1);
  }
  return r.result;
}

static void completed(void *cls, struct MHD_Connection *connection, void **con_cls, enum MHD_RequestTerminationCode code) {
  (void)cls;
  (void)connection;
  (void)code;
  free(*con_cls);
  *con_cls = NULL;
}

void *sg_http_start(const void *address, unsigned address_length, const char *certificate_pem, const char *key_pem,
                    sg_http_handler_fn handler, sg_http_stream_fn stream, sg_http_stream_end_fn stream_end, void *context,
                    unsigned connections_max, unsigned per_client_max, char error[256]) {
  struct server *server = calloc(1, sizeof *server);
  if (!server) {
    snprintf(error, 256, "out of memory");
    return NULL;
  }
  server->handler = handler;
  server->stream = stream;
  server->stream_end = stream_end;
  server->context = context;
  const struct sockaddr *a = address;
  unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_TLS | MHD_USE_ERROR_LOG;
  if (a->sa_family == AF_INET6) flags |= MHD_USE_IPv6;
  (void)address_length;
  struct MHD_Daemon *d = MHD_start_daemon(
      flags, 0, NULL, NULL, access_handler, server, MHD_OPTION_SOCK_ADDR, address, MHD_OPTION_HTTPS_MEM_CERT, certificate_pem,
      MHD_OPTION_HTTPS_MEM_KEY, key_pem, MHD_OPTION_HTTPS_PRIORITIES, "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2",
      MHD_OPTION_CONNECTION_LIMIT, connections_max, MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_client_max,
      MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60, MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)65536,
      MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_END);
  if (!d) {
    snprintf(error, 256, "libmicrohttpd could not start (the address is in use, or the certificate and key do not match)");
    free(server);
    return NULL;
  }
  return d;
}

void sg_http_stop(void *daemon) { MHD_stop_daemon(daemon); }

int sg_http_certificate_fingerprint(const char *pem, char out[96]) {
  gnutls_x509_crt_t crt;
  if (gnutls_x509_crt_init(&crt) < 0) return -1;
  gnutls_datum_t data = {(unsigned char *)pem, (unsigned)strlen(pem)};
  unsigned char digest[32];
  size_t size = sizeof digest;
  int rc = gnutls_x509_crt_import(crt, &data, GNUTLS_X509_FMT_PEM);
  if (rc >= 0) rc = gnutls_x509_crt_get_fingerprint(crt, GNUTLS_DIG_SHA256, digest, &size);
  gnutls_x509_crt_deinit(crt);
  if (rc < 0 || size != 32) return -1;
  static const char hex[] = "0123456789ABCDEF";
  for (int i = 0; i < 32; i++) {
    out[3 * i] = hex[digest[i] >> 4];
    out[3 * i + 1] = hex[digest[i] & 15];
    out[3 * i + 2] = i == 31 ? 0 : ':';
  }
  return 0;
}
