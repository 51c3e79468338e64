"""The fleet tests' independent MQTT client (paho-mqtt, not ScanGate code).

  watch OUT CA CERT KEY HOST PORT   subscribe to every reader's events, status, state and
                                    decision (Home Assistant's event entity) and Home Assistant
                                    discovery; append one JSON line per message
                                    to OUT (flushed), until killed
  control CA CERT KEY HOST PORT SEED KID ALLOWLIST
                                    signed and unsigned bundles and commands (pycose signs):
                                    prints PASS/FAIL lines
  check OUT DB READER BATCH FAULTS [PAYLOAD...]
                                    compare what OUT holds with the audit database DB (python's
                                    sqlite3), and that the events name the payloads shown only by
                                    their keyed tag (DB.tag-key): prints PASS/FAIL lines

A consumer keys events by (reader, log, seq): `log` is the id of the reader's audit log (absent
for a log made before log ids), and a new log id is a new log whose seq starts again at 1, never
a run of duplicates of the old one.
"""
import hashlib
import hmac
import json
import sqlite3
import ssl
import sys
import time


def watch(out, ca, cert, key, host, port):
    import paho.mqtt.client as mqtt

    f = open(out, "a", buffering=1)
    # A persistent session (clean_session False) with QoS 1: what the broker queued while this
    # client was away (a link cut) is delivered when it is back.
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="watcher", clean_session=False,
                    protocol=mqtt.MQTTv311)
    c.tls_set(ca_certs=ca, certfile=cert, keyfile=key, cert_reqs=ssl.CERT_REQUIRED)
    c.reconnect_delay_set(min_delay=1, max_delay=2)

    def on_connect(client, userdata, flags, reason, props):
        client.subscribe([("scangate/+/events", 1), ("scangate/+/status", 1), ("scangate/+/state", 1),
                          ("scangate/+/decision", 1), ("homeassistant/#", 1)])

    def on_message(client, userdata, m):
        f.write(json.dumps({"t": time.time(), "topic": m.topic, "retain": bool(m.retain),
                            "payload": m.payload.decode("utf-8", "replace")}) + "\n")

    c.on_connect = on_connect
    c.on_message = on_message
    while True:
        try:
            c.connect(host, port, keepalive=5)
            break
        except OSError:
            time.sleep(0.5)
    c.loop_forever(retry_first_connection=True)


