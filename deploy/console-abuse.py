#!/usr/bin/env python3
"""Console peers for deploy/console-abuse.sh (standard library only).

  console-abuse.py probe PORT LINE [SOURCE]      one line; prints every reply line up to OK/ERR
  console-abuse.py quit PORT                     QUIT: exit 0 when the service closes the connection
  console-abuse.py abuse PORT SECRET_FILE SECONDS CLIENTS OUT.json
  console-abuse.py hold PORT CONNECTIONS WRONG_AUTHS SECONDS
                                                 (item 8, run as another user) CONNECTIONS idle
                                                 sockets, WRONG_AUTHS wrong AUTHs on the first
                                                 one greeted, then hold them all open
  console-abuse.py serial PATH LINE              one line on a serial console (a pty); prints
                                                 every reply line up to OK/ERR

`abuse` runs CLIENTS concurrent TCP clients (asyncio, plain sockets to 127.0.0.1, each from a
random 127.x.y.z source address: to the service they are all one peer, the user running them) that for SECONDS send,
with small random pauses, a mix of garbage bytes (binary, NUL, overlong lines), mistyped AUTH
lines containing the real secret, wrong AUTHs, CHECK guesses, STATUS/LAST/STATS/OPEN, bursts
past the line budget, QUIT and abrupt closes. Dropped clients reconnect. Every reply line is
read and counted (ERR 403 wrong secret in particular); a reply that holds the secret or a
payload, or an `OK operator`, is counted as a leak. Writes the counts as JSON.
"""
import asyncio
import json
import os
import random
import resource
import select
import socket
import sys
import time

PAYLOADS = ("ALICE-0001", "MALLORY-9999")


def probe(port, line, source="127.0.0.1"):
    s = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
    f = s.makefile("rb")
    greeting = f.readline()
    if not greeting.startswith(b"! "):
        print("no greeting: %r" % greeting)
        return 2
    s.sendall(line.encode() + b"\n")
    t = time.monotonic()
    while True:
        reply = f.readline()
        if not reply:
            print("EOF")
            return 2
        text = reply.decode("ascii", "replace").rstrip("\n")
        print(text)
        if text.startswith("OK") or text.startswith("ERR"):
            break
    print("# monotonic %.6f" % t)
    s.close()
    return 0


