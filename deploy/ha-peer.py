"""Home Assistant's side of the command entities (an independent client, not ScanGate code).

  ha-peer.py BIN CONFIG JOURNAL HOST PORT DIR CODE

paho-mqtt acts as Home Assistant (user `homeassistant`) and as another client of the same broker
(user `intruder`) against the real `scangate run` (BIN, CONFIG; its journal appended to JOURNAL).
The broker's ACL (deploy/fleet-ha.sh, as docs/fleet.md gives it) lets only Home Assistant publish
on the command topics. DIR holds the users' password files (homeassistant.pw, intruder.pw).
Checks, each a PASS/FAIL line:
- discovery announces the lock and the lockdown switch with the keys Home Assistant documents
  (lock.mqtt, switch.mqtt: "Configuration Variables"), the code asked for (code_format);
- the first state after the reader connects already says what the reader knows (door contact,
  tamper, strike, fire, lockdown), before anything moved;
- the intruder's publishes are refused by the broker (MQTT 5 PUBACK "Not authorized") and change
  nothing; Home Assistant's wrong code opens nothing; its right code pulses the relay (the strike
  UNLOCKED then LOCKED on the state topic, the pulse and who asked in the journal);
- the lockdown switch latches it; after a kill -9 and a restart the first state says lockdown ON
  (never OFF or unknown until something moves); switched off, it is lifted.
"""
import json
import os
import signal
import subprocess
import sys
import threading
import time

import paho.mqtt.client as mqtt
from paho.mqtt.properties import Properties  # noqa: F401  (MQTT 5 client)

COMMON = {"name", "unique_id", "default_entity_id", "availability_topic", "payload_available",
          "payload_not_available", "device", "origin", "availability", "availability_mode", "icon",
          "enabled_by_default", "entity_category", "json_attributes_topic", "json_attributes_template",
          "qos", "encoding", "entity_picture", "platform", "availability_template", "object_id", "group"}
DOCUMENTED = {
    # https://www.home-assistant.io/integrations/lock.mqtt/
    "lock": COMMON | {"code_format", "command_template", "command_topic", "optimistic", "payload_lock", "payload_open",
                      "payload_reset", "payload_unlock", "retain", "state_jammed", "state_locked", "state_locking",
                      "state_topic", "state_unlocked", "state_unlocking", "value_template"},
    # https://www.home-assistant.io/integrations/switch.mqtt/
    "switch": COMMON | {"command_template", "command_topic", "device_class", "optimistic", "payload_off", "payload_on",
                        "retain", "state_off", "state_on", "state_topic", "value_template"},
    # https://www.home-assistant.io/integrations/button.mqtt/
    "button": COMMON | {"command_template", "command_topic", "device_class", "payload_press", "retain"},
}
READER = "door-1"
failed = 0


def result(ok, text):
    global failed
    print(("PASS" if ok else "FAIL") + " ha-commands: " + text, flush=True)
    failed += 0 if ok else 1


