#!/usr/bin/env python3
"""Stalls ONE thread of a running process, as a hung driver call or a slow disk would stall the
reader's loop, while its other threads run on: ptrace(PTRACE_SEIZE) + PTRACE_INTERRUPT put only
that thread in a ptrace-stop (SIGSTOP would stop every thread, the relay watchdog's included).

Usage: stall-thread.py TID VALUE_FILE SECONDS
Prints "ready" once it runs (Python starts slowly under TCG: start the pulse only then), waits
until VALUE_FILE (a gpio-sim line's sysfs value) reads 1, stops thread TID (the main
thread of a process is its pid: the reader's loop), holds it SECONDS, lets it go. Prints
"stopped MS" and "resumed MS" (CLOCK_REALTIME milliseconds, as the rig's sampler)."""
import ctypes, os, sys, time

PTRACE_DETACH, PTRACE_SEIZE, PTRACE_INTERRUPT = 17, 0x4206, 0x4207
WALL = 0x40000000
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
libc.ptrace.restype = ctypes.c_long


def ptrace(request, tid):
    if libc.ptrace(request, tid, None, None) != 0:
        e = ctypes.get_errno()
        sys.exit(f"stall-thread: ptrace({request:#x}, {tid}): {os.strerror(e)}")


def ms():
    return time.time_ns() // 1_000_000


tid, path, seconds = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
print("ready", ms(), flush=True)
end = time.monotonic() + 60
while True:
    with open(path) as f:
        if f.read().strip() == "1":
            break
    if time.monotonic() > end:
        sys.exit("stall-thread: the line never read 1")
    time.sleep(0.002)
ptrace(PTRACE_SEIZE, tid)
ptrace(PTRACE_INTERRUPT, tid)
status = ctypes.c_int()
if libc.waitpid(tid, ctypes.byref(status), WALL) != tid:
    sys.exit(f"stall-thread: waitpid: {os.strerror(ctypes.get_errno())}")
print("stopped", ms(), flush=True)
time.sleep(seconds)
ptrace(PTRACE_DETACH, tid)
print("resumed", ms(), flush=True)
