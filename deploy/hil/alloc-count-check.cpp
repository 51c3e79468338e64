// Proves deploy/hil/alloc-count.c counts, through the same FIFO the rig reads the service with:
// a second thread makes exactly 100 each of malloc, calloc, realloc, posix_memalign,
// aligned_alloc and operator new (600 allocations) and frees them all (600 frees) between two
// snapshots. Run it with LD_PRELOAD=alloc-count.so ALLOC_COUNT_FIFO=F ALLOC_COUNT_OUT=O.
// Prints "allocations A frees F" (the differences) and exits 0 only when they are 600 and 600.
// Built with -O0: the compiler may drop an unused malloc/free pair.
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <new>

static void *volatile slots[600];
static pthread_barrier_t start;

static void *work(void *) {
  pthread_barrier_wait(&start);
  int n = 0;
  for (int i = 0; i < 100; i++) slots[n++] = malloc(32);
  for (int i = 0; i < 100; i++) slots[n++] = calloc(4, 8);
  for (int i = 0; i < 100; i++) slots[n++] = realloc(nullptr, 48);
  for (int i = 0; i < 100; i++) { void *p = nullptr; if (posix_memalign(&p, 64, 64) == 0) slots[n++] = p; }
  for (int i = 0; i < 100; i++) slots[n++] = aligned_alloc(64, 128);
  for (int i = 0; i < 100; i++) slots[n++] = ::operator new(40);
  for (int i = 0; i < 500; i++) free(slots[i]);
  for (int i = 500; i < 600; i++) ::operator delete(slots[i]);
  return nullptr;
}

// Asks the counter's thread for a line and waits for it (raw system calls only: no allocation).
static int lines(const char *path) {
  char buffer[4096];
  int fd = open(path, O_RDONLY), count = 0;
  if (fd < 0) return 0;
  for (ssize_t n; (n = read(fd, buffer, sizeof buffer)) > 0;)
    for (ssize_t i = 0; i < n; i++) count += buffer[i] == '\n';
  close(fd);
  return count;
}
static bool snapshot(const char *fifo, const char *out, int want) {
  int fd = open(fifo, O_WRONLY);
  if (fd < 0 || write(fd, "s", 1) != 1) return false;
  close(fd);
  timespec pause = {0, 10 * 1000 * 1000};
  for (int i = 0; i < 500; i++) {
    if (lines(out) >= want) return true;
    nanosleep(&pause, nullptr);
  }
  return false;
}

int main() {
  const char *fifo = getenv("ALLOC_COUNT_FIFO"), *out = getenv("ALLOC_COUNT_OUT");
  if (fifo == nullptr || out == nullptr) { fprintf(stderr, "ALLOC_COUNT_FIFO and ALLOC_COUNT_OUT must be set\n"); return 2; }
  int before = lines(out);
  pthread_barrier_init(&start, nullptr, 2);
  pthread_t thread;
  pthread_create(&thread, nullptr, work, nullptr);
  if (!snapshot(fifo, out, before + 1)) { fprintf(stderr, "no reply from the counter (is it preloaded?)\n"); return 1; }
  pthread_barrier_wait(&start);
  pthread_join(thread, nullptr);
  if (!snapshot(fifo, out, before + 2)) { fprintf(stderr, "no second reply from the counter\n"); return 1; }
  FILE *f = fopen(out, "r");
  unsigned long long a[2] = {0, 0}, fr[2] = {0, 0}, b;
  char line[256];
  for (int i = 0; fgets(line, sizeof line, f) != nullptr; i++)
    if (i >= before && i < before + 2) sscanf(line, "allocations %llu frees %llu bytes %llu", &a[i - before], &fr[i - before], &b);
  fclose(f);
  printf("allocations %llu frees %llu\n", a[1] - a[0], fr[1] - fr[0]);
  return a[1] - a[0] == 600 && fr[1] - fr[0] == 600 ? 0 : 1;
}
