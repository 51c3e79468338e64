// Linux and libsodium facilities Swift cannot reach directly (macros, variadics, headers the
// Glibc module leaves out), as fixed-arity functions.
#ifndef SCANGATE_LINUX_H
#define SCANGATE_LINUX_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <malloc.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <termios.h>

/// SHA-256 of `size` bytes into `out` (32 bytes), libsodium's crypto_hash_sha256.
void sg_sha256(const uint8_t *data, size_t size, uint8_t out[32]);
/// Standard base64 (with padding) into `out`; the decoded length, or -1 when `text` is not
/// base64 or does not fit (libsodium's sodium_base642bin).
long sg_base64_decode(const char *text, size_t length, uint8_t *out, size_t capacity);
/// Constant-time comparison of two equal-length buffers (libsodium's sodium_memcmp): 0 if equal.
int sg_secure_compare(const uint8_t *a, const uint8_t *b, size_t size);
/// Starts libsodium; returns -1 when it cannot.
int sg_sodium_init(void);
/// HMAC-SHA-256 of `size` bytes under a `key_size`-byte key into `out` (32 bytes),
/// libsodium's crypto_auth_hmacsha256 (init/update/final, so any key length).
void sg_hmac_sha256(const uint8_t *key, size_t key_size, const uint8_t *data, size_t size, uint8_t out[32]);
/// libsodium's crypto_kdf_derive_from_key (BLAKE2b): subkey `subkey_id` of `out_size` (16-64) bytes
/// from the 32-byte `key` under an 8-byte `context`; 0 on success.
int sg_kdf_derive(uint8_t *out, size_t out_size, uint64_t subkey_id, const char context[8], const uint8_t key[32]);
/// libsodium's crypto_pwhash_str: an Argon2id hash string ("$argon2id$v=19$m=65536,t=2,p=1$...",
/// NUL-terminated, at most 128 bytes) of the password, at the interactive limits (64 MiB, 2 passes).
int sg_pwhash_str(char out[128], const char *password, size_t size);
/// 0 when `password` matches the hash string `hash`.
int sg_pwhash_verify(const char *hash, const char *password, size_t size);
/// A backup archive's key pair (docs/backup.md): an X25519 pair (crypto_box_seed_keypair) from the
/// 32-byte seed Argon2id13 makes of the passphrase and the 16-byte salt (crypto_pwhash, `ops`
/// passes over `mem` bytes); 0 on success, -1 when the limits are out of libsodium's range or
/// memory is short.
int sg_backup_keypair(uint8_t public_key[32], uint8_t secret_key[32], const char *passphrase, size_t size,
                      const uint8_t salt[16], uint64_t ops, size_t mem);
/// crypto_box_seal: `size` bytes sealed to `public_key` into `out` (`size` + 48 bytes); 0 on success.
int sg_backup_seal(uint8_t *out, const uint8_t *data, size_t size, const uint8_t public_key[32]);
/// crypto_box_seal_open: `size` sealed bytes (at least 48) opened into `out` (`size` - 48 bytes);
/// 0 when they were sealed to this pair and not changed since, -1 otherwise.
int sg_backup_open(uint8_t *out, const uint8_t *sealed, size_t size, const uint8_t public_key[32],
                   const uint8_t secret_key[32]);
/// Fills `out` with `size` bytes from the kernel's CSPRNG (libsodium's randombytes_buf).
void sg_random_bytes(uint8_t *out, size_t size);
/// Zeroes `size` bytes so the compiler cannot drop the write (libsodium's sodium_memzero).
void sg_memzero(void *pointer, size_t size);

/// The calling thread's errno.
int sg_errno(void);
void sg_set_errno(int value);

/// open(2) with a mode (open is variadic in C).
int sg_open(const char *path, int flags, unsigned mode);
/// fcntl(2) F_GETFL / F_SETFL with an int argument.
int sg_fcntl_int(int fd, int command, int argument);
/// ioctl(2) with a pointer argument.
int sg_ioctl(int fd, unsigned long request, void *argument);

