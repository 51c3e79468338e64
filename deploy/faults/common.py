"""Shared pieces of the fault stage (deploy/fault-test.sh): a reader on the real binary with a
replay source and simulated GPIO, its console, its journal, `log verify`, the clock shift shim and
a plain MQTT broker with a consumer that keeps every event. Each deploy/faults/<name>.py imports
this, runs its faults and prints PASS/FAIL lines.

A fault script is run as: <name>.py SCANGATE WORKDIR [BROKER_PORT]"""
import concurrent.futures, json, os, re, shutil, signal, socket, subprocess, sys, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))
failures = 0


_check_lock = threading.Lock()


def check(name, ok, detail=""):
    """One PASS/FAIL line; safe from the threads that run trials side by side."""
    global failures
    with _check_lock:
        print(("PASS " if ok else "FAIL ") + name + ("" if ok else f": {str(detail)[-1200:]}"), flush=True)
        failures += 0 if ok else 1
    return ok


def side_by_side(calls, workers=3):
    """Runs the calls (no-argument functions) in `workers` threads; each is mostly waiting for a
    process of its own. Re-raises the first exception."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        for future in [pool.submit(c) for c in calls]:
            future.result()


def finish():
    sys.exit(1 if failures else 0)


def clock_shim(workdir):
    """deploy/clockshift.c built once per work folder: SCANGATE_CLOCK_SHIFT=<seconds> (or a file
    named by SCANGATE_CLOCK_SHIFT_FILE) moves the wall clock (CLOCK_REALTIME, time(),
    gettimeofday) of one process; monotonic and boot time stay real."""
    so = f"{workdir}/clockshift.so"
    with _check_lock:  # two trials side by side build it once
        if not os.path.exists(so):
            subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", so, os.path.join(HERE, "..", "clockshift.c"), "-ldl"],
                           check=True)
    return so


def qr_frames(workdir, name, text):
    """A replay folder holding one QR code of `text` (qrencode: an encoder that is not ours)."""
    d = f"{workdir}/frames-{name}"
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    subprocess.run(["qrencode", "-s", "4", "-m", "4", "-o", f"{d}/code.png", text], check=True)
    return d



def join_continuations(text):
    """Console text with its continuation lines joined to the line before (docs/console.md: a
    line longer than 80 columns is sent as lines that begin `|   ` or `!   `; one that ends in
    a backslash was cut inside a word and joins without a space): each line as written."""
    out = []
    for line in text.split("\n"):
        if out and line[:1] in ("|", "!") and line[1:4] == "   ":
            out[-1] = out[-1][:-1] + line[4:] if out[-1].endswith("\\") else out[-1] + " " + line[4:]
        else:
            out.append(line)
    return "\n".join(out)

class Reader:
    """One reader: `W/<name>/` holds its config, allow-list, state and journal."""

    def __init__(self, binary, workdir, name, frames, extra="", log="", broker_port=None, fps=20, isolation="inline",
                 commit_ms=50):
        """`isolation`: the decoder's. "inline" unless the faults are the workers' own (decoder.py)
        or the run is the reader as deployed (disk.py): each start of the two workers warms them
        up, ~2 s of CPU in the debug build, which a script that restarts readers pays many times
        over, and which has nothing to do with its files. `commit_ms`: the log's commit interval
        (50 ms makes the fault scripts quick; the benchmarks use the deployed default, 200)."""
        self.bin = binary
        self.dir = f"{workdir}/{name}"
        os.makedirs(self.dir, exist_ok=True)
        self.state = f"{self.dir}/state"
        os.makedirs(self.state, exist_ok=True)
        self.log_path = f"{self.state}/audit.db"
        self.allow = f"{self.dir}/allow-list.txt"
        if not os.path.exists(self.allow):
            with open(self.allow, "w") as f:
                f.write("text:EMP-0001 label=alice\n")
        self.secret = f"{self.dir}/secret"
        if not os.path.exists(self.secret):
            with open(self.secret, "w") as f:
                f.write("fault-stage-operator-secret-0123456789\n")
            os.chmod(self.secret, 0o600)
        fleet = ""
        if broker_port:
            fleet = f"""[fleet]
