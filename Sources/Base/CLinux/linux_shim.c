#define _GNU_SOURCE
#include "scangate_linux.h"

#include <sodium.h>
#include <stdarg.h>
#include <string.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <errno.h>
#include <time.h>
#include <stdlib.h>
#include <unistd.h>

long sg_base64_decode(const char *text, size_t length, uint8_t *out, size_t capacity) {
  size_t written = 0;
  const char *end = NULL;
  if (sodium_base642bin(out, capacity, text, length, NULL, &written, &end, sodium_base64_VARIANT_ORIGINAL) != 0) return -1;
  if (end != text + length) return -1;
  return (long)written;
}

void sg_sha256(const uint8_t *data, size_t size, uint8_t out[32]) {
  crypto_hash_sha256(out, data, (unsigned long long)size);
}

int sg_secure_compare(const uint8_t *a, const uint8_t *b, size_t size) {
  return sodium_memcmp(a, b, size);
}

int sg_sodium_init(void) { return sodium_init() < 0 ? -1 : 0; }

void sg_hmac_sha256(const uint8_t *key, size_t key_size, const uint8_t *data, size_t size, uint8_t out[32]) {
  crypto_auth_hmacsha256_state state;
  crypto_auth_hmacsha256_init(&state, key, key_size);
  crypto_auth_hmacsha256_update(&state, data, (unsigned long long)size);
  crypto_auth_hmacsha256_final(&state, out);
  sodium_memzero(&state, sizeof state);
}

int sg_kdf_derive(uint8_t *out, size_t out_size, uint64_t subkey_id, const char context[8], const uint8_t key[32]) {
  return crypto_kdf_derive_from_key(out, out_size, subkey_id, context, key);
}

void sg_random_bytes(uint8_t *out, size_t size) { randombytes_buf(out, size); }

int sg_pwhash_str(char out[128], const char *password, size_t size) {
  return crypto_pwhash_str(out, password, (unsigned long long)size, crypto_pwhash_OPSLIMIT_INTERACTIVE,
                           crypto_pwhash_MEMLIMIT_INTERACTIVE);
}

int sg_pwhash_verify(const char *hash, const char *password, size_t size) {
  return crypto_pwhash_str_verify(hash, password, (unsigned long long)size);
}

int sg_backup_keypair(uint8_t public_key[32], uint8_t secret_key[32], const char *passphrase, size_t size,
                      const uint8_t salt[16], uint64_t ops, size_t mem) {
  uint8_t seed[crypto_box_SEEDBYTES];
  if (ops < crypto_pwhash_OPSLIMIT_MIN || ops > crypto_pwhash_OPSLIMIT_MAX || mem < crypto_pwhash_MEMLIMIT_MIN ||
      mem > crypto_pwhash_MEMLIMIT_MAX)
    return -1;
  if (crypto_pwhash(seed, sizeof seed, passphrase, (unsigned long long)size, salt, (unsigned long long)ops, mem,
                    crypto_pwhash_ALG_ARGON2ID13) != 0)
    return -1;
  int rc = crypto_box_seed_keypair(public_key, secret_key, seed);
  sodium_memzero(seed, sizeof seed);
  return rc;
}

int sg_backup_seal(uint8_t *out, const uint8_t *data, size_t size, const uint8_t public_key[32]) {
  return crypto_box_seal(out, data, (unsigned long long)size, public_key);
}

int sg_backup_open(uint8_t *out, const uint8_t *sealed, size_t size, const uint8_t public_key[32],
                   const uint8_t secret_key[32]) {
  if (size < crypto_box_SEALBYTES) return -1;
  return crypto_box_seal_open(out, sealed, (unsigned long long)size, public_key, secret_key);
}

void sg_memzero(void *pointer, size_t size) { sodium_memzero(pointer, size); }

int sg_errno(void) { return errno; }
void sg_set_errno(int value) { errno = value; }

int sg_open(const char *path, int flags, unsigned mode) { return open(path, flags, (mode_t)mode); }
int sg_fcntl_int(int fd, int command, int argument) { return fcntl(fd, command, argument); }
int sg_ioctl(int fd, unsigned long request, void *argument) { return ioctl(fd, request, argument); }

int sg_reserve_blocks(int fd, int64_t length) { return fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, (off_t)length); }

int sg_epoll_open(void) { return epoll_create1(EPOLL_CLOEXEC); }

