// See scangate_mqtt.h. The queues are filled by libmosquitto's callbacks, which run inside
// sg_mqtt_loop on the calling thread, and drained by the same thread: no locks.
#include "scangate_mqtt.h"

#include <mosquitto.h>
#include <mqtt_protocol.h>
#include <openssl/ssl.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SG_ACKS 16384

struct sg_mqtt {
  struct mosquitto *mosq;
  int protocol;
  int state;
  int reason;
  size_t message_bytes_max;
  int messages_max;
  int messages_count;
  sg_mqtt_message *head, *tail;
  unsigned long dropped_messages, dropped_acks;
  unsigned ack_read, ack_write;
  int ack_mid[SG_ACKS];
  int ack_reason[SG_ACKS];
};

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static void library_init(void) { mosquitto_lib_init(); }

int sg_mqtt_library_version(void) {
  int major = 0, minor = 0, revision = 0;
  mosquitto_lib_version(&major, &minor, &revision);
  return major * 1000000 + minor * 1000 + revision;
}

static void on_connect(struct mosquitto *m, void *obj, int rc, int flags, const mosquitto_property *props) {
  (void)m; (void)flags; (void)props;
  sg_mqtt *c = obj;
  c->reason = rc;
  c->state = rc == 0 ? SG_MQTT_CONNECTED : SG_MQTT_REFUSED;
}

static void on_disconnect(struct mosquitto *m, void *obj, int rc, const mosquitto_property *props) {
  (void)m; (void)props;
  sg_mqtt *c = obj;
  if (c->state != SG_MQTT_REFUSED) c->state = SG_MQTT_LOST;
  c->reason = rc;
}

static void on_publish(struct mosquitto *m, void *obj, int mid, int reason, const mosquitto_property *props) {
  (void)m; (void)props;
  sg_mqtt *c = obj;
  if (c->ack_write - c->ack_read >= SG_ACKS) {
    c->dropped_acks++;
    return;
  }
  c->ack_mid[c->ack_write % SG_ACKS] = mid;
  c->ack_reason[c->ack_write % SG_ACKS] = reason;
  c->ack_write++;
}

static void on_message(struct mosquitto *m, void *obj, const struct mosquitto_message *msg, const mosquitto_property *props) {
  (void)m; (void)props;
  sg_mqtt *c = obj;
  if (msg->payloadlen < 0 || (size_t)msg->payloadlen > c->message_bytes_max || c->messages_count >= c->messages_max ||
      msg->topic == NULL) {
    c->dropped_messages++;
    return;
  }
  sg_mqtt_message *copy = calloc(1, sizeof *copy);
  if (copy == NULL) { c->dropped_messages++; return; }
  copy->topic = strdup(msg->topic);
  copy->payload = malloc((size_t)msg->payloadlen + 1);
  if (copy->topic == NULL || copy->payload == NULL) {
    sg_mqtt_message_free(copy);
    c->dropped_messages++;
    return;
  }
  if (msg->payloadlen > 0) memcpy(copy->payload, msg->payload, (size_t)msg->payloadlen);
  copy->payload[msg->payloadlen] = 0;
  copy->payload_len = msg->payloadlen;
  copy->qos = msg->qos;
  copy->retain = msg->retain ? 1 : 0;
  if (c->tail) c->tail->next = copy; else c->head = copy;
  c->tail = copy;
  c->messages_count++;
}

sg_mqtt *sg_mqtt_new(const char *client_id, int protocol, size_t message_bytes_max, int messages_max, int clean_session) {
  pthread_once(&init_once, library_init);
  sg_mqtt *c = calloc(1, sizeof *c);
  if (c == NULL) return NULL;
  c->protocol = protocol == 5 ? MQTT_PROTOCOL_V5 : MQTT_PROTOCOL_V311;
  c->message_bytes_max = message_bytes_max;
  c->messages_max = messages_max;
  c->mosq = mosquitto_new(client_id, clean_session != 0, c);
  if (c->mosq == NULL) { free(c); return NULL; }
  mosquitto_int_option(c->mosq, MOSQ_OPT_PROTOCOL_VERSION, c->protocol);
  mosquitto_connect_v5_callback_set(c->mosq, on_connect);
  mosquitto_disconnect_v5_callback_set(c->mosq, on_disconnect);
  mosquitto_publish_v5_callback_set(c->mosq, on_publish);
  mosquitto_message_v5_callback_set(c->mosq, on_message);
  return c;
}

void sg_mqtt_free(sg_mqtt *c) {
  if (c == NULL) return;
  mosquitto_destroy(c->mosq);  // closes the socket without a DISCONNECT: the will is sent
  sg_mqtt_message *m = c->head;
  while (m) {
    sg_mqtt_message *next = m->next;
    sg_mqtt_message_free(m);
    m = next;
  }
  free(c);
}

int sg_mqtt_tls(sg_mqtt *c, const char *ca_file, const char *cert_file, const char *key_file) {
  int with_client = cert_file && *cert_file && key_file && *key_file;
  int rc = mosquitto_tls_set(c->mosq, ca_file, NULL, with_client ? cert_file : NULL, with_client ? key_file : NULL, NULL);
  if (rc != MOSQ_ERR_SUCCESS) return rc;
  return mosquitto_tls_opts_set(c->mosq, SSL_VERIFY_PEER, "tlsv1.2", NULL);
}