def check(out, db, reader, batch, faults, *payloads):
    batch, faults = int(batch), int(faults)
    passed = failed = 0

    def result(ok, text):
        nonlocal passed, failed
        print(("PASS" if ok else "FAIL") + " fleet: " + text)
        if ok:
            passed += 1
        else:
            failed += 1

    lines = [json.loads(l) for l in open(out) if l.strip()]
    events = [l for l in lines if l["topic"] == f"scangate/{reader}/events"]
    bad_json = 0
    received = {}
    duplicates = 0
    for e in events:
        try:
            m = json.loads(e["payload"])
            key = (m["reader"], m.get("log"), int(m["seq"]))
        except (ValueError, KeyError, TypeError):
            bad_json += 1
            continue
        if key in received:
            duplicates += 1
            if received[key] != m:
                bad_json += 1  # the same record must be the same message every time
        else:
            received[key] = m
    result(bad_json == 0, f"{len(events)} event messages are JSON with reader and seq, repeats identical ({bad_json} bad)")

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = conn.execute("SELECT seq, run, kind, verdict, label, time_ns FROM events ORDER BY seq").fetchall()
    row = conn.execute("SELECT value FROM meta WHERE key='log_id'").fetchone()
    log = row[0] if row else None
    first, last = rows[0][0], rows[-1][0]
    seqs = sorted(s for (r, g, s) in received if r == reader and g == log)
    result(log is None or all(m.get("log") for m in received.values() if m["reader"] == reader),
           f"every event names the log it belongs to (log {log}; other logs seen: "
           f"{sorted({g for (r, g, s) in received if r == reader and g != log}, key=str)})")
    missing = [s for s in range(first, last + 1) if (reader, log, s) not in received]
    result(not missing, f"every audit record {first}...{last} was delivered (gaps = {len(missing)}"
           + (f", first missing {missing[:10]}" if missing else "") + ")")
    extra = [s for s in seqs if s > last or s < first]
    result(not extra, f"nothing delivered that the log does not hold ({len(extra)})")
    mismatch = 0
    for (seq, run, kind, verdict, label, time_ns) in rows:
        m = received.get((reader, log, seq))
        if m is None:
            continue
        if m["run"] != run or m["kind"] != kind or m.get("verdict", "") != verdict or m.get("label", "") != label \
                or m["time_ns"] != time_ns:
            mismatch += 1
    result(mismatch == 0, f"each message says what its audit record says (run, kind, verdict, label, time): {mismatch} differ")
    ordered = True
    previous = {}
    # Within one connection a log's records go out in sequence order; a repeat only goes back to
    # the acknowledged point, so a sequence lower than the last one of its log must be a repeat.
    seen = set()
    for e in events:
        m = json.loads(e["payload"])
        g, s = m.get("log"), m["seq"]
        if s < previous.get(g, 0) and (g, s) not in seen:
            ordered = False
        seen.add((g, s))
        previous[g] = s
    result(ordered, "records arrive in order (a step back only ever repeats a record already seen)")
    # The reader keeps its acknowledged point in memory and writes it every 10 s or 256 records
    # (docs/audit-log.md): its kill -9 may publish again up to 256 records acknowledged since.
    bound = faults * batch + 256
    result(duplicates <= bound, f"{duplicates} duplicates, at most one unacknowledged batch per fault, "
           f"and 256 acknowledged since the last written point for the kill -9 ({bound})")
    runs = sorted({m["run"] for m in received.values() if m.get("log") == log})
    result(len(runs) >= 2, f"the stream spans the reader's restart (runs {runs})")

    # Availability: the last will said offline when the reader died; online again after.
    status = [l["payload"] for l in lines if l["topic"] == f"scangate/{reader}/status" and not l["retain"]]
    result("offline" in status and status.index("offline") < len(status) - 1 and "online" in status[status.index("offline"):],
           f"availability: offline (the last will) then online again ({' '.join(status)})")

    # Home Assistant's discovery and decision events: deploy/ha-schema.py.
    states = [json.loads(l["payload"]) for l in lines if l["topic"] == f"scangate/{reader}/state"]
    result(any(s.get("fire") == "OFF" and s.get("lockdown") == "OFF" for s in states),
           "state topic: fire OFF and lockdown OFF, the keys the binary sensors read")
    result(any(s.get("last_decision") == "granted" and float(s.get("fps", 0)) > 0 for s in states),
           f"state topic: the last decision and the frame rate the templates read ({len(states)} messages)")

    # What subscribers see of a payload: its keyed tag, HMAC-SHA-256(tag key, SHA-256(payload)),
    # never anything of its SHA-256 (which would let them test guessed badge numbers offline).
    key = bytes.fromhex(open(db + ".tag-key").read().strip())
    tags = {hmac.new(key, hashlib.sha256(p.encode()).digest(), hashlib.sha256).hexdigest()[:16]: p for p in payloads}
    prefixes = [hashlib.sha256(p.encode()).hexdigest()[:8] for p in payloads]
    leaks = [m for m in received.values() if "sha256" in m or any(x in json.dumps(m).lower() for x in prefixes)]
    decisions = [m for m in received.values() if m["kind"] == "decision"]
    tagged = [m for m in decisions if m.get("tag") in tags]
    result(not leaks and decisions and len(tagged) == len(decisions),
           f"events name a payload by its keyed tag only: {len(tagged)} of {len(decisions)} decisions carry the tag "
           f"HMAC(tag key, SHA-256(payload)) computes, {len(leaks)} hold a SHA-256 or a prefix of one")
    print(f"fleet: {len(events)} messages for {last - first + 1} records, {duplicates} duplicates, {len(missing)} gaps")
    return failed


def zbar(png_bytes):
    """What ZBar's zbarimg reads in a PNG (an independent decoder): the payloads, one per code."""
    import subprocess
    import tempfile
    with tempfile.NamedTemporaryFile(suffix=".png") as f:
        f.write(png_bytes)
        f.flush()
        r = subprocess.run(["zbarimg", "--raw", "-q", f.name], capture_output=True, text=True)
    return [line for line in r.stdout.splitlines() if line]


