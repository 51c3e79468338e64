// A USB numeric keypad for the rig's guest, made through /dev/uinput: `uinput-keypad GAP_MS
// HOLD_MS KEY...` creates "ScanGate test keypad" (KEY_KP0..KEY_KP9, KEY_KPENTER, KEY_BACKSPACE),
// waits until its event node is in /dev/input, prints "ready /dev/input/eventN", then waits for
// SIGUSR1 (the listener is up; 60 s at most) and types KEY... (0-9, enter, backspace), each as a
// press, one autorepeat and a release, GAP_MS apart; it prints "typed", waits HOLD_MS, destroys the
// device (an unplug, as the reader sees it) and prints "destroyed". `uinput-keypad --buttons`
// makes "ScanGate test buttons" instead, with Enter and Backspace and no digit keys (not a keypad),
// prints "ready ..." and destroys it at SIGUSR1 (or after 60 s).
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/uinput.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0 && errno == EINTR) {}
}

static void emit(int fd, int type, int code, int value) {
  struct input_event ev;
  memset(&ev, 0, sizeof ev);
  ev.type = type;
  ev.code = code;
  ev.value = value;
  if (write(fd, &ev, sizeof ev) != sizeof ev) {
    perror("uinput-keypad: write");
    exit(1);
  }
}

static int code_of(const char *key) {
  static const int digits[10] = {KEY_KP0, KEY_KP1, KEY_KP2, KEY_KP3, KEY_KP4,
                                 KEY_KP5, KEY_KP6, KEY_KP7, KEY_KP8, KEY_KP9};
  if (strlen(key) == 1 && key[0] >= '0' && key[0] <= '9') return digits[key[0] - '0'];
  if (strcmp(key, "enter") == 0) return KEY_KPENTER;
  if (strcmp(key, "backspace") == 0) return KEY_BACKSPACE;
  return -1;
}

int main(int argc, char **argv) {
  int buttons = argc == 2 && strcmp(argv[1], "--buttons") == 0;
  if (argc < 3 && !buttons) {
    fprintf(stderr, "usage: uinput-keypad GAP_MS HOLD_MS KEY... | uinput-keypad --buttons\n");
    return 2;
  }
  long gap = buttons ? 0 : atol(argv[1]), hold = buttons ? 0 : atol(argv[2]);
  for (int i = 3; i < argc; i++)
    if (code_of(argv[i]) < 0) {
      fprintf(stderr, "uinput-keypad: unknown key '%s' (0-9, enter, backspace)\n", argv[i]);
      return 2;
    }
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  sigprocmask(SIG_BLOCK, &usr1, NULL);  // before "ready": the signal waits for sigtimedwait

  int fd = open("/dev/uinput", O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    perror("uinput-keypad: /dev/uinput");
    return 1;
  }
  ioctl(fd, UI_SET_EVBIT, EV_KEY);
  ioctl(fd, UI_SET_EVBIT, EV_SYN);
  ioctl(fd, UI_SET_EVBIT, EV_REP);
  for (int d = 0; d <= 9 && !buttons; d++) {
    char k[2] = {(char)('0' + d), 0};
    ioctl(fd, UI_SET_KEYBIT, code_of(k));
  }
  ioctl(fd, UI_SET_KEYBIT, KEY_KPENTER);
  ioctl(fd, UI_SET_KEYBIT, KEY_BACKSPACE);
  struct uinput_setup setup;
  memset(&setup, 0, sizeof setup);
  setup.id.bustype = BUS_USB;
  setup.id.vendor = 0x1209;  // pid.codes' test vendor
  setup.id.product = 0x0001;
  snprintf(setup.name, UINPUT_MAX_NAME_SIZE, buttons ? "ScanGate test buttons" : "ScanGate test keypad");
  if (ioctl(fd, UI_DEV_SETUP, &setup) != 0 || ioctl(fd, UI_DEV_CREATE) != 0) {
    perror("uinput-keypad: UI_DEV_SETUP/UI_DEV_CREATE");
    return 1;
  }
  // /sys/devices/virtual/input/inputN/eventM, and devtmpfs's /dev/input/eventM.
  char sysname[64] = {0}, dir[160], node[300] = {0};
  if (ioctl(fd, UI_GET_SYSNAME(sizeof sysname), sysname) < 0) {
    perror("uinput-keypad: UI_GET_SYSNAME");
    return 1;
  }
  snprintf(dir, sizeof dir, "/sys/devices/virtual/input/%s", sysname);
  for (int tries = 0; tries < 500 && !node[0]; tries++) {
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
      if (strncmp(e->d_name, "event", 5) == 0) {
        struct stat st;
        snprintf(node, sizeof node, "/dev/input/%s", e->d_name);
        if (stat(node, &st) != 0 || !S_ISCHR(st.st_mode)) node[0] = 0;
      }
    if (d) closedir(d);
    if (!node[0]) sleep_ms(20);
  }
  if (!node[0]) {
    fprintf(stderr, "uinput-keypad: no event node for %s after 10 s\n", dir);
    return 1;
  }
  printf("ready %s\n", node);
  fflush(stdout);

  struct timespec wait = {60, 0};
  if (sigtimedwait(&usr1, NULL, &wait) != SIGUSR1) fprintf(stderr, "uinput-keypad: no SIGUSR1 in 60 s: typing anyway\n");
  for (int i = 3; i < argc && !buttons; i++) {
    int code = code_of(argv[i]);
    emit(fd, EV_KEY, code, 1);
    emit(fd, EV_SYN, SYN_REPORT, 0);
    emit(fd, EV_KEY, code, 2);  // an autorepeat: not another press
    emit(fd, EV_SYN, SYN_REPORT, 0);
    emit(fd, EV_KEY, code, 0);
    emit(fd, EV_SYN, SYN_REPORT, 0);
    sleep_ms(gap);
  }
  printf("typed\n");
  fflush(stdout);
  sleep_ms(hold);
  ioctl(fd, UI_DEV_DESTROY);
  close(fd);
  printf("destroyed\n");
  fflush(stdout);
  return 0;
}
