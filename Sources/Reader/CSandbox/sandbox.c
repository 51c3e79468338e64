// The decoder worker's process boundary (scangate_sandbox.h). docs/decoder.md, "The decoder
// worker", says what the worker may do and why.
#define _GNU_SOURCE
#include "scangate_sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

int sg_sb_memfd(const char *name, size_t bytes) {
  int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -1;
  // Sealed at its size: nobody holding it (a worker before its lockdown) can shrink it under
  // the service's mapping, which would turn the service's next read into SIGBUS.
  if (ftruncate(fd, (off_t)bytes) != 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

void *sg_sb_map_shared(int fd, size_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  return p == MAP_FAILED ? NULL : p;
}

void sg_sb_unmap(void *address, size_t bytes) {
  if (address != NULL) munmap(address, bytes);
}

int sg_sb_channel(int fds[2]) {
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) return -1;
  if (fcntl(fds[0], F_SETFL, O_NONBLOCK) != 0) {
    int saved = errno;
    close(fds[0]);
    close(fds[1]);
    errno = saved;
    return -1;
  }
  return 0;
}

int sg_sb_channel_send(int fd) {
  uint8_t byte = 1;
  for (;;) {
    ssize_t n = send(fd, &byte, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n == 1) return 1;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    return -1;
  }
}

int sg_sb_spawn(const char *path, char *const argv[], char *const envp[], int memory_fd, int channel_fd, pid_t *pid) {
  // Copies above the targets first, so one dup2 can never overwrite a source the next needs.
  int sources[2] = {memory_fd, channel_fd};
  int high[2] = {-1, -1};
  int rc = 0;
  for (int i = 0; i < 2; i++) {
    high[i] = fcntl(sources[i], F_DUPFD_CLOEXEC, 16);
    if (high[i] < 0) {
      rc = errno;
      goto out;
    }
  }
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  if ((rc = posix_spawn_file_actions_init(&actions)) != 0) goto out;
  if ((rc = posix_spawnattr_init(&attributes)) != 0) {
    posix_spawn_file_actions_destroy(&actions);
    goto out;
  }
  for (int i = 0; i < 2 && rc == 0; i++) rc = posix_spawn_file_actions_adddup2(&actions, high[i], SG_SB_WORKER_MEMORY_FD + i);
  // Nothing of the service's crosses: no GPIO line, socket, log or key file descriptor.
  if (rc == 0) rc = posix_spawn_file_actions_addclosefrom_np(&actions, SG_SB_WORKER_CHANNEL_FD + 1);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  if (rc == 0) rc = posix_spawnattr_setsigmask(&attributes, &none);
  if (rc == 0) rc = posix_spawnattr_setsigdefault(&attributes, &all);
  if (rc == 0) rc = posix_spawnattr_setpgroup(&attributes, 0);
  if (rc == 0)
    rc = posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  if (rc == 0) rc = posix_spawn(pid, path, &actions, &attributes, argv, envp);
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
out:
  for (int i = 0; i < 2; i++)
    if (high[i] >= 0) close(high[i]);
  return rc;
}

static int allow(scmp_filter_ctx ctx, int call) { return seccomp_rule_add(ctx, SCMP_ACT_ALLOW, call, 0); }

int sg_sb_lockdown(int channel_fd) {
  if (channel_fd < 0) return -EINVAL;
  // No descriptor but the channel: no stdio, no memory file (its mapping stays).
  if (channel_fd > 0 && close_range(0, (unsigned)channel_fd - 1, 0) != 0) return -errno;
  if (close_range((unsigned)channel_fd + 1, ~0U, 0) != 0) return -errno;
  // A crash ends the process with its own signal: no handler (the Swift runtime's backtracer)
  // runs code in a process that has just faulted on hostile input.
  const int crashes[] = {SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE, SIGTRAP, SIGSYS};
  for (size_t i = 0; i < sizeof crashes / sizeof crashes[0]; i++) signal(crashes[i], SIG_DFL);
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -errno;
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
  if (ctx == NULL) return -ENOMEM;
  int rc = 0;
  // The IPC: a byte in (a request), a byte out (done), on the channel only.
  rc |= seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(read), 1, SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)channel_fd));
  rc |= seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(write), 1, SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)channel_fd));
  // A runtime's last words (a Swift trap writes its message to stderr first): descriptor 2 is
  // closed, so the write fails (EBADF) and the trap goes on to its own signal.
  rc |= seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(write), 1, SCMP_A0(SCMP_CMP_EQ, 2));
  // Memory: the engine's arena is mapped before the lockdown; the C library's heap (an arena
  // overflow falls back to malloc) may still grow and shrink, never executable.
  rc |= allow(ctx, SCMP_SYS(brk));
  rc |= seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
  rc |= seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
  rc |= allow(ctx, SCMP_SYS(munmap));
  rc |= allow(ctx, SCMP_SYS(mremap));
  rc |= allow(ctx, SCMP_SYS(madvise));
  // Locks of the C++ and Swift runtimes (uncontended in one thread, but allowed), the clock the
  // strategy measures its budget on (normally the vDSO: no call at all), the way out.
  rc |= allow(ctx, SCMP_SYS(futex));
  rc |= allow(ctx, SCMP_SYS(clock_gettime));
  rc |= allow(ctx, SCMP_SYS(exit));
  rc |= allow(ctx, SCMP_SYS(exit_group));
  rc |= allow(ctx, SCMP_SYS(rt_sigreturn));
  rc |= allow(ctx, SCMP_SYS(restart_syscall));
  // abort() and a Swift trap raise SIGABRT/SIGTRAP on this process: a crash then reads as one
  // (SIGABRT) in the service's journal rather than as a forbidden call. Only to itself.
  rc |= allow(ctx, SCMP_SYS(rt_sigprocmask));
  rc |= allow(ctx, SCMP_SYS(getpid));
  rc |= allow(ctx, SCMP_SYS(gettid));
  // SIGABRT only: a worker able to stop itself (SIGSTOP) would be taken as starved by a loaded
  // machine and kept past its deadline (up to the wall cap).
  rc |= seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 2, SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)getpid()),
                         SCMP_A2(SCMP_CMP_EQ, (scmp_datum_t)SIGABRT));
  // 32-bit ARM (Raspberry Pi OS armhf) names some of these differently; where a name does not
  // exist on this architecture libseccomp refuses the rule, which changes nothing.
  (void)seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap2), 1, SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
  (void)allow(ctx, SCMP_SYS(clock_gettime64));
  (void)allow(ctx, SCMP_SYS(futex_time64));
  // Every thread of the process, not only this one: a library's helper thread (libcamera's
  // LTTng listener sleeps in a futex for the process's lifetime) must not be a way around it.
  rc |= seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
  if (rc != 0) {
    seccomp_release(ctx);
    return -EINVAL;
  }
  rc = seccomp_load(ctx);
  seccomp_release(ctx);
  return rc;
}