class Client:
    """One MQTT 5 client whose messages and PUBACK reason codes are kept, in order."""

    def __init__(self, user, password, host, port):
        self.messages, self.acks, self.lock = [], {}, threading.Lock()
        self.c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=user, protocol=mqtt.MQTTv5)
        self.c.username_pw_set(user, password)
        self.c.on_message = self.on_message
        self.c.on_publish = self.on_publish
        self.c.connect(host, port)
        self.c.loop_start()

    def on_message(self, client, userdata, msg):
        with self.lock:
            self.messages.append((time.monotonic(), msg.topic, msg.payload.decode("utf-8", "replace"), msg.retain))

    def on_publish(self, client, userdata, mid, reason, props):
        with self.lock:
            self.acks[mid] = reason

    def publish(self, topic, payload):
        """Publishes at QoS 1 and returns the broker's PUBACK reason code."""
        info = self.c.publish(topic, payload, qos=1, retain=False)
        for _ in range(100):
            with self.lock:
                if info.mid in self.acks:
                    return self.acks[info.mid]
            time.sleep(0.05)
        return None

    def states(self, since=0.0):
        with self.lock:
            return [json.loads(p) for t, topic, p, r in self.messages
                    if topic == f"scangate/{READER}/state" and t >= since and p]

    def wait(self, predicate, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if predicate():
                return True
            time.sleep(0.05)
        return predicate()


def journal_has(path, text):
    with open(path, errors="replace") as f:
        return text in f.read()


def main(binary, config, journal, host, port, folder, code):
    port = int(port)
    password = {u: open(os.path.join(folder, u + ".pw")).read().strip() for u in ("homeassistant", "intruder")}
    log = open(journal, "ab")

    def start():
        return subprocess.Popen([binary, "run", "--config", config], stdout=log, stderr=log)

    ha = Client("homeassistant", password["homeassistant"], host, port)
    ha.c.subscribe([("homeassistant/#", 1), (f"scangate/{READER}/state", 1), (f"scangate/{READER}/status", 1)])
    time.sleep(0.5)
    began = time.monotonic()
    reader = start()
    try:
        configs = {}

        def discovered():
            with ha.lock:
                for _, topic, payload, _ in ha.messages:
                    parts = topic.split("/")
                    if len(parts) == 5 and parts[0] == "homeassistant" and parts[2] == READER and payload:
                        configs[(parts[1], parts[3])] = json.loads(payload)
            return ("lock", "strike") in configs and ("switch", "lockdown") in configs

        result(ha.wait(discovered, 120), f"discovery announces the door's lock and the lockdown switch ({sorted(configs)})")
        bad = []
        for (component, obj), c in configs.items():
            if component in DOCUMENTED:
                bad += [f"{component}/{obj}: {k}" for k in sorted(c.keys() - DOCUMENTED[component])]
                if c.get("retain") is not False or "command_topic" not in c:
                    bad.append(f"{component}/{obj}: retain {c.get('retain')}, command_topic {c.get('command_topic')}")
        lock, switch = configs.get(("lock", "strike"), {}), configs.get(("switch", "lockdown"), {})
        result(not bad and lock.get("code_format") == r"^\d{4,12}$" and ("button", "passback_forgive") not in configs,
               f"the command entities have only documented keys, ask for the code, and only listed commands exist ({bad})")
        # What the reader knows at once: nothing has moved yet, and every fact is on the first state.
        keys = {"door_contact", "tamper", "strike", "fire", "lockdown"}
        first = ha.wait(lambda: ha.states(began), 60) and ha.states(began)[0]
        result(first and keys <= first.keys(), f"the first state after the start says {sorted(keys)} ({first})")

        def strike_was(value, since):
            return any(s.get("strike") == value for s in ha.states(since))

        # The intruder: the broker refuses its publishes on the command topics; nothing moves.
        intruder = Client("intruder", password["intruder"], host, port)
        time.sleep(0.5)
        t0 = time.monotonic()
        r1 = intruder.publish(lock["command_topic"], f"UNLOCK {code}")
        r2 = intruder.publish(switch["command_topic"], "ON")
        time.sleep(2.5)
        refused = r1 is not None and r1.is_failure and r2 is not None and r2.is_failure
        result(refused and not strike_was("UNLOCKED", t0) and all(s.get("lockdown") == "OFF" for s in ha.states(t0)),
               f"the ACL refuses another client's open and lockdown (PUBACK {r1}, {r2}) and nothing changes")
        intruder.c.loop_stop()
        # A wrong code opens nothing.
        t0 = time.monotonic()
        ha.publish(lock["command_topic"], "UNLOCK " + ("1" * len(code) if code != "1" * len(code) else "2" * len(code)))
        said = ha.wait(lambda: journal_has(journal, "home-assistant: open refused: wrong code"), 20)
        time.sleep(0.5)
        result(said and not strike_was("UNLOCKED", t0),
               "a wrong code opens nothing (said in the journal)")
        # The right code, as Home Assistant renders the lock's command_template, a second later.
        time.sleep(1.1)
        t0 = time.monotonic()
        rendered = lock["command_template"].replace("{{ value }}", lock["payload_unlock"]).replace("{{ code }}", code)
        ha.publish(lock["command_topic"], rendered)
        opened = ha.wait(lambda: strike_was("UNLOCKED", t0), 10)
        relocked = ha.wait(lambda: any(s.get("strike") == "LOCKED" for s in ha.states(t0) if s), 15)
        # The journal is printed by its own thread, behind the state topic on a busy machine: waited for.
        said = ha.wait(lambda: journal_has(journal, "by home-assistant"), 10)
        result(opened and relocked and said,
               f"the right code pulses the relay: the strike UNLOCKED then LOCKED, the journal says by home-assistant ({rendered!r})")
        time.sleep(1.1)
        t0 = time.monotonic()
        ha.publish(switch["command_topic"], switch["payload_on"])
        on = ha.wait(lambda: any(s.get("lockdown") == "ON" for s in ha.states(t0)), 10)
        said = ha.wait(lambda: journal_has(journal, "lockdown on home-assistant"), 10)
        result(on and said, "the switch latches a lockdown (lockdown on home-assistant)")
        # kill -9 and a start: the first state after it says what the reader knows at once.
        reader.send_signal(signal.SIGKILL)
        reader.wait()
        t0 = time.monotonic()
        reader = start()
        after = ha.wait(lambda: ha.states(t0), 120) and ha.states(t0)[0]
        result(after and after.get("lockdown") == "ON" and keys <= after.keys(),
               f"after kill -9 and a start the first state says lockdown ON and the door at once ({after})")
        time.sleep(1.1)
        t0 = time.monotonic()
        ha.publish(switch["command_topic"], switch["payload_off"])
        off = ha.wait(lambda: any(s.get("lockdown") == "OFF" for s in ha.states(t0)), 10)
        result(off, "switched off, the lockdown Home Assistant latched is lifted")
    finally:
        reader.send_signal(signal.SIGTERM)
        try:
            reader.wait(30)
        except subprocess.TimeoutExpired:
            reader.kill()
        ha.c.loop_stop()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