int sg_mqtt_will(sg_mqtt *c, const char *topic, const void *payload, int length, int retain) {
  return mosquitto_will_set(c->mosq, topic, length, payload, 1, retain != 0);
}

int sg_mqtt_credentials(sg_mqtt *c, const char *username, const char *password) {
  return mosquitto_username_pw_set(c->mosq, username, password);
}

int sg_mqtt_connect(sg_mqtt *c, const char *host, int port, int keepalive_seconds) {
  c->state = SG_MQTT_CONNECTING;
  c->reason = 0;
  int rc = mosquitto_connect_async(c->mosq, host, port, keepalive_seconds);
  if (rc == MOSQ_ERR_CONN_PENDING) rc = MOSQ_ERR_SUCCESS;
  if (rc != MOSQ_ERR_SUCCESS) c->state = SG_MQTT_LOST;
  return rc;
}

int sg_mqtt_disconnect(sg_mqtt *c) { return mosquitto_disconnect(c->mosq); }

// One turn of the client: poll(2) on its socket, then libmosquitto's read, write and
// housekeeping steps (the external-loop API). Not mosquitto_loop: that one uses select(2) and
// refuses a socket numbered FD_SETSIZE (1024) or above, which a process with many files open
// (a thousand links in `scangate fleet bench`) reaches. libmosquitto 2.0.11 to 2.0.14 (bookworm)
// advance a TLS handshake whose TCP connect was still in progress only from the read step (the
// write step waits for it), so while connecting, a writable socket gets the read step too, as
// mosquitto_loop did.
static int loop_once(sg_mqtt *c, int timeout_ms) {
  int fd = mosquitto_socket(c->mosq);
  if (fd < 0) return MOSQ_ERR_NO_CONN;
  struct pollfd p = {.fd = fd, .events = POLLIN | (mosquitto_want_write(c->mosq) ? POLLOUT : 0)};
  int n = poll(&p, 1, timeout_ms);
  if (n < 0 && errno != EINTR) return MOSQ_ERR_ERRNO;
  int rc = MOSQ_ERR_SUCCESS;
  int readable = n > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR));
  int handshaking = n > 0 && (p.revents & POLLOUT) && c->state == SG_MQTT_CONNECTING;
  if (readable || handshaking) rc = mosquitto_loop_read(c->mosq, 1);
  if (rc == MOSQ_ERR_SUCCESS && n > 0 && (p.revents & POLLOUT) && mosquitto_socket(c->mosq) >= 0) {
    rc = mosquitto_loop_write(c->mosq, 1);
  }
  if (rc == MOSQ_ERR_SUCCESS) rc = mosquitto_loop_misc(c->mosq);
  return rc;
}

int sg_mqtt_loop(sg_mqtt *c, int timeout_ms) {
  int rc = loop_once(c, timeout_ms);
  if (rc != MOSQ_ERR_SUCCESS && c->state != SG_MQTT_REFUSED) c->state = SG_MQTT_LOST;
  return rc;
}

int sg_mqtt_state(const sg_mqtt *c) { return c->state; }
int sg_mqtt_reason(const sg_mqtt *c) { return c->reason; }

int sg_mqtt_publish(sg_mqtt *c, const char *topic, const void *payload, int length, int qos, int retain, int *mid) {
  return mosquitto_publish(c->mosq, mid, topic, length, payload, qos, retain != 0);
}

int sg_mqtt_subscribe(sg_mqtt *c, const char *topic, int qos) {
  if (c->protocol == MQTT_PROTOCOL_V5) {
    // Retain as published: a message its sender marked retained keeps the flag even when
    // forwarded live, so the subscriber can refuse every retained command, not only replays.
    return mosquitto_subscribe_v5(c->mosq, NULL, topic, qos, MQTT_SUB_OPT_RETAIN_AS_PUBLISHED, NULL);
  }
  return mosquitto_subscribe(c->mosq, NULL, topic, qos);
}

int sg_mqtt_take_ack(sg_mqtt *c, int *mid, int *reason) {
  if (c->ack_read == c->ack_write) return 0;
  *mid = c->ack_mid[c->ack_read % SG_ACKS];
  *reason = c->ack_reason[c->ack_read % SG_ACKS];
  c->ack_read++;
  return 1;
}

sg_mqtt_message *sg_mqtt_take_message(sg_mqtt *c) {
  sg_mqtt_message *m = c->head;
  if (m == NULL) return NULL;
  c->head = m->next;
  if (c->head == NULL) c->tail = NULL;
  m->next = NULL;
  c->messages_count--;
  return m;
}

void sg_mqtt_message_free(sg_mqtt_message *m) {
  if (m == NULL) return;
  free(m->topic);
  free(m->payload);
  free(m);
}

unsigned long sg_mqtt_dropped_messages(const sg_mqtt *c) { return c->dropped_messages; }
unsigned long sg_mqtt_dropped_acks(const sg_mqtt *c) { return c->dropped_acks; }
const char *sg_mqtt_strerror(int rc) { return mosquitto_strerror(rc); }
const char *sg_mqtt_connack_string(int rc, int protocol) {
  return protocol == 5 ? mosquitto_reason_string(rc) : mosquitto_connack_string(rc);
}
