// See scangate_mqtt.h. The queues are filled by libmosquitto's callbacks, which run inside
// sg_mqtt_loop on the calling thread, and drained by the same thread: no locks.
#include "scangate_mqtt.h"

#include <mosquitto.h>
#include <mqtt_protocol.h>
#include <openssl/ssl.h>
#include <errno.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SG_ACKS 16384
// Room in a packet beyond its payload: fixed header, topic name, packet id, properties.
#define SG_PACKET_OVERHEAD 4096

struct sg_mqtt {
  struct mosquitto *mosq;
  int protocol;
  int state;
  int reason;
  size_t message_bytes_max;
  // The largest packet this client takes: message_bytes_max + SG_PACKET_OVERHEAD.
  uint32_t packet_bytes_max;
  // The receive guard (see loop_once): socket bytes at the last whole packet, whether one was
  // completed since the last look, and the most a packet may take on the wire.
  uint64_t received_at_packet;
  int packet_completed;
  uint64_t guard_bytes;
  unsigned long oversize_drops;
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
  c->packet_completed = 1;
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
  c->packet_completed = 1;
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
  c->packet_completed = 1;
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

static void on_subscribe(struct mosquitto *m, void *obj, int mid, int count, const int *granted, const mosquitto_property *props) {
  (void)m; (void)mid; (void)count; (void)granted; (void)props;
  ((sg_mqtt *)obj)->packet_completed = 1;
}

// libmosquitto says "Client <id> received <PACKET>" (debug level) once it has a whole packet
// (every handler in lib/handle_*.c, 2.0.11 to 2.0.20): the one sign of a PINGRESP, which has no
// callback. Without it (another wording) only PINGRESPs go unseen: 2 bytes each, one per keepalive.
static void on_log(struct mosquitto *m, void *obj, int level, const char *text) {
  (void)m;
  if (level == MOSQ_LOG_DEBUG && text != NULL && strstr(text, " received ") != NULL) ((sg_mqtt *)obj)->packet_completed = 1;
}

sg_mqtt *sg_mqtt_new(const char *client_id, int protocol, size_t message_bytes_max, int messages_max, int clean_session) {
  pthread_once(&init_once, library_init);
  sg_mqtt *c = calloc(1, sizeof *c);
  if (c == NULL) return NULL;
  c->protocol = protocol == 5 ? MQTT_PROTOCOL_V5 : MQTT_PROTOCOL_V311;
  c->message_bytes_max = message_bytes_max;
  size_t packet = message_bytes_max + SG_PACKET_OVERHEAD;
  c->packet_bytes_max = packet > 268435455u ? 268435455u : (uint32_t)packet;  // MQTT's largest
  // On the wire a packet is a little larger (TLS records: at most 256 bytes per 16 KiB), and
  // the kernel may hold a little of the next one; generous, but far below what it bounds.
  c->guard_bytes = (uint64_t)c->packet_bytes_max + c->packet_bytes_max / 32 + 256 * 1024;
  c->messages_max = messages_max;
  c->mosq = mosquitto_new(client_id, clean_session != 0, c);
  if (c->mosq == NULL) { free(c); return NULL; }
  mosquitto_int_option(c->mosq, MOSQ_OPT_PROTOCOL_VERSION, c->protocol);
  mosquitto_connect_v5_callback_set(c->mosq, on_connect);
  mosquitto_disconnect_v5_callback_set(c->mosq, on_disconnect);
  mosquitto_publish_v5_callback_set(c->mosq, on_publish);
  mosquitto_message_v5_callback_set(c->mosq, on_message);
  mosquitto_subscribe_v5_callback_set(c->mosq, on_subscribe);
  mosquitto_log_callback_set(c->mosq, on_log);
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

// MQTT 5: CONNECT carries Maximum Packet Size (packet_bytes_max), so the broker never sends
// this client a larger packet (MQTT 5.0 3.1.2.11.4; Mosquitto drops such a message for this
// client, and the connection stays up). libmosquitto buffers a whole incoming packet before
// anything can look at it (2.0.11 lib/packet_mosq.c packet__read: "FIXME - client case for
// incoming message received from broker too large"), so this is the bound that holds before the
// memory is used. libmosquitto has no asynchronous connect that takes CONNECT properties:
// mosquitto_connect_bind_v5 stores them and then connects blocking. Called while the protocol
// is set to 3.1.1, it stores them and returns MOSQ_ERR_NOT_SUPPORTED before any I/O (2.0.11 to
// 2.0.20, lib/connect.c mosquitto__reconnect); mosquitto_connect_async then sends them.
static int store_connect_properties(sg_mqtt *c, const char *host, int port, int keepalive_seconds) {
  mosquitto_property *properties = NULL;
  int rc = mosquitto_property_add_int32(&properties, MQTT_PROP_MAXIMUM_PACKET_SIZE, c->packet_bytes_max);
  if (rc != MOSQ_ERR_SUCCESS) return rc;
  mosquitto_int_option(c->mosq, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311);
  rc = mosquitto_connect_bind_v5(c->mosq, host, port, keepalive_seconds, NULL, properties);
  mosquitto_int_option(c->mosq, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5);
  mosquitto_property_free_all(&properties);
  // Anything else means this libmosquitto changed: refuse rather than connect without the bound.
  return rc == MOSQ_ERR_NOT_SUPPORTED ? MOSQ_ERR_SUCCESS : (rc == MOSQ_ERR_SUCCESS ? MOSQ_ERR_UNKNOWN : rc);
}

uint32_t sg_mqtt_packet_bytes_max(const sg_mqtt *c) { return c->packet_bytes_max; }

int sg_mqtt_connect(sg_mqtt *c, const char *host, int port, int keepalive_seconds) {
  c->state = SG_MQTT_CONNECTING;
  c->reason = 0;
  c->received_at_packet = 0;
  c->packet_completed = 0;
  int rc = c->protocol == MQTT_PROTOCOL_V5 ? store_connect_properties(c, host, port, keepalive_seconds) : MOSQ_ERR_SUCCESS;
  if (rc == MOSQ_ERR_SUCCESS) rc = mosquitto_connect_async(c->mosq, host, port, keepalive_seconds);
  if (rc == MOSQ_ERR_CONN_PENDING) rc = MOSQ_ERR_SUCCESS;
  if (rc != MOSQ_ERR_SUCCESS) c->state = SG_MQTT_LOST;
  return rc;
}

int sg_mqtt_disconnect(sg_mqtt *c) { return mosquitto_disconnect(c->mosq); }

// Bytes the kernel has received on the TCP connection (TCP_INFO, Linux 4.1+); 0 when unknown.
static uint64_t bytes_received(int fd) {
  struct tcp_info info;
  socklen_t length = sizeof info;
  memset(&info, 0, sizeof info);
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) != 0) return 0;
  if (length < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof info.tcpi_bytes_received) return 0;
  return info.tcpi_bytes_received;
}