/// A signalfd for SIGINT, SIGTERM and SIGHUP (and SIGUSR1), which are blocked for the process.
int sg_signalfd_open(void);
/// Reads one pending signal from a signalfd: returns the signal number, 0 if none, -1 on error.
int sg_signalfd_read(int fd);

/// An epoll set (close-on-exec) for descriptors polled as one (two cameras): returns it, or -1 with errno.
int sg_epoll_open(void);
/// Adds `fd` to epoll set `set`, level-triggered for input (epoll_event is packed on x86-64: kept in C).
/// Returns 0, or -1 with errno.
int sg_epoll_add_readable(int set, int fd);

/// Allocates a file's blocks for its first `length` bytes without changing its size
/// (fallocate FALLOC_FL_KEEP_SIZE): later writes there need no new blocks. 0, or -1 with errno.
int sg_reserve_blocks(int fd, int64_t length);

/// CLOCK_MONOTONIC in nanoseconds.
uint64_t sg_monotonic_ns(void);
/* CLOCK_THREAD_CPUTIME_ID: the CPU time the calling thread has used (0 if unreadable). */
uint64_t sg_thread_cpu_ns(void);
/// CLOCK_REALTIME in seconds since the epoch, and nanoseconds since the epoch.
int64_t sg_realtime_seconds(void);
int64_t sg_realtime_ns(void);

/// Sets a tty raw 8N1 at `baud` (a plain number such as 115200). Returns 0, or -1 with errno.
int sg_tty_configure_raw(int fd, unsigned baud);
/* Output post-processing on a raw port: each LF goes out as CR LF (a serial terminal's line
   ending; the console's port only, never a binary protocol's). */
int sg_tty_output_crlf(int fd);
/* The user owning the other end of a connected Unix socket (SO_PEERCRED). */
int sg_peer_uid(int fd, uint32_t *uid);
/* A non-blocking Unix stream socket listening at path (which must not exist), mode set on it. */
int sg_listen_unix(const char *path, unsigned mode);
/* A blocking connection to the Unix stream socket at path. */
int sg_connect_unix(const char *path);
/* 1 when a process accepts connections on the Unix socket at path, else 0. */
int sg_unix_answers(const char *path);



#include <sys/socket.h>
/// accept4(2) with SOCK_NONBLOCK | SOCK_CLOEXEC (a GNU extension the Glibc module hides).
int sg_accept_nonblocking(int listener, struct sockaddr *address, socklen_t *length);

/// Opens a pseudo-terminal pair's master side (non-blocking) and writes the slave's path:
/// a serial port stand-in for tests. Returns the master fd, or -1.
int sg_open_pty(char *slave_path, size_t capacity);
#include "scangate_rs485.h"
#endif

// Console peers: who owns the other end of a TCP connection from this host (docs/console.md).
#ifndef SCANGATE_LINUX_PEER_OWNER_H
#define SCANGATE_LINUX_PEER_OWNER_H
#include <stdint.h>
/// Opens a NETLINK_SOCK_DIAG socket (non-blocking, close-on-exec). Returns -1 with errno when
/// the kernel or a seccomp filter (systemd's RestrictAddressFamilies) refuses AF_NETLINK.
int sg_sock_diag_open(void);
/// What `sg_tcp_peer_owner` found.
enum {
  SG_PEER_REMOTE = 0,     // no socket on this host is the other end: a peer on the network
  SG_PEER_OWNED = 1,      // a socket on this host, held open by a process of user *uid
  SG_PEER_UNOWNED = 2,    // a socket on this host that no process holds any more (closed)
};
/// The owner of the other end of the accepted TCP connection `fd`, asked of the kernel through
/// `diag` (sock_diag): one exact lookup of the socket whose local address and port are `fd`'s
/// peer and whose remote ones are `fd`'s own. A closed end (TIME_WAIT, FIN_WAIT2 or orphaned:
/// the kernel reports uid 0 and inode 0 for those) is SG_PEER_UNOWNED, never user 0. Returns an
/// SG_PEER_ value, or -1 with errno. Bounded: one request, at most 4 replies read, no waiting.
int sg_tcp_peer_owner(int diag, int fd, uint32_t *uid);
#endif
