"""A real OSDP control panel (libosdp's Python binding, an implementation we did not write)
driving ScanGate's OSDP peripheral over one end of a pty pair. Prints PASS/FAIL lines.

  panel-cp.py secure PORT KEYHEX        discover (ID, CAP), Secure Channel, LED/BUZ/OUT, a card read
  panel-cp.py wrongkey PORT KEYHEX      a wrong SCBK: no secure session, no card data in the clear
  panel-cp.py garbage PORT              noise and cut-off packets: NAK or silence, then still answers
  panel-cp.py comset PORT KEYHEX        osdp_COMSET to address 5 at 19200 baud: the reader follows
  panel-cp.py online PORT KEYHEX ADDR   the reader comes online at address ADDR (after a restart)
  panel-cp.py install PORT KEYHEX       install mode: Secure Channel with the default key SCBK-D, then
                                        osdp_KEYSET installs KEYHEX; the session comes back on KEYHEX
  panel-cp.py defaultkey PORT KEYHEX    an impersonator that knows only SCBK-D and would install KEYHEX:
                                        must get no Secure Channel session and no card data
"""
import errno
import os
import sys
import time

import osdp
from osdp import (Capability, CardFormat, Channel, Command, CommandLEDColor, ControlPanel, Event,
                  LibFlag, LogLevel, PDInfo)

passed = failed = 0


def check(ok, text):
    global passed, failed
    print(("PASS" if ok else "FAIL") + " panel: " + text, flush=True)
    if ok:
        passed += 1
    else:
        failed += 1


class PtyChannel(Channel):
    def __init__(self, path):
        super().__init__()
        self.fd = os.open(path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)

    def read(self, max_bytes):
        try:
            return os.read(self.fd, max_bytes)
        except OSError as e:
            if e.errno in (errno.EAGAIN, errno.EWOULDBLOCK):
                return b""
            raise

    def write(self, buf):
        try:
            return os.write(self.fd, buf)
        except OSError as e:
            if e.errno in (errno.EAGAIN, errno.EWOULDBLOCK):
                return 0
            raise

    def flush(self):
        while self.read(1024):
            pass


def events(cp, seconds, want):
    """Events from the CP until `want(event)` or the time is up; returns the matching one."""
    end = time.time() + seconds
    while time.time() < end:
        e = cp.get_event(0, timeout=1)
        if e is not None and want(e):
            return e
    return None


def secure(port, key):
    cp = ControlPanel([PDInfo(0, PtyChannel(port), scbk=key, flags=[LibFlag.EnforceSecure])], log_level=LogLevel.Warning)
    cp.start()
    try:
        check(cp.online_wait(0, timeout=20), "the panel discovers the reader (ID, CAP) and brings it online")
        pd_id = cp.get_pd_id(0)
        check(pd_id.vendor_code == 0x534700, f"osdp_PDID vendor code {pd_id.vendor_code:#x}")
        level, _ = cp.check_capability(0, Capability.CommunicationSecurity)
        check(level & 1 == 1, "osdp_PDCAP reports AES-128 Secure Channel")
        check(cp.sc_wait(0, timeout=10), "Secure Channel is up with the configured SCBK")
        led = {"command": Command.LED, "reader": 0, "led_number": 0, "control_code": 2, "on_count": 5, "off_count": 0,
               "on_color": CommandLEDColor.Green, "off_color": CommandLEDColor.Black, "timer_count": 20, "temporary": True}
        check(cp.submit_command(0, led), "LED command accepted by the panel")
        time.sleep(0.5)
        buz = {"command": Command.Buzzer, "reader": 0, "control_code": 2, "on_count": 3, "off_count": 2, "rep_count": 2}
        check(cp.submit_command(0, buz), "BUZ command accepted by the panel")
        time.sleep(1.0)
        out = {"command": Command.Output, "output_no": 0, "control_code": 2, "timer_count": 0}
        check(cp.submit_command(0, out), "OUT command accepted by the panel")
        status = events(cp, 5, lambda e: e.get("event") == Event.Status)
        check(status is not None and list(status.get("report", []))[:1] == [1],
              f"OUT answered with the output status (on): {status}")
        print("panel: cp-commands-sent", flush=True)
        card = events(cp, 25, lambda e: e.get("event") == Event.CardRead)
        check(card is not None, "a card read arrives for the pass decoded from the replayed frame")
        if card is not None:
            # 26-bit H10301, facility 212, card 7041: the CN56 manual's worked example
            # 1 11010100 00011011 10000001 0, packed MSB first.
            check(card.get("format") == CardFormat.Wiegand and card.get("length") == 26,
                  f"card read: Wiegand format, 26 bits ({card.get('format')}, {card.get('length')})")
            check(bytes(card.get("data", b""))[:4] == bytes([0xEA, 0x0D, 0xC0, 0x80]),
                  f"card bits are H10301 212:7041 with parity ({bytes(card.get('data', b'')).hex()})")
        check(cp.is_sc_active(0), "Secure Channel still up after the card read")
    finally:
        cp.stop()