// The receive guard, for what Maximum Packet Size cannot bound: MQTT 3.1.1 (no such property),
// and a broker that ignores it. libmosquitto allocates a packet's whole announced length and
// fills it as bytes arrive, checking nothing. After each read step: when no packet completed
// since the last whole one and the connection has received more than a packet may take, the
// connection is dropped (its client is then destroyed, freeing the partial packet). Checked
// between read steps, so what one step reads can go past the bound before it trips.
static int receive_guard(sg_mqtt *c, int fd) {
  uint64_t received = bytes_received(fd);
  if (received == 0) return MOSQ_ERR_SUCCESS;
  if (c->packet_completed) {
    c->packet_completed = 0;
    c->received_at_packet = received;
    return MOSQ_ERR_SUCCESS;
  }
  if (received - c->received_at_packet <= c->guard_bytes) return MOSQ_ERR_SUCCESS;
  c->oversize_drops++;
  return MOSQ_ERR_OVERSIZE_PACKET;
}

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
  if (readable || handshaking) {
    rc = mosquitto_loop_read(c->mosq, 1);
    if (rc == MOSQ_ERR_SUCCESS) rc = receive_guard(c, fd);
  }
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
unsigned long sg_mqtt_oversize_drops(const sg_mqtt *c) { return c->oversize_drops; }
const char *sg_mqtt_strerror(int rc) { return mosquitto_strerror(rc); }
const char *sg_mqtt_connack_string(int rc, int protocol) {
  return protocol == 5 ? mosquitto_reason_string(rc) : mosquitto_connack_string(rc);
}