int sg_epoll_add_readable(int set, int fd) {
  struct epoll_event event = {.events = EPOLLIN, .data = {.fd = fd}};
  return epoll_ctl(set, EPOLL_CTL_ADD, fd, &event);
}

int sg_signalfd_open(void) {
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  sigaddset(&mask, SIGHUP);
  sigaddset(&mask, SIGUSR1);
  if (sigprocmask(SIG_BLOCK, &mask, NULL) != 0) return -1;
  return signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
}

int sg_signalfd_read(int fd) {
  struct signalfd_siginfo info;
  ssize_t n = read(fd, &info, sizeof info);
  if (n == (ssize_t)sizeof info) return (int)info.ssi_signo;
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
  return -1;
}

uint64_t sg_monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t sg_thread_cpu_ns(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int64_t sg_realtime_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec;
}

int64_t sg_realtime_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000ll + (int64_t)ts.tv_nsec;
}

static speed_t speed_of(unsigned baud) {
  switch (baud) {
  case 9600: return B9600;
  case 19200: return B19200;
  case 38400: return B38400;
  case 57600: return B57600;
  case 115200: return B115200;
  case 230400: return B230400;
  case 460800: return B460800;
  case 921600: return B921600;
  default: return 0;
  }
}

int sg_tty_configure_raw(int fd, unsigned baud) {
  speed_t speed = speed_of(baud);
  if (speed == 0) {
    errno = EINVAL;
    return -1;
  }
  struct termios t;
  if (tcgetattr(fd, &t) != 0) return -1;
  cfmakeraw(&t);
  t.c_cflag &= ~(CSTOPB | PARENB | CRTSCTS);
  t.c_cflag |= CS8 | CLOCAL | CREAD;
  t.c_iflag &= ~(IXON | IXOFF | IXANY);
  t.c_cc[VMIN] = 0;
  t.c_cc[VTIME] = 0;
  if (cfsetispeed(&t, speed) != 0 || cfsetospeed(&t, speed) != 0) return -1;
  return tcsetattr(fd, TCSANOW, &t);
}

int sg_peer_uid(int fd, uint32_t *uid) {
  struct ucred cred;
  socklen_t length = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) != 0) return -1;
  *uid = (uint32_t)cred.uid;
  return 0;
}

/* The address of the Unix socket at path; -1 (ENAMETOOLONG) when it does not fit. */
static int unix_address(const char *path, struct sockaddr_un *address) {
  memset(address, 0, sizeof *address);
  address->sun_family = AF_UNIX;
  if (strlen(path) >= sizeof address->sun_path) {
    errno = ENAMETOOLONG;
    return -1;
  }
  strcpy(address->sun_path, path);
  return 0;
}

/* Closes fd after a failed step and returns -1 with that step's errno. */
static int fail_closing(int fd) {
  int saved = errno;
  close(fd);
  errno = saved;
  return -1;
}

int sg_listen_unix(const char *path, unsigned mode) {
  struct sockaddr_un address;
  if (unix_address(path, &address) != 0) return -1;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (bind(fd, (struct sockaddr *)&address, sizeof address) != 0 || chmod(path, (mode_t)mode) != 0 || listen(fd, 16) != 0) {
    return fail_closing(fd);
  }
  return fd;
}

int sg_connect_unix(const char *path) {
  struct sockaddr_un address;
  if (unix_address(path, &address) != 0) return -1;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) return fail_closing(fd);
  return fd;
}

int sg_unix_answers(const char *path) {
  int fd = sg_connect_unix(path);
  if (fd < 0) return 0;
  close(fd);
  return 1;
}

int sg_tty_output_crlf(int fd) {
  struct termios t;
  if (tcgetattr(fd, &t) != 0) return -1;
  t.c_oflag |= OPOST | ONLCR;
  return tcsetattr(fd, TCSANOW, &t);
}