def wrongkey(port, key):
    # The panel does not insist on Secure Channel: it would take card data in the clear if the
    # reader sent any. The reader (enforce_secure) must not.
    cp = ControlPanel([PDInfo(0, PtyChannel(port), scbk=key)], log_level=LogLevel.Emergency)
    cp.start()
    try:
        end = time.time() + 16
        secured = False
        while time.time() < end:
            secured = secured or cp.is_sc_active(0)
            e = cp.get_event(0, timeout=1)
            if e is not None and e.get("event") == Event.CardRead:
                check(False, "wrong SCBK: a card read reached the panel")
                return
        check(not secured, "wrong SCBK: no secure session")
        check(True, "wrong SCBK: no card data in the clear while a pass was shown (16 s)")
    finally:
        cp.stop()


def comset(port, key):
    cp = ControlPanel([PDInfo(0, PtyChannel(port), scbk=key, flags=[LibFlag.EnforceSecure])], log_level=LogLevel.Warning)
    cp.start()
    try:
        check(cp.online_wait(0, timeout=20) and cp.sc_wait(0, timeout=10), "COMSET: the reader is online, secure, at address 0")
        check(cp.submit_command(0, {"command": Command.Comset, "address": 5, "baud_rate": 19200}),
              "COMSET (address 5, 19200 baud) accepted by the panel")
        time.sleep(2)
        check(cp.online_wait(0, timeout=15), "COMSET: the panel, now polling address 5, still has the reader online")
    finally:
        cp.stop()


def online(port, key, address):
    cp = ControlPanel([PDInfo(address, PtyChannel(port), scbk=key, flags=[LibFlag.EnforceSecure])], log_level=LogLevel.Warning)
    cp.start()
    try:
        check(cp.online_wait(address, timeout=20), f"the reader answers at address {address}")
    finally:
        cp.stop()


def install(port, key):
    # libosdp's install flow: the panel holds the key it means to install; with InstallMode it
    # falls back to the default key SCBK-D when its own is refused, sends osdp_KEYSET with its
    # key inside that session, and sets Secure Channel up again on the installed key.
    cp = ControlPanel([PDInfo(0, PtyChannel(port), scbk=key, flags=[LibFlag.InstallMode])], log_level=LogLevel.Warning)
    cp.start()
    try:
        check(cp.online_wait(0, timeout=20) and cp.sc_wait(0, timeout=20),
              "install mode: SCBK-D session, osdp_KEYSET, then Secure Channel up on the installed key")
        time.sleep(2)
        check(cp.is_online(0) and cp.is_sc_active(0), "install mode: the session on the installed key stays up")
    finally:
        cp.stop()