brokers = ["mqtt://127.0.0.1:{broker_port}"]
reader_id = "{name}"
keepalive_s = 5
"""
        self.config = f"{self.dir}/config.toml"
        with open(self.config, "w") as f:
            f.write(f"""[camera]
source = "replay"
replay_path = "{frames}"
replay_fps = {fps}
replay_loop = true
[allow_list]
path = "{self.allow}"
watch = false
[gpio]
backend = "sim"
relay_pulse_ms = 50
[log]
path = "{self.log_path}"
commit_interval_ms = {commit_ms}
{log}
[console]
listen = ["127.0.0.1:0"]
secret_file = "{self.secret}"
[decoder]
isolation = "{isolation}"
{fleet}{extra}
""")
        self.proc = None
        self.port = None
        self.journal_path = f"{self.dir}/journal"

    def start(self, env=None, wait=True):
        self.out = open(self.journal_path, "a")
        self.out.write(f"---- start {time.time():.0f}\n")
        self.out.flush()
        self.mark = os.path.getsize(self.journal_path)
        self.proc = subprocess.Popen([self.bin, "run", "--config", self.config], stdout=self.out,
                                     stderr=subprocess.STDOUT, env=env)
        self.port = None
        if wait:
            deadline = time.time() + 20
            while time.time() < deadline and self.proc.poll() is None:
                m = re.search(r"^console listening on 127\.0\.0\.1:(\d+)$", self.journal(), re.M)
                if m:
                    self.port = int(m.group(1))
                    break
                time.sleep(0.1)
        return self

    def journal(self, whole=False):
        """This run's journal (or every run's)."""
        with open(self.journal_path, "rb") as f:
            data = f.read()
        return (data if whole else data[self.mark:]).decode(errors="replace")

    def command(self, *lines, timeout=5.0):
        """Sends console lines (AUTH first with the operator secret when `auth`), returns replies,
        their continuation lines joined (`join_continuations`): a line as the reader wrote it."""
        s = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        s.sendall(b"".join(l.encode() + b"\n" for l in lines))
        data = b""
        deadline = time.time() + timeout
        expected = len(lines)
        while time.time() < deadline:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            data += chunk
            # Each command ends with one `OK ...` or `ERR ...` line (docs/console.md).
            if len(re.findall(rb"^(OK|ERR)\b.*\n", data, re.M)) >= expected:
                break
        s.close()
        return join_continuations(data.decode(errors="replace"))

    def ask(self, *lines, operator=False, timeout=5.0):
        """Console lines, after AUTH with the reader's secret when `operator`; "" when the reader
        has no console port (it did not start)."""
        if not self.port:
            return ""
        return self.operator(*lines, timeout=timeout) if operator else self.command(*lines, timeout=timeout)

    def operator(self, *lines, timeout=5.0):
        secret = open(self.secret).read().strip()
        return self.command(f"AUTH {secret}", *lines, timeout=timeout)

    def status(self):
        return self.command("STATUS")

    def stop(self, sig=signal.SIGTERM, timeout=15):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            self.out.close()
        rc = self.proc.returncode if self.proc else None
        self.proc = None
        return rc

    def decisions(self, whole=False):
        return len(re.findall(r"^#\d+ \S+ decision ", self.journal(whole), re.M))

    def verify(self, *extra):
        """`scangate log verify` on this reader's log: (exit code, output)."""
        p = subprocess.run([self.bin, "log", "verify", "--config", self.config, *extra], capture_output=True, text=True)
        return p.returncode, p.stdout + p.stderr

    def records(self):
        """Every record of the log, as `scangate log --json` prints them (one dict each)."""
        p = subprocess.run([self.bin, "log", "--config", self.config, "--json"], capture_output=True, text=True)
        return [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]


