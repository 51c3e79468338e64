#!/usr/bin/env python3
"""The technician's end of the serial cable: sends STATUS to the guest's ttyS1 (through the
host pty socat made) once a second until a status line comes back, and records the reply."""
import os, sys, time, tty

path, out = sys.argv[1], sys.argv[2]
for _ in range(600):
    if os.path.exists(path):
        break
    time.sleep(0.1)
fd = os.open(path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
tty.setraw(fd)
received = b""
deadline = time.time() + 900
while time.time() < deadline:
    try:
        os.write(fd, b"STATUS\r\n")
    except OSError:
        pass
    end = time.time() + 1.0
    while time.time() < end:
        try:
            received += os.read(fd, 4096)
        except BlockingIOError:
            time.sleep(0.05)
        except OSError:
            time.sleep(0.2)
    if b"OK status" in received:
        break
open(out, "wb").write(received)