def control(ca, cert, key, host, port, seed_file, kid, allow_list, frame):
    import os
    import queue
    import paho.mqtt.client as mqtt
    from pycose.algorithms import EdDSA
    from pycose.headers import KID, Algorithm
    from pycose.keys import OKPKey
    from pycose.keys.curves import Ed25519
    from pycose.messages import Sign1Message

    seed = bytes.fromhex(open(seed_file).read().strip())
    failed = 0

    def result(ok, text):
        nonlocal failed
        print(("PASS" if ok else "FAIL") + " fleet: " + text)
        failed += 0 if ok else 1

    def signed(payload, with_seed=seed, with_kid=kid.encode()):
        m = Sign1Message(phdr={Algorithm: EdDSA, KID: with_kid}, payload=payload)
        m.key = OKPKey(crv=Ed25519, d=with_seed)
        return m.encode(tag=True)

    def bundle(version, text, reader="door-1"):
        body = text.encode()
        return f"scangate-bundle 1\nreader {reader}\nversion {version}\nfile allow-list {len(body)}\n".encode() + body

    def command(action, expires_in=60):
        nonce = os.urandom(16).hex()
        return f"scangate-command 1\nreader door-1\ncommand {action}\nnonce {nonce}\nexpires {int(time.time()) + expires_in}\n".encode()

    replies = queue.Queue()
    snapshots = queue.Queue()
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="controller", protocol=mqtt.MQTTv311)
    c.tls_set(ca_certs=ca, certfile=cert, keyfile=key, cert_reqs=ssl.CERT_REQUIRED)
    c.on_message = lambda cl, u, m: (snapshots.put(m) if m.topic.endswith("/snapshot") else replies.put(json.loads(m.payload)))
    c.connect(host, port, keepalive=10)
    c.subscribe("scangate/door-1/reply", 1)
    c.subscribe("scangate/door-1/snapshot", 1)
    c.loop_start()
    time.sleep(0.5)

    def send(topic, payload, retain=False):
        while not replies.empty():
            replies.get()
        c.publish(f"scangate/door-1/{topic}", payload, qos=1, retain=retain).wait_for_publish(5)
        try:
            return replies.get(timeout=8)
        except queue.Empty:
            return {"ok": None, "reason": "no reply"}

    before = open(allow_list).read()
    r = send("bundle", bundle(5, "text:UNSIGNED label=x\n"))
    result(r.get("ok") is False and open(allow_list).read() == before,
           f"an unsigned bundle is refused, the allow-list kept ({r.get('reason')})")
    r = send("bundle", signed(bundle(5, "text:FORGED label=x\n"), with_seed=os.urandom(32)))
    result(r.get("ok") is False and open(allow_list).read() == before,
           f"a bundle signed by another key is refused ({r.get('reason')})")
    new = "text:FLEET-PASS-1 label=fleet\ntext:FLEET-STATIC-1 label=static static=yes\ntext:FLEET-PASS-2 label=bundled\n"
    r = send("bundle", signed(bundle(5, new)))
    time.sleep(0.3)
    result(r.get("ok") is True and r.get("version") == 5 and open(allow_list).read() == new,
           f"a bundle signed by the issuer (pycose) with a newer version is applied: {r}")
    r = send("bundle", signed(bundle(4, "text:OLD label=x\n")))
    result(r.get("ok") is False and "not newer" in r.get("reason", "") and open(allow_list).read() == new,
           f"an older version, validly signed, is refused and the list kept ({r.get('reason')})")
    r = send("bundle", signed(bundle(6, "text:OTHER label=x\n", reader="door-2")))
    result(r.get("ok") is False and open(allow_list).read() == new, f"a bundle for another reader is refused ({r.get('reason')})")
    status = signed(command("status"))
    r = send("command", status)
    result(r.get("ok") is True and "acknowledged through" in r.get("result", ""), f"a signed status command answers: {r.get('result')}")
    r = send("command", status)
    result(r.get("ok") is False and "replayed" in r.get("reason", ""), f"the same command again is refused ({r.get('reason')})")
    r = send("command", signed(command("open")), retain=True)
    result(r.get("ok") is False and "retained" in r.get("reason", ""), f"a retained command is never acted on ({r.get('reason')})")
    c.publish("scangate/door-1/command", b"", qos=1, retain=True).wait_for_publish(5)  # clear it
    time.sleep(1)  # its own refusal (retained, empty) is not the next check's reply
    r = send("command", signed(command("open", expires_in=-5)))
    result(r.get("ok") is False and "expired" in r.get("reason", ""), f"an expired command is refused ({r.get('reason')})")
    r = send("command", command("open"))
    result(r.get("ok") is False, f"an unsigned command is refused ({r.get('reason')})")
    r = send("command", signed(command("open")))
    result(r.get("ok") is True, f"a signed open command is acted on: {r.get('result')}")
    # A command used, then let go once expired (a later command prunes its nonce): kept for the
    # replay after a restart with the clock set back (fleet-test.sh, `replay`).
    used = signed(command("status", expires_in=2))
    r = send("command", used)
    open(os.path.join(os.path.dirname(allow_list), "used-command.cose"), "wb").write(used)
    time.sleep(3)
    r2 = send("command", signed(command("status")))
    result(r.get("ok") is True and r2.get("ok") is True, "a short-lived command is acted on, and a later one lets its nonce go")

    # Snapshot (fleet.snapshot = redacted): a PNG of the next frame, every located code blanked.
    shown = zbar(open(frame, "rb").read())
    r = send("command", signed(command("snapshot")))
    try:
        m = snapshots.get(timeout=5)
        png = m.payload
    except queue.Empty:
        m, png = None, b""
    text = r.get("result", "")
    codes = int(text.split(" codes")[0].split(", ")[-1]) if r.get("ok") and " codes" in text else 0
    result(r.get("ok") is True and m is not None and not m.retain and png[:8] == b"\x89PNG\r\n\x1a\n"
           and "redacted" in text and codes >= 1,
           f"a signed snapshot command publishes a PNG of the frame, not retained: {text or r.get('reason')}")
    found = zbar(png) if png else ["(no PNG)"]
    result(shown == ["FLEET-PASS-1"] and found == [],
           f"ZBar reads {shown} in the frame shown, and nothing in the redacted snapshot ({found})")
    if png:
        open(os.path.join(os.path.dirname(allow_list), "snapshot-redacted.png"), "wb").write(png)
    c.loop_stop()
    return failed