def defaultkey(port, key):
    # An impersonator on the RS-485 bus: it knows only SCBK-D and would install its own key
    # (`key`) with osdp_KEYSET the way the install flow above does.
    cp = ControlPanel([PDInfo(0, PtyChannel(port), scbk=key, flags=[LibFlag.InstallMode])], log_level=LogLevel.Emergency)
    cp.start()
    try:
        end = time.time() + 12
        secured = False
        while time.time() < end:
            secured = secured or cp.is_sc_active(0)
            e = cp.get_event(0, timeout=1)
            if e is not None and e.get("event") == Event.CardRead:
                check(False, "default key: a card read reached a panel that knows only SCBK-D")
                return
        check(not secured, "default key: no Secure Channel session for a panel that knows only SCBK-D (12 s)")
    finally:
        cp.stop()


def crc16(b):
    c = 0x1D0F
    for x in b:
        c ^= x << 8
        for _ in range(8):
            c = ((c << 1) ^ 0x1021) & 0xFFFF if c & 0x8000 else (c << 1) & 0xFFFF
    return c


def packet(seq, cmd, data=b""):
    p = bytearray([0x53, 0, 0, 0, seq | 4, cmd]) + data
    n = len(p) + 2
    p[2], p[3] = n & 0xFF, n >> 8
    c = crc16(p)
    return bytes(p + bytes([c & 0xFF, c >> 8]))


def garbage(port):
    ch = PtyChannel(port)

    def exchange(data, wait=0.4):
        ch.flush()
        os.write(ch.fd, data)
        time.sleep(wait)
        out = b""
        while True:
            chunk = ch.read(4096)
            if not chunk:
                return out
            out += chunk

    import random
    rng = random.Random(7)
    noise = bytes(rng.randrange(256) for _ in range(4000))
    replies = exchange(noise, 1.0)
    # Every byte the reader sent back must be a whole NAK packet (or nothing at all).
    ok = True
    i = 0
    while i < len(replies):
        if replies[i] == 0xFF:
            i += 1
            continue
        if replies[i] != 0x53 or i + 4 > len(replies):
            ok = False
            break
        n = replies[i + 2] | replies[i + 3] << 8
        body = replies[i:i + n]
        if len(body) < 7 or body[5] not in (0x41,) :
            ok = False
            break
        i += n
    check(ok, f"4000 random bytes: only NAKs or silence ({len(replies)} bytes back)")
    cut = packet(0, 0x61, b"\x00")[:6]
    check(exchange(cut, 0.5) == b"", "a cut-off packet: silence")
    bad = bytearray(packet(0, 0x61, b"\x00"))
    bad[-1] ^= 0xFF
    r = exchange(bytes(bad))
    check(len(r) >= 8 and r[5] == 0x41 and r[6] == 1, f"a packet with a bad CRC: NAK 1 ({r.hex()})")
    r = exchange(packet(0, 0x61, b"\x00"))
    check(len(r) >= 8 and r[5] == 0x45, f"after the noise, osdp_ID still answered with osdp_PDID ({r.hex()[:16]}...)")


def main():
    mode, port = sys.argv[1], sys.argv[2]
    if mode == "secure":
        secure(port, bytes.fromhex(sys.argv[3]))
    elif mode == "wrongkey":
        wrongkey(port, bytes.fromhex(sys.argv[3]))
    elif mode == "garbage":
        garbage(port)
    elif mode == "comset":
        comset(port, bytes.fromhex(sys.argv[3]))
    elif mode == "online":
        online(port, bytes.fromhex(sys.argv[3]), int(sys.argv[4]))
    elif mode == "install":
        install(port, bytes.fromhex(sys.argv[3]))
    elif mode == "defaultkey":
        defaultkey(port, bytes.fromhex(sys.argv[3]))
    print(f"panel-cp {mode}: {passed} passed, {failed} failed", flush=True)
    sys.exit(0 if failed == 0 else 1)


if __name__ == "__main__":
    main()