int sg_accept_nonblocking(int listener, struct sockaddr *address, socklen_t *length) {
  return accept4(listener, address, length, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

int sg_open_pty(char *slave_path, size_t capacity) {
  int master = posix_openpt(O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  if (master < 0) return -1;
  if (grantpt(master) != 0 || unlockpt(master) != 0 || ptsname_r(master, slave_path, capacity) != 0) {
    close(master);
    return -1;
  }
  return master;
}

// MARK: - Console peers (sock_diag)

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

int sg_sock_diag_open(void) {
  return socket(AF_NETLINK, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
}

static int sg_fill_endpoint(const struct sockaddr_storage *a, int family, __be16 *port, __be32 address[4]) {
  memset(address, 0, 16);
  if (family == AF_INET) {
    const struct sockaddr_in *s = (const struct sockaddr_in *)a;
    *port = s->sin_port;
    memcpy(address, &s->sin_addr, 4);
    return 0;
  }
  if (family == AF_INET6) {
    const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)a;
    *port = s->sin6_port;
    memcpy(address, &s->sin6_addr, 16);
    return 0;
  }
  errno = EAFNOSUPPORT;
  return -1;
}

int sg_tcp_peer_owner(int diag, int fd, uint32_t *uid) {
  static uint32_t sequence;
  struct sockaddr_storage local, peer;
  socklen_t local_length = sizeof local, peer_length = sizeof peer;
  if (getsockname(fd, (struct sockaddr *)&local, &local_length) != 0) return -1;
  if (getpeername(fd, (struct sockaddr *)&peer, &peer_length) != 0) return -1;
  if (local.ss_family != peer.ss_family) {
    errno = EAFNOSUPPORT;
    return -1;
  }
  struct {
    struct nlmsghdr header;
    struct inet_diag_req_v2 request;
  } message;
  memset(&message, 0, sizeof message);
  uint32_t seq = __atomic_add_fetch(&sequence, 1, __ATOMIC_RELAXED);
  message.header.nlmsg_len = sizeof message;
  message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  message.header.nlmsg_flags = NLM_F_REQUEST;
  message.header.nlmsg_seq = seq;
  message.request.sdiag_family = (uint8_t)local.ss_family;
  message.request.sdiag_protocol = IPPROTO_TCP;
  message.request.idiag_states = ~0u;
  // The socket we look for: its local end is our peer, its remote end is us.
  struct inet_diag_sockid *id = &message.request.id;
  if (sg_fill_endpoint(&peer, local.ss_family, &id->idiag_sport, id->idiag_src) != 0) return -1;
  if (sg_fill_endpoint(&local, local.ss_family, &id->idiag_dport, id->idiag_dst) != 0) return -1;
  id->idiag_cookie[0] = INET_DIAG_NOCOOKIE;
  id->idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  struct sockaddr_nl kernel;
  memset(&kernel, 0, sizeof kernel);
  kernel.nl_family = AF_NETLINK;
  ssize_t sent;
  do {
    sent = sendto(diag, &message, sizeof message, 0, (struct sockaddr *)&kernel, sizeof kernel);
  } while (sent < 0 && errno == EINTR);
  if (sent < 0) return -1;
  // The kernel answers inside sendto: the reply is queued already. Earlier replies left unread
  // (a lookup that failed half-way) are skipped by sequence number.
  union {
    struct nlmsghdr header;
    uint8_t bytes[2048];
  } reply;
  for (int attempt = 0; attempt < 4; attempt++) {
    ssize_t n;
    do {
      n = recv(diag, &reply, sizeof reply, MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    if (n < 0) return -1;
    struct nlmsghdr *h = &reply.header;
    if (!NLMSG_OK(h, (size_t)n) || h->nlmsg_seq != seq) continue;
    if (h->nlmsg_type == NLMSG_ERROR) {
      const struct nlmsgerr *e = NLMSG_DATA(h);
      if (h->nlmsg_len < NLMSG_LENGTH(sizeof *e)) break;
      if (e->error == -ENOENT) return SG_PEER_REMOTE;
      // Not EBADF or EFAULT: those mean a bug in the caller (the errno policy traps on them).
      errno = (e->error < 0 && e->error != -EBADF && e->error != -EFAULT) ? -e->error : EPROTO;
      return -1;
    }
    if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg))) break;
    const struct inet_diag_msg *m = NLMSG_DATA(h);
    // The kernel's lookup may fall back to a listener on the peer's port: only the exact
    // socket counts.
    if (m->idiag_family != local.ss_family || m->id.idiag_sport != id->idiag_sport || m->id.idiag_dport != id->idiag_dport
        || memcmp(m->id.idiag_src, id->idiag_src, 16) != 0 || memcmp(m->id.idiag_dst, id->idiag_dst, 16) != 0) {
      return SG_PEER_REMOTE;
    }
    if (m->idiag_state == TCP_TIME_WAIT || m->idiag_state == TCP_LISTEN || m->idiag_state == 12 /* NEW_SYN_RECV */
        || m->idiag_inode == 0) {
      return SG_PEER_UNOWNED;
    }
    *uid = m->idiag_uid;
    return SG_PEER_OWNED;
  }
  errno = EPROTO;
  return -1;
}
