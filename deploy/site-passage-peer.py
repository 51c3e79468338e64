#!/usr/bin/env python3
"""An independent implementation of the site passages' key tree (docs/credentials.md, "The key
tree"), with Python's standard library only: libsodium's crypto_kdf is BLAKE2b keyed by the parent
key, the subkey id as the salt and the context as the personalisation, so hashlib.blake2b computes it.

  site-passage-peer.py verify SITE_KEY MESSAGE_FILE PAYLOAD   checks a reader's passage: key id, identity, MAC
  site-passage-peer.py forge SITE_KEY PAYLOAD NOW             prints an exit passage MACed the way an attacker can:
      under the identity a listener saw for a code whose payload is the old MAC label
  site-passage-peer.py verify-use SITE_KEY MESSAGE_FILE ID_HEX  checks a reader's counted use: key id, identity, MAC
  site-passage-peer.py use SITE_KEY ID_HEX NOW READER         prints a counted use as a reader of the site would send it
Prints PASS/FAIL lines (verify, verify-use) or the message (forge, use)."""
import hashlib, hmac, struct, sys

def kdf(key, context, subkey_id=1, size=32):
    return hashlib.blake2b(b"", digest_size=size, key=key, salt=struct.pack("<Q", subkey_id) + bytes(8),
                           person=context + bytes(8)).digest()

def tag(key, payload):
    return hmac.new(key, hashlib.sha256(payload).digest(), hashlib.sha256).digest()

def read_key(path):
    raw = open(path, "rb").read()
    return raw if len(raw) == 32 else bytes.fromhex(raw.decode().strip())

def main():
    mode, key = sys.argv[1], read_key(sys.argv[2])
    key_id = kdf(key, b"SGkeyid_")[:8].hex()
    if mode == "verify":
        message = open(sys.argv[3], "rb").read().strip()
        fields = message.split(b" ")
        ok = len(fields) == 8 and fields[0] == b"scangate-passage" and fields[1] == b"2"
        print(("PASS" if ok else "FAIL") + f" site-passage-peer: the reader's message has the documented form ({message[:40]!r}...)")
        if not ok:
            return 1
        checks = [
            ("its key id is BLAKE2b-KDF(site key, 'SGkeyid_', 1)[:8]", fields[2].decode() == key_id),
            ("its identity is HMAC-SHA-256(KDF(site key, 'SGpassid', 1), SHA-256(payload))",
             fields[6].decode() == tag(kdf(key, b"SGpassid"), sys.argv[4].encode()).hex()),
            ("its MAC is HMAC-SHA-256(KDF(site key, 'SGpassmc', 1), SHA-256(the text before it))",
             fields[7].decode() == tag(kdf(key, b"SGpassmc"), message[:-65]).hex()),
            ("no derived key equals an identity a listener can see (the old MAC label's payload)",
             tag(kdf(key, b"SGpassid"), b"scangate-site-passage-mac-1") not in (kdf(key, b"SGpassmc"), kdf(key, b"SGpassid"))),
        ]
        for what, good in checks:
            print(("PASS" if good else "FAIL") + " site-passage-peer: " + what)
        return 0 if all(good for _, good in checks) else 1
    if mode == "verify-use":
        message = open(sys.argv[3], "rb").read().strip()
        fields = message.split(b" ")
        ok = len(fields) == 8 and fields[0] == b"scangate-use" and fields[1] == b"1"
        print(("PASS" if ok else "FAIL") + f" site-passage-peer: the reader's counted use has the documented form ({message[:40]!r}...)")
        if not ok:
            return 1
        pass_id = bytes.fromhex(sys.argv[4])
        checks = [
            ("the use's key id is BLAKE2b-KDF(site key, 'SGkeyid_', 1)[:8]", fields[2].decode() == key_id),
            ("its identity is HMAC-SHA-256(KDF(site key, 'SGuseid_', 1), SHA-256(the pass's id))",
             fields[6].decode() == tag(kdf(key, b"SGuseid_"), pass_id).hex()),
            ("its MAC is HMAC-SHA-256(KDF(site key, 'SGusemac', 1), SHA-256(the text before it))",
             fields[7].decode() == tag(kdf(key, b"SGusemac"), message[:-65]).hex()),
            ("the pass's id is not in the message", sys.argv[4].lower().encode() not in message),
        ]
        for what, good in checks:
            print(("PASS" if good else "FAIL") + " site-passage-peer: " + what)
        return 0 if all(good for _, good in checks) else 1
    if mode == "use":
        pass_id, now, reader = bytes.fromhex(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
        identity = tag(kdf(key, b"SGuseid_"), pass_id).hex()
        text = f"scangate-use 1 {key_id} {reader} {now * 1000} {now + 86400} {identity}".encode()
        sys.stdout.write((text + b" " + tag(kdf(key, b"SGusemac"), text).hex().encode()).decode())
        return 0
    if mode == "forge":
        payload, now = sys.argv[3].encode(), sys.argv[4]
        seen = tag(kdf(key, b"SGpassid"), b"scangate-site-passage-mac-1")  # published by a reader, captured
        identity = tag(kdf(key, b"SGpassid"), payload).hex()  # also captured from the site topic
        text = f"scangate-passage 2 {key_id} gate-ghost exit {now} {identity}".encode()
        sys.stdout.write((text + b" " + tag(seen, text).hex().encode()).decode())
        return 0
    return 2

sys.exit(main())
