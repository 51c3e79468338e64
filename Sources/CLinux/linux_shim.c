#define _GNU_SOURCE
#include "scangate_linux.h"

#include <sodium.h>
#include <stdarg.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <stdlib.h>
#include <unistd.h>

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

void sg_random_bytes(uint8_t *out, size_t size) { randombytes_buf(out, size); }

void sg_memzero(void *pointer, size_t size) { sodium_memzero(pointer, size); }

int sg_errno(void) { return errno; }
void sg_set_errno(int value) { errno = value; }

int sg_open(const char *path, int flags, unsigned mode) { return open(path, flags, (mode_t)mode); }
int sg_fcntl_int(int fd, int command, int argument) { return fcntl(fd, command, argument); }
int sg_ioctl(int fd, unsigned long request, void *argument) { return ioctl(fd, request, argument); }

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
