"""Home Assistant's side of the fleet test (an independent checker, not ScanGate code).

  ha-schema.py OUT DB READER VERDICTS_SWIFT PAYLOAD...

OUT is what deploy/fleet-peer.py `watch` recorded off the real broker while the real binary ran
(one JSON line per message), DB the reader's audit database, VERDICTS_SWIFT the Verdict source
(Sources/Base/Core/Verdict.swift: the names the event types must be), PAYLOAD the codes shown to
the reader (to recompute their keyed tags). Prints PASS/FAIL lines.

Checked against what Home Assistant documents for MQTT discovery
(https://www.home-assistant.io/integrations/mqtt/, sensor.mqtt, binary_sensor.mqtt, event.mqtt:
"Configuration Variables"): every config payload is a JSON object for a platform the reader may
announce (no command platform: nothing unsigned opens a door), with the required keys, no key
the platform does not document, each value of the documented type, `default_entity_id` instead
of the deprecated `object_id`, one device, availability on the status topic. Then what the
entities read: each state key with a value the entity accepts, and one event message on the
decision topic for each decision the audit log holds (repeats included), saying what the
record says and never the payload or its SHA-256.
"""
import hashlib
import hmac
import json
import os
import re
import sqlite3
import sys

# Keys each platform documents (type: "str", "bool", "int", "list", "map", "template", "strlist",
# or a set of allowed strings). `object_id` is documented but deprecated (Home Assistant 2025.10:
# "use default_entity_id"): its presence is a failure of its own.
COMMON = {
    "availability": "list", "availability_mode": {"all", "any", "latest"}, "availability_template": "template",
    "availability_topic": "str", "default_entity_id": "str", "device": "map", "enabled_by_default": "bool",
    "encoding": "str", "entity_category": {"config", "diagnostic"}, "entity_picture": "str", "group": "strlist",
    "icon": "str", "json_attributes_template": "template", "json_attributes_topic": "str", "name": "str",
    "object_id": "str", "origin": "map", "payload_available": "str", "payload_not_available": "str",
    "platform": "str", "qos": "int", "unique_id": "str",
}
BINARY_SENSOR_CLASSES = {
    "battery", "battery_charging", "carbon_monoxide", "cold", "connectivity", "door", "garage_door", "gas", "heat",
    "light", "lock", "moisture", "motion", "moving", "occupancy", "opening", "plug", "power", "presence", "problem",
    "running", "safety", "smoke", "sound", "tamper", "update", "vibration", "window",
}
PLATFORMS = {
    "sensor": ({"state_topic"}, dict(COMMON, **{
        "device_class": "str", "expire_after": "int", "force_update": "bool", "last_reset_value_template": "template",
        "options": "strlist", "state_class": {"measurement", "measurement_angle", "total", "total_increasing"},
        "state_topic": "str", "suggested_display_precision": "int", "unit_of_measurement": "str",
        "value_template": "template"})),
    "binary_sensor": ({"state_topic"}, dict(COMMON, **{
        "device_class": BINARY_SENSOR_CLASSES, "expire_after": "int", "force_update": "bool", "off_delay": "int",
        "payload_off": "str", "payload_on": "str", "state_topic": "str", "value_template": "template"})),
    "event": ({"state_topic", "event_types"}, dict(COMMON, **{
        "device_class": {"button", "doorbell", "motion"}, "event_types": "strlist", "state_topic": "str",
        "value_template": "template"})),
}
COMMAND_PLATFORMS = {"lock", "button", "switch", "number", "select", "text", "cover", "valve", "siren", "light", "fan"}
DEVICE_KEYS = {"configuration_url": "str", "connections": "list", "hw_version": "str", "identifiers": "strlist",
               "manufacturer": "str", "model": "str", "model_id": "str", "name": "str", "serial_number": "str",
               "suggested_area": "str", "sw_version": "str", "via_device": "str"}
# Home Assistant's entity id: domain "." object id, lower-case letters, digits, single underscores inside.
ENTITY_ID = re.compile(r"^(?!.+__)(?!_)[\da-z_]+(?<!_)\.(?!_)[\da-z_]+(?<!_)$")
# The templates the reader writes: a state key, optionally "| default('None')" (Home Assistant shows
# a binary sensor's "None" as unknown).
TEMPLATE = re.compile(r"^\{\{ value_json\.([a-z_]+)( \| default\('None'\))? \}\}$")
EVENT_ATTRIBUTES = {"event_type", "label", "by", "reader", "tag", "seq", "time"}


def type_ok(value, kind):
    if isinstance(kind, set):
        return isinstance(value, str) and value in kind
    return {
        "str": lambda v: isinstance(v, str) and v != "",
        "template": lambda v: isinstance(v, str) and "{{" in v,
        "bool": lambda v: isinstance(v, bool),
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "list": lambda v: isinstance(v, list),
        "map": lambda v: isinstance(v, dict),
        "strlist": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
    }[kind](value)