class Gate(Reader):
    """A reader whose `run` walks people through each unlock (`--sim-passages`)."""

    def start(self, env=None, wait=True):
        real = self.bin
        wrapper = f"{self.dir}/run-with-passages"
        with open(wrapper, "w") as f:
            f.write(f'#!/bin/sh\n[ "$1" = run ] && exec "{real}" "$@" --sim-passages\nexec "{real}" "$@"\n')
        os.chmod(wrapper, 0o755)
        self.bin = wrapper
        try:
            return super().start(env=env, wait=wait)
        finally:
            self.bin = real


def jumping(workdir, shift_file):
    """The environment of a reader whose wall clock is off by the seconds in `shift_file`, read
    again while it runs (deploy/clockshift.c): writing the file steps its clock."""
    env = dict(os.environ)
    env.update(LD_PRELOAD=clock_shim(workdir), SCANGATE_CLOCK_SHIFT_FILE=shift_file)
    return env


def check_consumer(name, published, records):
    """The fleet consumer saw every record of the log, as the log has it (kind, verdict,
    time): `published` from Broker.records, `records` from Reader.records. Delivery is at least
    once: a consumer keys records by (log, seq) and drops repeats (counted, not failed)."""
    keys = [(r.get("log"), r["seq"]) for r in published]
    by_seq = {}
    for r in published:
        by_seq.setdefault(r["seq"], []).append(r)
    missing = [r["seq"] for r in records if r["seq"] not in by_seq]
    differing = [r["seq"] for r in records if r["seq"] in by_seq and not any(
        p["kind"] == r["kind"] and p.get("verdict", "") == r.get("verdict", "") and p["time_ns"] == r["time_ns"]
        for p in by_seq[r["seq"]])]
    return check(f"{name}: the fleet consumer has every record of the log, as the log has it "
                 f"({len(records)} in the log, {len(published)} published, {len(keys) - len(set(keys))} repeats)",
                 not missing and not differing,
                 f"missing {missing[:10]}, differing {differing[:10]}, repeated {len(keys) - len(set(keys))}")


def shifted(workdir, seconds):
    """The environment of a reader whose wall clock reads `seconds` off."""
    env = dict(os.environ)
    env.update(LD_PRELOAD=clock_shim(workdir), SCANGATE_CLOCK_SHIFT=str(seconds))
    return env


def wait_for(predicate, seconds, step=0.1):
    deadline = time.time() + seconds
    while time.time() < deadline:
        v = predicate()
        if v:
            return v
        time.sleep(step)
    return predicate()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Broker:
    """A plain mosquitto on 127.0.0.1 (the fault stage tests the log, not TLS: deploy/fleet-test.sh
    does that) and a paho-mqtt consumer that keeps every event a reader publishes, in order."""

    def __init__(self, workdir):
        self.dir = f"{workdir}/broker"
        os.makedirs(self.dir, exist_ok=True)
        self.port = free_port()
        with open(f"{self.dir}/mosquitto.conf", "w") as f:
            f.write(f"listener {self.port} 127.0.0.1\nallow_anonymous true\npersistence false\n"
                    f"log_dest file {self.dir}/mosquitto.log\n")
        self.proc = subprocess.Popen(["mosquitto", "-c", f"{self.dir}/mosquitto.conf"], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        wait_for(lambda: self._listening(), 10)
        import paho.mqtt.client as mqtt
        self.events = []
        try:
            self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="fault-consumer",
                                      protocol=mqtt.MQTTv5)
        except AttributeError:
            self.client = mqtt.Client(client_id="fault-consumer", protocol=mqtt.MQTTv5)
        self.client.on_message = lambda c, u, m: self.events.append((m.topic, m.payload))
        self.client.connect("127.0.0.1", self.port)
        self.client.subscribe("scangate/+/events", qos=1)
        self.client.loop_start()

    def _listening(self):
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
            return True
        except OSError:
            return False

    def records(self, reader):
        """Every record published by `reader`, decoded (a batch message holds several)."""
        out = []
        for topic, payload in list(self.events):
            if topic != f"scangate/{reader}/events":
                continue
            value = json.loads(payload)
            out.extend(value if isinstance(value, list) else value.get("records", [value]))
        return out

    def stop(self):
        self.client.loop_stop()
        self.client.disconnect()
        self.proc.terminate()
        self.proc.wait()