int sg_sb_die_with_parent(pid_t expected_parent) {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) return -1;
  return getppid() == expected_parent ? 0 : -1;
}

int sg_sb_reap(pid_t pid, int *how) {
  int status = 0;
  pid_t r = waitpid(pid, &status, WNOHANG);
  if (r < 0) return -1;
  if (r == 0) return 0;
  *how = WIFSIGNALED(status) ? WTERMSIG(status) : 256 + WEXITSTATUS(status);
  return 1;
}

int sg_sb_kill(pid_t pid) { return kill(pid, SIGKILL); }

int sg_sb_runnable(pid_t pid) {
  char path[40], buffer[256];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n;
  do { n = read(fd, buffer, sizeof buffer - 1); } while (n < 0 && errno == EINTR);
  close(fd);
  if (n <= 0) return -1;
  buffer[n] = 0;
  const char *paren = strrchr(buffer, ')');  // the command name may hold spaces and parentheses
  if (!paren || paren[1] != ' ' || !paren[2]) return -1;
  char state = paren[2];
  return state == 'R' || state == 'D' || state == 'T' ? 1 : 0;
}

int64_t sg_sb_cpu_ns(pid_t pid) {
  clockid_t clock;
  struct timespec t;
  if (clock_getcpuclockid(pid, &clock) != 0 || clock_gettime(clock, &t) != 0) return -1;
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int sg_sb_word_aligned(const void *word) { return ((uintptr_t)word & (_Alignof(uint32_t) - 1)) == 0; }

void sg_sb_store_release(uint32_t *word, uint32_t value) {
  if (!sg_sb_word_aligned(word)) abort();
  __atomic_store_n(word, value, __ATOMIC_RELEASE);
}

uint32_t sg_sb_load_acquire(const uint32_t *word) {
  if (!sg_sb_word_aligned(word)) abort();
  return __atomic_load_n(word, __ATOMIC_ACQUIRE);
}

int sg_sb_char_unsigned(void) { return (char)0xFF > 0; }

int sg_sb_try_forbidden_open(void) { return open("/etc/hostname", O_RDONLY | O_CLOEXEC); }

const char *sg_sb_signal_name(int signal) {
  switch (signal) {
  case SIGSEGV: return "SIGSEGV";
  case SIGABRT: return "SIGABRT";
  case SIGBUS: return "SIGBUS";
  case SIGFPE: return "SIGFPE";
  case SIGILL: return "SIGILL";
  case SIGSYS: return "SIGSYS";
  case SIGKILL: return "SIGKILL";
  case SIGTRAP: return "SIGTRAP";
  case SIGTERM: return "SIGTERM";
  case SIGPIPE: return "SIGPIPE";
  default: return "signal";
  }
}
