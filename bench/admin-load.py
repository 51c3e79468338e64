#!/usr/bin/env python3
"""The web admin page under load (issue 42), against the real `scangate admin` and reader that
bench/admin-load.sh starts. Three phases of SECONDS each, in one run: idle; 50 signed-in
clients from 50 loopback addresses loading the dashboard (4 console commands a page) as fast as
they can, with a slowloris host holding its 8 connections open a header line at a time; idle
again. Measured in every phase: the reader's frames a second (STATS over its console socket,
not through the page, as a technician would connect: how long that took is shown), the page's latency for a probe client that connects anew each time
(TLS handshake included), and the admin process's RSS. Prints a Markdown table.

  admin-load.py URL CONSOLE_SOCKET ADMIN_PID SECONDS
"""
import http.client, re, socket, ssl, statistics, sys, threading, time, urllib.parse

URL, CONSOLE, ADMIN_PID, SECONDS = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
HOST = urllib.parse.urlparse(URL).hostname
PORT = urllib.parse.urlparse(URL).port
CTX = ssl.create_default_context()
CTX.check_hostname = False
CTX.verify_mode = ssl.CERT_NONE


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def frames():
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    s.connect(CONSOLE)
    f = s.makefile("rb")
    f.readline()
    s.sendall(b"STATS\n")
    n = None
    while True:
        line = f.readline().decode(errors="replace")
        m = re.match(r"\| frames (\d+) ", line)
        if m:
            n = int(m.group(1))
        if line.startswith("OK") or line.startswith("ERR") or not line:
            break
    s.close()
    return n


def connection(source="127.0.0.1"):
    return http.client.HTTPSConnection(HOST, PORT, context=CTX, timeout=20, source_address=(source, 0))


def sign_in():
    c = connection()
    c.request("POST", "/login", "name=olga&password=correct+horse+battery",
              {"Origin": URL, "Content-Type": "application/x-www-form-urlencoded"})
    r = c.getresponse()
    r.read()
    cookie = r.getheader("Set-Cookie", "").split(";")[0]
    assert cookie.startswith("sg_session="), r.status
    return cookie


stop = threading.Event()
counts = {"ok": 0, "refused": 0, "other": 0}
lock = threading.Lock()


def client(i, cookie):
    source = f"127.0.0.{10 + i}"
    c = None
    while not stop.is_set():
        try:
            if c is None:
                c = connection(source)
            c.request("GET", "/", headers={"Cookie": cookie})
            r = c.getresponse()
            r.read()
            with lock:
                counts["ok" if r.status == 200 else "other"] += 1
        except Exception:
            with lock:
                counts["refused"] += 1
            c = None
            time.sleep(0.2)


def slowloris(held):
    """One header line every 10 s, never the end of the headers."""
    try:
        raw = socket.create_connection((HOST, PORT), timeout=30, source_address=("127.0.0.200", 0))
        s = CTX.wrap_socket(raw, server_hostname=HOST)
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
        with lock:
            held[0] += 1
        while not stop.is_set():
            stop.wait(10)
            s.sendall(b"X-Slow: 1\r\n")
    except Exception:
        pass
    finally:
        with lock:
            held[0] -= 1 if held[0] > 0 else 0


def phase(name, seconds):
    latencies, rss, errors = [], [], 0
    asked = time.time()
    f0, t0 = frames(), time.time()
    console_ms = (t0 - asked) * 1000
    end = t0 + seconds
    while time.time() < end:
        started = time.time()
        try:
            c = connection()
            c.request("GET", "/login")
            r = c.getresponse()
            r.read()
            c.close()
            if r.status == 200:
                latencies.append((time.time() - started) * 1000)
            else:
                errors += 1
        except Exception:
            errors += 1
        rss.append(rss_kib(ADMIN_PID))
        time.sleep(max(0, 0.5 - (time.time() - started)))
    f1, t1 = frames(), time.time()
    fps = (f1 - f0) / (t1 - t0)
    q = sorted(latencies)
    p50 = statistics.median(q) if q else float("nan")
    p99 = q[min(len(q) - 1, int(len(q) * 0.99))] if q else float("nan")
    return name, fps, console_ms, p50, p99, errors, max(rss) / 1024


def main():
    cookie = sign_in()
    rows = [phase("idle", SECONDS)]
    threads = [threading.Thread(target=client, args=(i, cookie), daemon=True) for i in range(50)]
    held = [0]
    threads += [threading.Thread(target=slowloris, args=(held,), daemon=True) for _ in range(8)]
    for t in threads:
        t.start()
    time.sleep(2)
    before = dict(counts)
    row = phase("50 clients + slowloris", SECONDS)
    pages = counts["ok"] - before["ok"]
    rows.append(row)
    load = f"{pages / SECONDS:.0f} dashboards/s served to the 50 ({counts['refused']} connections refused or reset, {held[0]} slowloris connections held)"
    stop.set()
    time.sleep(1)
    rows.append(phase("idle again", SECONDS))
    print("| phase | reader frames/s | a technician's console STATS | probe GET /login p50 | p99 | probe errors | admin RSS max |")
    print("|---|---|---|---|---|---|---|")
    for name, fps, console_ms, p50, p99, errors, rss in rows:
        print(f"| {name} | {fps:.1f} | {console_ms:.0f} ms | {p50:.0f} ms | {p99:.0f} ms | {errors} | {rss:.1f} MiB |")
    print()
    print("Under load: " + load + ".")


main()