def main(out, db, reader, verdict_swift, *payloads):
    failed = 0

    def result(ok, text):
        nonlocal failed
        print(("PASS" if ok else "FAIL") + " ha: " + text)
        failed += 0 if ok else 1

    lines = [json.loads(l) for l in open(out) if l.strip()]
    verdicts = re.findall(r'case \.\w+: "([a-z-]+)"', open(verdict_swift).read().split("public var name")[1].split("}\n}")[0])
    # The last message on each config topic is what Home Assistant holds (an empty one removes it).
    last = {}
    for l in lines:
        parts = l["topic"].split("/")
        if parts[0] == "homeassistant" and len(parts) == 5 and parts[2] == reader and parts[4] == "config":
            last[l["topic"]] = l
    configs, problems, cleared = {}, [], []
    for topic, l in sorted(last.items()):
        component, obj = topic.split("/")[1], topic.split("/")[3]
        if l["payload"] == "":
            cleared.append(f"{component}/{obj}")
            continue
        try:
            c = json.loads(l["payload"])
        except ValueError:
            problems.append(f"{topic}: not JSON")
            continue
        if not isinstance(c, dict) or component not in PLATFORMS:
            problems.append(f"{topic}: {component} is not a platform the reader may announce")
            continue
        configs[(component, obj)] = c
    result(configs and not problems and not any(k[0] in COMMAND_PLATFORMS for k in configs),
           f"{len(configs)} discovery payloads, each a JSON object for sensor, binary_sensor or event, no command "
           f"entity ({sorted(f'{c}/{o}' for c, o in configs)}; {problems})")
    result("lock/door" in cleared and not any(c in COMMAND_PLATFORMS for c, o in configs),
           f"the command lock of earlier versions is removed (an empty retained config; cleared: {cleared})")

    bad = []
    for (component, obj), c in configs.items():
        required, known = PLATFORMS[component]
        bad += [f"{component}/{obj}: no {k}" for k in sorted(required - c.keys())]
        bad += [f"{component}/{obj}: unknown key {k}" for k in sorted(c.keys() - known.keys())]
        bad += [f"{component}/{obj}: {k}={c[k]!r} not {known[k]}" for k in sorted(c.keys() & known.keys())
                if not type_ok(c[k], known[k])]
        if "qos" in c and c["qos"] not in (0, 1, 2):
            bad.append(f"{component}/{obj}: qos {c['qos']}")
    result(not bad, f"required keys present, no key the platform does not document, value types as documented ({bad})")

    ids = {}
    bad = []
    for (component, obj), c in configs.items():
        if "object_id" in c:
            bad.append(f"{component}/{obj}: the deprecated object_id")
        e = c.get("default_entity_id", "")
        if not ENTITY_ID.match(e) or not e.startswith(component + "."):
            bad.append(f"{component}/{obj}: default_entity_id {e!r}")
        ids.setdefault(e, []).append(obj)
    bad += [f"{e} used by {o}" for e, o in ids.items() if len(o) > 1]
    result(not bad and configs, f"default_entity_id a valid {{platform}}.{{object id}}, unique; no object_id "
           f"({sorted(ids)[:3]}...; {bad})")

    unique = [c.get("unique_id") for c in configs.values()]
    devices = [c.get("device", {}) for c in configs.values()]
    dev_bad = [f"{d}" for d in devices if set(d) - DEVICE_KEYS.keys() or not all(type_ok(v, DEVICE_KEYS[k]) for k, v in d.items()
                                                                              if k in DEVICE_KEYS)]
    same = all(d.get("identifiers") == devices[0].get("identifiers") and d.get("name") == devices[0].get("name") for d in devices)
    result(configs and all(unique) and len(set(unique)) == len(unique) and same and devices[0].get("identifiers")
           and not dev_bad,
           f"one device ({devices[0].get('identifiers') if devices else None}, {devices[0].get('name') if devices else None})"
           f" for every entity, each with its own unique_id ({dev_bad})")
    status = [l["payload"] for l in lines if l["topic"] == f"scangate/{reader}/status"]
    avail = {(c.get("availability_topic"), c.get("payload_available"), c.get("payload_not_available")) for c in configs.values()}
    result(avail == {(f"scangate/{reader}/status", "online", "offline")} and "online" in status and "offline" in status
           and not any("availability" in c for c in configs.values()),
           f"availability: every entity on scangate/{reader}/status, online/offline, both seen there ({avail})")

    # What the entities read: each state key with a value the entity accepts.
    states = [json.loads(l["payload"]) for l in lines if l["topic"] == f"scangate/{reader}/state"]
    bad, unknown = [], []
    for (component, obj), c in configs.items():
        if component == "event":
            continue
        m = TEMPLATE.match(c.get("value_template", ""))
        if not m or c.get("state_topic") != f"scangate/{reader}/state":
            bad.append(f"{component}/{obj}: reads {c.get('state_topic')} {c.get('value_template')!r}")
            continue
        key, has_default = m.group(1), bool(m.group(2))
        values = [s[key] for s in states if key in s]
        if component == "binary_sensor":
            accepted = {c.get("payload_on", "ON"), c.get("payload_off", "OFF")}
            bad += [f"{obj}: {v!r} is neither {sorted(accepted)}" for v in set(map(str, values)) - accepted]
            if not has_default:
                bad.append(f"{obj}: no default: an absent key would be an error, not unknown")
            if not values:
                unknown.append(obj)
        elif not values:
            bad.append(f"{obj}: {key} never on the state topic")
        elif c.get("state_class") == "measurement" and not all(isinstance(v, (int, float)) for v in values):
            bad.append(f"{obj}: {key} not a number")
    result(not bad and states, f"every sensor's state key is on the state topic with a value it accepts ({len(states)} state "
           f"messages; unknown, never reported here: {unknown}; {bad})")

    # The decision event entity: its types, and one message per decision.
    event = configs.get(("event", "decision"), {})
    result(event.get("event_types") == verdicts and len(verdicts) >= 20 and event.get("state_topic") == f"scangate/{reader}/decision",
           f"the decision event entity's event_types are Verdict's {len(verdicts)} names, on scangate/{reader}/decision")
    key = bytes.fromhex(open(db + ".tag-key").read().strip())
    tags = {hmac.new(key, hashlib.sha256(p.encode()).digest(), hashlib.sha256).hexdigest()[:16]: p for p in payloads}
    prefixes = [hashlib.sha256(p.encode()).hexdigest()[:8] for p in payloads]
    raw = [l for l in lines if l["topic"] == f"scangate/{reader}/decision"]
    messages, bad = [], []
    for l in raw:
        try:
            m = json.loads(l["payload"])
        except ValueError:
            bad.append(f"not JSON: {l['payload'][:60]}")
            continue
        text = l["payload"]
        if l["retain"] or not isinstance(m, dict) or m.get("event_type") not in verdicts or set(m) - EVENT_ATTRIBUTES \
                or any(p in text for p in payloads) or any(x in text.lower() for x in prefixes) \
                or ("tag" in m and m["tag"] not in tags):
            bad.append(text[:120])
            continue
        messages.append(m)
    result(raw and not bad, f"{len(raw)} event messages: not retained, JSON with a known event_type and only "
           f"{sorted(EVENT_ATTRIBUTES)}, no payload nor SHA-256 prefix, a tag only as HMAC(tag key, SHA-256(payload)) "
           f"({len(bad)} bad: {bad[:3]})")

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    rows = conn.execute("SELECT seq, run, verdict, label, detail, digest FROM events WHERE kind='decision' ORDER BY seq").fetchall()
    by_seq = {}
    for m in messages:
        by_seq.setdefault(m.get("seq"), []).append(m)
    wrong = [s for (s, run, v, label, detail, digest) in rows for m in by_seq.get(s, [])
             if (m["event_type"], m.get("label", ""), m.get("by"), m.get("tag", "")) != (v, label, detail or "none", digest)]
    strangers = [s for s in by_seq if s not in {r[0] for r in rows}]
    result(not wrong and not strangers, f"each event message says what its decision record says (event_type, label, by, tag): "
           f"{len(wrong)} differ, {len(strangers)} name no decision in the log")
    # Every decision of the reader's last run (the broker and link stayed up through it) has its
    # event; across the faults earlier, what is missing is shown, not failed (a QoS 1 message the
    # link had handed to a connection that died is not sent again unless its record is).
    last_run = max(r[1] for r in rows) if rows else 0
    final = [r for r in rows if r[1] == last_run]
    missing = [r[0] for r in final if r[0] not in by_seq]
    # A connection lost during the run (a loaded machine: a PUBACK later than the keepalive) may
    # take the events the link had handed to it: at most one batch per reconnection.
    started = conn.execute("SELECT MIN(time_ns) FROM events WHERE run=?", (last_run,)).fetchone()[0] or 0
    connections = sum(1 for l in lines if l["topic"] == f"scangate/{reader}/status" and l["payload"] == "online"
                      and not l["retain"] and l["t"] >= started / 1e9 - 1)
    allowed = max(connections - 1, 0) * int(os.environ.get("HA_BATCH", "20"))
    repeats = {}
    for (s, run, v, label, detail, digest) in final:
        if s in by_seq:
            repeats.setdefault((v, digest), []).append(s)
    repeated = {k: len(v) for k, v in repeats.items() if len(v) >= 2}
    result(len(final) >= 3 and len(missing) <= allowed and repeated,
           f"run {last_run}: an event for each of its {len(final)} decisions ({len(missing)} missing: {missing[:5]}; "
           f"{connections} connections in the run, at most {allowed} may be missed), "
           f"repeats included ({len(repeated)} verdict+tag pairs decided more than once, e.g. "
           f"{max(repeated.values()) if repeated else 0} times)")
    everywhere = [r[0] for r in rows if r[0] not in by_seq]
    print(f"ha: {len(messages)} event messages for {len(rows)} decisions in every run, {len(everywhere)} without one "
          f"(across the broker kill, the link cut and the reader's kill -9), "
          f"{sum(len(v) - 1 for v in by_seq.values())} sent twice")
    return failed


if __name__ == "__main__":
    sys.exit(1 if main(*sys.argv[1:]) else 0)