def replay(ca, cert, key, host, port, path):
    """Sends a captured signed command again; it must be refused (replayed or expired)."""
    import queue
    import paho.mqtt.client as mqtt

    replies = queue.Queue()
    c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="replayer", protocol=mqtt.MQTTv311)
    c.tls_set(ca_certs=ca, certfile=cert, keyfile=key, cert_reqs=ssl.CERT_REQUIRED)
    c.on_message = lambda cl, u, m: replies.put(json.loads(m.payload))
    c.connect(host, port, keepalive=10)
    c.subscribe("scangate/door-1/reply", 1)
    c.loop_start()
    time.sleep(0.5)
    c.publish("scangate/door-1/command", open(path, "rb").read(), qos=1).wait_for_publish(5)
    try:
        r = replies.get(timeout=8)
    except queue.Empty:
        r = {"ok": None, "reason": "no reply"}
    c.loop_stop()
    ok = r.get("ok") is False and ("replayed" in r.get("reason", "") or "expired" in r.get("reason", ""))
    print(("PASS" if ok else "FAIL") + " fleet: a used command captured off the broker, replayed after its nonce was let go and "
          f"the reader restarted with its clock 40 s behind, is refused ({r.get('reason')})")
    return 0 if ok else 1


if __name__ == "__main__":
    if sys.argv[1] == "watch":
        watch(*sys.argv[2:7], int(sys.argv[7]))
    elif sys.argv[1] == "control":
        sys.exit(1 if control(*sys.argv[2:6], int(sys.argv[6]), *sys.argv[7:11]) else 0)
    elif sys.argv[1] == "replay":
        sys.exit(replay(*sys.argv[2:6], int(sys.argv[6]), sys.argv[7]))
    elif sys.argv[1] == "check":
        sys.exit(1 if check(*sys.argv[2:]) else 0)
