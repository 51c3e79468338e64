// The decoder worker's process boundary: shared memory, spawning, the seccomp lockdown and the
// memory ordering of the shared slots. One call per function; the policy (when to spawn, when to
// kill) lives in Swift (ScanCore.DecoderSupervisor, ScanLinux.DecoderWorkers).
#ifndef SCANGATE_SANDBOX_H
#define SCANGATE_SANDBOX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The descriptors a worker finds at start (the spawn puts them there; everything else is closed):
/// its shared memory, and its end of the channel (a stream socket pair: a byte each way per
/// request; the service's end reads POLLHUP when the worker dies, and the service's sends use
/// MSG_NOSIGNAL, so a worker dying mid-request can never raise SIGPIPE in the service).
enum { SG_SB_WORKER_MEMORY_FD = 3, SG_SB_WORKER_CHANNEL_FD = 4 };

/// An anonymous shared-memory file of `bytes` (memfd, close-on-exec, its size sealed). Returns
/// the descriptor, or -1 with errno set.
int sg_sb_memfd(const char *name, size_t bytes);

/// Maps `bytes` of `fd` shared, read-write, and touches every page (resident before the first
/// frame). Returns NULL with errno set on failure.
void *sg_sb_map_shared(int fd, size_t bytes);
void sg_sb_unmap(void *address, size_t bytes);

/// A close-on-exec AF_UNIX stream socket pair; `fds[0]` (the service's end) is non-blocking.
/// 0 or -1 (errno).
int sg_sb_channel(int fds[2]);

/// One byte to the worker on the service's end, never blocking, never SIGPIPE. 1, 0 (would
/// block) or -1 (errno: the worker is gone).
int sg_sb_channel_send(int fd);

/// Starts `path` with `argv` and `envp`: `memory_fd` and `channel_fd` become the child's
/// descriptors 3 and 4 and every other descriptor is closed in the child before it runs; signal
/// mask empty, default dispositions, a process group of its own (a terminal's ^C is the
/// service's to handle). The parent's copies stay open. Returns 0 and `*pid`, or an errno.
int sg_sb_spawn(const char *path, char *const argv[], char *const envp[], int memory_fd, int channel_fd, pid_t *pid);

/// In the worker, once setup is done: closes every descriptor but `channel_fd`, sets
/// no_new_privs and loads the seccomp filter (read and write on `channel_fd`, memory without
/// PROT_EXEC, futex, the clock, exit; any other call kills the process with SIGSYS). Returns 0,
/// or a negative errno (nothing is decoded then).
int sg_sb_lockdown(int channel_fd);

/// Kills the worker with SIGKILL if its parent dies (checked once after arming: a parent already
/// gone is reported as -1).
int sg_sb_die_with_parent(pid_t expected_parent);

/// `waitpid(pid, WNOHANG)`: 1 when it ended (`*how`: the signal number if it was killed, else
/// 256 + the exit status), 0 while it runs, -1 (errno) on error.
int sg_sb_reap(pid_t pid, int *how);
/// SIGKILL to `pid`; 0 or -1 (errno).
int sg_sb_kill(pid_t pid);
/// The CPU time `pid` has used, all its threads (clock_getcpuclockid), in nanoseconds; -1 when
/// it cannot be read (the process is gone).
int64_t sg_sb_cpu_ns(pid_t pid);
/// Whether `pid` is held up by the machine rather than by itself: runnable (R: waiting for a
/// CPU), in uninterruptible I/O (D: a page-in under memory pressure) or stopped (T: a debugger,
/// SIGSTOP): 1; asleep (S: a lock, a read) or anything else: 0; -1 when it cannot be read. Read
/// only when a decode passes its deadline in wall time.
int sg_sb_runnable(pid_t pid);

/// Release store and acquire load of a 32-bit word in shared memory. The writer fills a slot,
/// then stores its sequence number with release; the reader loads the number with acquire and
/// only then reads the slot: on ARM's weak ordering as on x86, every byte written before the
/// store is visible after the load (the pipe's byte that wakes the reader orders nothing by
/// itself in the C11 model).
/// A word that is not 4-byte aligned stops the process (abort): ARM's LDAR/STLR fault on it and
/// x86 would split it silently, so the x86 builds refuse what a Pi would (docs/arm64.md).
void sg_sb_store_release(uint32_t *word, uint32_t value);
uint32_t sg_sb_load_acquire(const uint32_t *word);
/// Whether `word` may be used as an atomic 32-bit word (4-byte aligned): 1 or 0.
int sg_sb_word_aligned(const void *word);
/// 1 when this C code was built with `char` unsigned (as on ARM; Package.swift builds every shim
/// so), else 0.
int sg_sb_char_unsigned(void);

/// Test hook of the worker: calls open("/etc/hostname") (seccomp must kill the caller).
int sg_sb_try_forbidden_open(void);

/// Signal name for a journal line ("SIGSEGV"), or "signal".
const char *sg_sb_signal_name(int signal);

#ifdef __cplusplus
}
#endif
#endif
