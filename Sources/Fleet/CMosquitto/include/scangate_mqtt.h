// MQTT for Swift through libmosquitto: one client handle that the fleet link's thread drives
// with sg_mqtt_loop. libmosquitto's callbacks land in the handle's own queues (acknowledged
// message ids, received messages, connection state), which the Swift side drains after each
// loop: no C callback crosses into Swift.
#ifndef SCANGATE_MQTT_H
#define SCANGATE_MQTT_H
#include <stddef.h>
#include <stdint.h>

typedef struct sg_mqtt sg_mqtt;

/// Connection states (sg_mqtt_state).
enum { SG_MQTT_CONNECTING = 0, SG_MQTT_CONNECTED = 1, SG_MQTT_REFUSED = 2, SG_MQTT_LOST = 3 };

/// A received message: the copy is the caller's until sg_mqtt_message_free.
typedef struct sg_mqtt_message {
  char *topic;
  unsigned char *payload;
  int payload_len;
  int qos;
  int retain;
  struct sg_mqtt_message *next;
} sg_mqtt_message;

/// The library version as major*1000000 + minor*1000 + revision.
int sg_mqtt_library_version(void);
/// A client: `protocol` 4 (MQTT 3.1.1) or 5; messages over `message_bytes_max` are dropped
/// (counted) and at most `messages_max` wait to be taken. `clean_session` 0 keeps the
/// broker's session (subscriptions, queued messages) across connections. NULL on failure.
sg_mqtt *sg_mqtt_new(const char *client_id, int protocol, size_t message_bytes_max, int messages_max, int clean_session);
void sg_mqtt_free(sg_mqtt *client);
/// TLS with a CA file (the broker's certificate is verified, hostname included) and, when both
/// are non-empty, a client certificate and key. Returns a MOSQ_ERR code.
int sg_mqtt_tls(sg_mqtt *client, const char *ca_file, const char *cert_file, const char *key_file);
/// The last will (QoS 1).
int sg_mqtt_will(sg_mqtt *client, const char *topic, const void *payload, int length, int retain);
int sg_mqtt_credentials(sg_mqtt *client, const char *username, const char *password);
/// Starts connecting without blocking; sg_mqtt_loop completes it. Under MQTT 5 the CONNECT
/// carries Maximum Packet Size = sg_mqtt_packet_bytes_max: the broker sends nothing larger.
int sg_mqtt_connect(sg_mqtt *client, const char *host, int port, int keepalive_seconds);
/// The largest packet the client takes: message_bytes_max plus room for headers and topic.
uint32_t sg_mqtt_packet_bytes_max(const sg_mqtt *client);
/// Sends DISCONNECT (the broker then drops the will). Returns a MOSQ_ERR code.
int sg_mqtt_disconnect(sg_mqtt *client);
/// Runs network I/O for at most `timeout_ms`. Returns a MOSQ_ERR code (0 while healthy).
int sg_mqtt_loop(sg_mqtt *client, int timeout_ms);
int sg_mqtt_state(const sg_mqtt *client);
/// The CONNACK's return or reason code (0: accepted), or the disconnect's reason.
int sg_mqtt_reason(const sg_mqtt *client);
int sg_mqtt_publish(
    sg_mqtt *client, const char *topic, const void *payload, int length, int qos, int retain, int *mid);
/// Subscribes; under MQTT 5 with "retain as published" (the retain flag survives live delivery).
int sg_mqtt_subscribe(sg_mqtt *client, const char *topic, int qos);
/// An acknowledged publish (PUBACK): its id and reason code (>= 128 under MQTT 5: refused).
/// Returns 1 when one was taken, 0 when none waits.
int sg_mqtt_take_ack(sg_mqtt *client, int *mid, int *reason);
/// The oldest received message, or NULL.
sg_mqtt_message *sg_mqtt_take_message(sg_mqtt *client);
void sg_mqtt_message_free(sg_mqtt_message *message);
/// Messages dropped for size or a full queue; acknowledgements lost to a full ring.
unsigned long sg_mqtt_dropped_messages(const sg_mqtt *client);
unsigned long sg_mqtt_dropped_acks(const sg_mqtt *client);
/// Connections dropped because more than a packet's worth arrived without a whole packet
/// (MQTT 3.1.1, or a broker that ignores Maximum Packet Size): what libmosquitto buffered of it
/// is freed with the client.
unsigned long sg_mqtt_oversize_drops(const sg_mqtt *client);
/// libmosquitto's text for an error code, and for a CONNACK code.
const char *sg_mqtt_strerror(int rc);
const char *sg_mqtt_connack_string(int rc, int protocol);
#endif