def quit_closes(port):
    """QUIT alone on a connection: prints the reply and whether the service closed it."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.settimeout(3)
    data = b""
    try:
        while b"console ready" not in data:
            data += s.recv(4096)
        s.sendall(b"QUIT\n")
        t = time.monotonic()
        while True:
            d = s.recv(4096)
            if not d:
                print("%s; closed by the service after %.2f s" % (data.decode().split("\n")[-2], time.monotonic() - t))
                return 0
            data += d
    except socket.timeout:
        print("%s; not closed by the service within 3 s" % (data.decode().strip().split("\n")[-1]))
        return 1
    finally:
        s.close()


class Counts:
    def __init__(self):
        self.c = {}

    def add(self, key, n=1):
        self.c[key] = self.c.get(key, 0) + n


def classify(counts, line, secret):
    text = line.decode("ascii", "replace").rstrip("\r\n")
    if secret in line:
        counts.add("leak_secret")
    for p in PAYLOADS:
        if p.encode() in line:
            counts.add("leak_payload")
    if text.startswith("OK operator"):
        counts.add("leak_operator")
    elif text.startswith("ERR 403 wrong secret"):
        counts.add("err403")
    elif text.startswith("ERR 403"):
        counts.add("err403_other")
    elif text.startswith("ERR 423"):
        counts.add("err423")
    elif text.startswith("ERR 429 too soon"):
        counts.add("err429_backoff")
    elif text.startswith("ERR 429 too many lines"):
        counts.add("err429_lines")
    elif text.startswith("ERR 503"):
        counts.add("err503")
    elif text.startswith("ERR "):
        counts.add("err" + text[4:7])
    elif text.startswith("OK "):
        counts.add("ok_" + text[3:].split(" ")[0])
    elif text.startswith("! "):
        counts.add("greeting" if "console ready" in text else "event")
    elif text.startswith("| "):
        counts.add("body")
    else:
        counts.add("unframed")  # a line that is neither body, status nor event


def lines_for(secret, rnd):
    """One action: (bytes to send, what it is)."""
    s = secret
    end = rnd.choice([b"\n", b"\r", b"\r\n"])
    k = rnd.random()
    if k < 0.12:  # garbage: random binary (may hold CR/LF, NUL, high bytes)
        return os.urandom(rnd.randint(1, 300)) + end, "garbage"
    if k < 0.17:
        return b"STATUS\x00" + os.urandom(4).replace(b"\n", b"") + end, "nul"
    if k < 0.24:  # overlong, some holding the secret
        body = rnd.choice([b"A" * rnd.randint(513, 4000), b"AUTH " + s + b"x" * rnd.randint(520, 2000),
                           os.urandom(rnd.randint(513, 3000)).replace(b"\n", b"").replace(b"\r", b"")])
        return body + end, "overlong"
    if k < 0.44:  # mistyped AUTH lines holding the real secret
        variants = [
            b"AUTH " + s + b" extra", b"AUHT " + s, b"AUTH " + s + b"%zz", b"AUTH %zz" + s,
            b"auth " + s + b" " + s, b"AUTH\t" + s + b"\tbad", b"AUTH " + s + b"\x00",
            b"AUTH " + s + b"%4", b"AUTH " + s + b"x", b"AUTH x" + s, b"AUTH " + s[:-1],
            b"AUTH " + s + b"%41", b"AUTH " + s[: len(s) // 2] + b"\r" + s[len(s) // 2:],
            b"AUTH " + s + b"\x1b[2J", b"AUTH " + s.upper() if s.upper() != s else b"AUTH Z" + s,
        ]
        return rnd.choice(variants) + end, "mistyped-auth"
    if k < 0.54:
        return b"AUTH guess-%08x" % rnd.getrandbits(32) + end, "wrong-auth"
    if k < 0.62:
        return b"CHECK " + rnd.choice([b"ALICE-%04d" % rnd.randint(0, 9999), b"MALLORY-9999", b"%zz"]) + end, "check"
    if k < 0.90:
        return rnd.choice([b"STATUS", b"LAST 3", b"LAST 50", b"STATS", b"HELP", b"VERSION", b"WATCH ON",
                           b"WATCH OFF", b"OPEN", b"LOG 5", b"SNAPSHOT", b"RELOAD"]) + end, "command"
    if k < 0.93:  # a burst past the line budget (40 lines)
        return b"VERSION\n" * rnd.randint(41, 60), "burst"
    if k < 0.965:
        return b"QUIT" + end, "quit"
    return b"", "abrupt"


async def abuse_client(index, port, secret, deadline, counts):
    rnd = random.Random(index * 7919 + os.getpid())
    while time.monotonic() < deadline:
        source = "127.%d.%d.%d" % (rnd.randint(0, 255), rnd.randint(0, 255), rnd.randint(1, 254))
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0), limit=1 << 20), 5)
        except (OSError, asyncio.TimeoutError):
            counts.add("connect_failed")
            await asyncio.sleep(rnd.uniform(0.05, 0.3))
            continue
        counts.add("connections")
        closed = asyncio.Event()

        async def read_all():
            try:
                while True:
                    line = await reader.readline()
                    if not line:
                        break
                    classify(counts, line, secret)
            except (OSError, ValueError):
                counts.add("read_error")
            closed.set()

        reading = asyncio.create_task(read_all())
        quitting = False
        try:
            while time.monotonic() < deadline and not closed.is_set():
                data, what = lines_for(secret, rnd)
                counts.add("sent_" + what)
                if what == "abrupt":  # drain what is in flight, then reset the connection
                    await asyncio.sleep(0.3)
                    break
                writer.write(data)
                await writer.drain()
                if what == "quit":  # the service should answer OK bye and close
                    quitting = True
                    try:
                        await asyncio.wait_for(closed.wait(), 1)
                        counts.add("quit_closed")
                    except asyncio.TimeoutError:
                        counts.add("quit_not_closed")
                    break
                await asyncio.sleep(rnd.uniform(0.01, 0.2))
        except (OSError, asyncio.TimeoutError) as e:
            counts.add("write_error_" + type(e).__name__)
        if not quitting and not closed.is_set():
            await asyncio.sleep(1.0 if time.monotonic() >= deadline else 0)  # the last replies in flight
        if closed.is_set() and not quitting:
            counts.add("dropped_by_service")
        reading.cancel()
        try:
            await reading
        except asyncio.CancelledError:
            pass
        try:
            sock = writer.get_extra_info("socket")
            if sock is not None and not quitting:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            writer.close()
        except OSError:
            pass


async def abuse(port, secret, seconds, clients, out):
    counts = Counts()
    deadline = time.monotonic() + seconds
    await asyncio.gather(*(abuse_client(i, port, secret, deadline, counts) for i in range(clients)))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    counts.add("cpu_ms", int((usage.ru_utime + usage.ru_stime) * 1000))
    with open(out, "w") as f:
        json.dump(counts.c, f, sort_keys=True)


def hold(port, connections, wrong, seconds):
    """Idle sockets and wrong AUTHs from this process's user (setpriv --reuid=nobody ...):
    prints `greeted G refused R`, one `auth I: REPLY` per wrong AUTH (waiting out every
    `ERR 429 ... retry in N s`), then `done`, and keeps every socket open for SECONDS."""
    socks, firsts = [], []
    for _ in range(connections):
        socks.append(socket.create_connection(("127.0.0.1", port), timeout=15))
    for s in socks:
        try:
            firsts.append(s.makefile("rb").readline().decode("ascii", "replace").strip())
        except OSError as e:
            firsts.append("error %s" % e)
    greeted = [s for s, line in zip(socks, firsts) if "console ready" in line]
    refused = sum(1 for line in firsts if line.startswith("ERR 503"))
    print("greeted %d refused %d (%s)" % (len(greeted), refused, sorted(set(firsts))), flush=True)
    if greeted and wrong:
        f = greeted[0].makefile("rb")
        for i in range(wrong):
            for _ in range(60):
                greeted[0].sendall(b"AUTH wrong-guess-%d\n" % i)
                reply = f.readline().decode("ascii", "replace").strip()
                if not reply.startswith("ERR 429"):
                    break
                wait = reply.rsplit("retry in ", 1)[-1].split(" ")[0]
                time.sleep(float(wait) if wait.isdigit() else 1)
            print("auth %d: %s" % (i, reply), flush=True)
    print("done", flush=True)
    time.sleep(seconds)
    return 0


def serial(path, line):
    """One line on the serial console through the other end of a pty pair (socat)."""
    fd = os.open(path, os.O_RDWR | os.O_NOCTTY)
    try:
        os.write(fd, line.encode() + b"\r")
        data = b""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                data += os.read(fd, 4096)
            lines = data.decode("ascii", "replace").replace("\r", "").split("\n")
            if any(x.startswith("OK") or x.startswith("ERR") for x in lines):
                break
        for x in data.decode("ascii", "replace").replace("\r", "").split("\n"):
            if x.startswith("OK") or x.startswith("ERR") or x.startswith("|"):
                print(x)
        return 0 if data else 2
    finally:
        os.close(fd)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "quit":
        sys.exit(quit_closes(int(sys.argv[2])))
    if len(sys.argv) >= 4 and sys.argv[1] == "probe":
        sys.exit(probe(int(sys.argv[2]), sys.argv[3], *(sys.argv[4:5])))
    if len(sys.argv) == 6 and sys.argv[1] == "hold":
        sys.exit(hold(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])))
    if len(sys.argv) == 4 and sys.argv[1] == "serial":
        sys.exit(serial(sys.argv[2], sys.argv[3]))
    if len(sys.argv) == 7 and sys.argv[1] == "abuse":
        secret = open(sys.argv[3], "rb").read().strip()
        asyncio.run(abuse(int(sys.argv[2]), secret, float(sys.argv[4]), int(sys.argv[5]), sys.argv[6]))
        return
    sys.exit(__doc__)


if __name__ == "__main__":
    main()
