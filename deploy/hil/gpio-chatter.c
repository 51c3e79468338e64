// A bouncing contact on a gpio-sim line, for the rig's guest: `gpio-chatter PULL N` writes N
// times to the line's sysfs `pull` attribute, "pull-up" and "pull-down" in turn starting with
// "pull-up" (an odd N ends pulled up: the input active), from one open descriptor, as fast as
// the guest runs. A shell loop opens the attribute once a write and under TCG takes 7-9 ms an
// edge; this makes the edges a contact's bounce makes: a fraction of a millisecond apart.
// Prints the span from the first write to the last in microseconds.
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: gpio-chatter PULL_ATTRIBUTE WRITES\n");
    return 2;
  }
  int count = atoi(argv[2]);
  if (count < 1) {
    fprintf(stderr, "gpio-chatter: WRITES must be at least 1\n");
    return 2;
  }
  int fd = open(argv[1], O_WRONLY);
  if (fd < 0) {
    perror(argv[1]);
    return 1;
  }
  static const char *const pulls[2] = {"pull-up", "pull-down"};
  long long first = 0, last = 0;
  for (int i = 0; i < count; i++) {
    const char *p = pulls[i % 2];
    long long t = now_us();
    if (pwrite(fd, p, strlen(p), 0) != (ssize_t)strlen(p)) {
      perror("write");
      return 1;
    }
    if (i == 0) first = t;
    last = t;
  }
  close(fd);
  printf("%lld\n", last - first);
  return 0;
}
