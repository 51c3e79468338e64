#!/usr/bin/env python3
"""Signed passes against independent implementations: pycose + cbor2 (COSE_Sign1, CWT),
pyotp (RFC 6238) and PyNaCl (libsodium's sealed boxes, for the PIN claim). Run by deploy/credential-interop.sh with the peers' venv python.
Prints PASS/FAIL lines. Usage: credential-interop.py SCANGATE WORKDIR"""
import base64, hashlib, hmac, json, os, subprocess, sys, time

import cbor2
import pyotp
from pycose.keys import OKPKey
from pycose.keys.curves import Ed25519
from pycose.messages import Sign1Message
from pycose.headers import Algorithm, KID
from pycose.algorithms import EdDSA
from nacl.public import PrivateKey, SealedBox

from base45 import b45decode, b45encode  # deploy/base45.py

B, W = sys.argv[1], sys.argv[2]
failures = 0


def check(name, ok, detail=""):
    global failures
    print(("PASS " if ok else "FAIL ") + name + ("" if ok else f": {detail}"))
    failures += 0 if ok else 1


def run(*args, stdin=None):
    return subprocess.run([B, *args], capture_output=True, text=True, input=stdin)


def show(text, *extra):
    p = run("credential", "show", "--trust", f"{W}/trust.toml", "--site-key", f"{W}/site.key", "--json", *extra, text)
    try:
        return json.loads(p.stdout)
    except Exception:
        return {"verdict": "no-output", "reason": p.stderr.strip()}


# RFC 9285's own examples.
check("base45 RFC 9285 examples decode", b45decode("BB8") == b"AB" and b45decode("%69 VD92EX0") == b"Hello!!")

# Keys made by ScanGate.
os.makedirs(W, exist_ok=True)
for f in ("issuer.key", "site.key", "trust.toml"):
    if os.path.exists(f"{W}/{f}"):
        os.unlink(f"{W}/{f}")
p = run("credential", "keygen", "--issuer", f"{W}/issuer.key", "--kid", "hq-2026")
open(f"{W}/trust.toml", "w").write(p.stdout)
site = run("credential", "keygen", "--site", f"{W}/site.key").stdout
site_public = site.split('"')[1]
issuer_seed = bytes.fromhex(open(f"{W}/issuer.key").read().strip())
issuer_public = bytes.fromhex(p.stdout.split('ed25519 = "')[1].split('"')[0])

# 1. A pass ScanGate issued verifies with pycose (signature, headers) and its claims read with cbor2.
p = run("credential", "issue", "--key", f"{W}/issuer.key", "--kid", "hq-2026", "--sub", "alice", "--label", "Alice",
        "--zones", "main,lab", "--valid", "2h", "--id", "0011223344556677", "--card", "12:3456")
text = p.stdout.strip()
check("issued pass has the SG1: prefix", text.startswith("SG1:"), text[:20])
raw = b45decode(text[4:])
msg = Sign1Message.decode(raw)
msg.key = OKPKey(crv=Ed25519, x=issuer_public)
check("pycose verifies ScanGate's signature", msg.verify_signature())
check("protected header is EdDSA with the kid", msg.phdr.get(Algorithm) == EdDSA and msg.phdr.get(KID) == b"hq-2026",
      str(msg.phdr))
check("unprotected header is empty", msg.uhdr == {}, str(msg.uhdr))
claims = cbor2.loads(msg.payload)
now = int(time.time())
check("CWT claims: sub, cti, exp about 2 h ahead",
      claims.get(2) == "alice" and claims.get(7) == bytes.fromhex("0011223344556677") and abs(claims.get(4) - now - 7200) < 60,
      str(claims))
check("private claim: label, zones, card", claims.get(-65537) == {1: "Alice", 2: ["main", "lab"], 6: [12, 3456]},
      str(claims.get(-65537)))

# 2. A pass built by pycose (not by ScanGate) is accepted; variants of it are refused.
def pycose_pass(claims, kid=b"hq-2026", seed=issuer_seed, alg=EdDSA, uhdr=None, tagged=True):
    m = Sign1Message(phdr={Algorithm: alg, KID: kid}, uhdr=uhdr or {}, payload=cbor2.dumps(claims))
    m.key = OKPKey(crv=Ed25519, d=seed)
    return m.encode(tag=tagged)

good = {2: "bob", 4: now + 600, 5: now - 60, 6: now - 60, 7: b"\x01\x02\x03\x04", -65537: {1: "Bob"}}
r = show("SG1:" + b45encode(pycose_pass(good)))
check("a pycose-made pass is granted", r["verdict"] == "granted" and r.get("label") == "Bob", str(r))
r = show("SG1:" + b45encode(pycose_pass({**good, -65537: {1: "Warden", 7: True}})))
check("a pycose-made pass with the lockdown claim (7: true) is granted and read as such",
      r["verdict"] == "granted" and r.get("lockdown") is True, str(r))
r = show("SG1:" + b45encode(pycose_pass({**good, -65537: {1: "Warden", 7: 1}})))
check("a lockdown claim that is not a CBOR boolean: denied-malformed", r["verdict"] == "denied-malformed", str(r))
p = run("credential", "issue", "--key", f"{W}/issuer.key", "--kid", "hq-2026", "--sub", "warden", "--valid", "1h", "--lockdown")
m = Sign1Message.decode(b45decode(p.stdout.strip()[4:]))
check("credential issue --lockdown writes the claim 7: true (read by cbor2)",
      cbor2.loads(m.payload).get(-65537, {}).get(7) is True, str(cbor2.loads(m.payload).get(-65537)))
# Guest passes: the claims cbor2 reads from `credential issue --guest`, and pycose-made ones.
p = run("credential", "issue", "--key", f"{W}/issuer.key", "--kid", "hq-2026", "--guest", "Bob", "--uses", "3", "--valid", "1d",
        "--first-use-window", "12h")
m = Sign1Message.decode(b45decode(p.stdout.strip()[4:]))
gc = cbor2.loads(m.payload)
check("credential issue --guest Bob --uses 3 --first-use-window 12h: label, 8: 3, 9: 43200 (read by cbor2)",
      gc.get(-65537) == {1: "Bob", 8: 3, 9: 43200} and gc.get(2) == "guest" and abs(gc.get(4) - now - 86400) < 60, str(gc))
p = run("credential", "issue", "--key", f"{W}/issuer.key", "--kid", "hq-2026", "--guest", "Bob")
check("a guest pass without --uses or --first-use-window is refused", p.returncode == 2 and "--uses" in p.stderr, p.stderr)
p = run("credential", "issue", "--key", f"{W}/issuer.key", "--kid", "hq-2026", "--guest", "Bob", "--valid", "1h",
        "--first-use-window", "2h")
check("a first-use window longer than the validity is refused", p.returncode == 2, p.stdout + p.stderr)
r = show("SG1:" + b45encode(pycose_pass({**good, -65537: {1: "Guest", 8: 3, 9: 3600}})))
check("a pycose-made guest pass (8: 3, 9: 3600) is granted and read as such",
      r["verdict"] == "granted" and r.get("uses") == 3 and r.get("first_use_window") == 3600, str(r))
for bad, why in (({8: 3, 3: True}, "uses with single use"), ({8: 0}, "0 uses"), ({8: 65536}, "65536 uses"),
                 ({9: 59}, "a 59 s window"), ({8: "3"}, "uses as text"), ({10: 1}, "a PIN claim that is not a sealed box"), ({10: bytes(111)}, "a PIN claim of 111 bytes"),
                 ({11: 1}, "an unknown key 11")):
    r = show("SG1:" + b45encode(pycose_pass({**good, -65537: {1: "Guest", **bad}})))
    check(f"a pycose-made pass with {why}: denied-malformed", r["verdict"] == "denied-malformed", str(r))
r = show("SG1:" + b45encode(pycose_pass(good, tagged=False)))
check("an untagged pycose-made pass is granted", r["verdict"] == "granted", str(r))
r = show("SG1:" + b45encode(pycose_pass({**good, 4: now - 3600})))
check("pycose pass expired an hour ago: denied-expired", r["verdict"] == "denied-expired", str(r))
r = show("SG1:" + b45encode(pycose_pass({**good, 5: now + 3600})))
check("pycose pass valid from in an hour: denied-not-yet-valid", r["verdict"] == "denied-not-yet-valid", str(r))
r = show("SG1:" + b45encode(pycose_pass(good, kid=b"other-key")))
check("unknown kid: denied-unknown-issuer", r["verdict"] == "denied-unknown-issuer", str(r))
r = show("SG1:" + b45encode(pycose_pass(good, seed=os.urandom(32))))
check("signed by another key under our kid: denied-signature", r["verdict"] == "denied-signature", str(r))
def with_unprotected(message, uhdr):  # a validly signed message, headers added outside the signature
    t = cbor2.loads(message)
    return cbor2.dumps(cbor2.CBORTag(18, [t.value[0], uhdr, t.value[2], t.value[3]]))

r = show("SG1:" + b45encode(with_unprotected(pycose_pass(good), {1: -7})))
check("an alg in the unprotected header: denied-algorithm", r["verdict"] == "denied-algorithm", str(r))
r = show("SG1:" + b45encode(with_unprotected(pycose_pass(good), {4: b"other-key"})))
check("a kid in the unprotected header: denied-algorithm", r["verdict"] == "denied-algorithm", str(r))
r = show("SG1:" + b45encode(pycose_pass(good, alg=-7)))  # ES256 in the protected header
check("alg ES256 in the protected header: denied-algorithm", r["verdict"] == "denied-algorithm", str(r))
no_exp = {k: v for k, v in good.items() if k != 4}
r = show("SG1:" + b45encode(pycose_pass(no_exp)))
check("a pass without exp: denied-malformed", r["verdict"] == "denied-malformed", str(r))
tampered = bytearray(pycose_pass(good))
tampered[-70] ^= 0x01  # inside the payload, before the signature
r = show("SG1:" + b45encode(bytes(tampered)))
check("one flipped payload byte: refused", r["verdict"] in ("denied-signature", "denied-malformed"), str(r))
r = show("SG1:" + b45encode(pycose_pass(good) + b"\x00"))
check("a trailing byte: denied-malformed (trailing-bytes)", r["reason"] == "trailing-bytes", str(r))

# 3. Rotating: the TOTP values pyotp computes from the seed are the ones ScanGate accepts.
p = run("credential", "issue", "--key", f"{W}/issuer.key", "--kid", "hq-2026", "--sub", "carol", "--rotating",
        "--site-public", site_public, "--digits", "8", "--json")
issued = json.loads(p.stdout)
totp = pyotp.TOTP(base64.b32encode(bytes.fromhex(issued["seed_hex"])).decode(), digits=8, interval=30)
now = int(time.time())
step_start = now - now % 30 + 40  # mid-step of the next step, after the key's not_before
results = {}
for dt in (-60, -30, 0, 30, 60):
    code = totp.at(step_start + dt)
    results[dt] = show(f"SG1R8{code}:{issued['body']}", "--at", str(step_start))["verdict"]
check("pyotp's current value is granted", results[0] == "granted", str(results))
check("pyotp's previous and next steps are granted (skew 1)", results[-30] == "granted" and results[30] == "granted", str(results))
check("two steps away is denied-totp", results[-60] == "denied-totp" and results[60] == "denied-totp", str(results))
r = show(f"SG1:{issued['body']}", "--at", str(step_start))
check("rotating pass without its TOTP: denied-totp", r["verdict"] == "denied-totp" and r["reason"] == "totp-missing", str(r))
r = show(f"SG1R8{int(totp.at(step_start)) ^ 1:08d}:{issued['body']}", "--at", str(step_start))
check("a wrong TOTP value: denied-totp", r["verdict"] == "denied-totp", str(r))
r = subprocess.run([B, "credential", "show", "--trust", f"{W}/trust.toml", "--json", "--at", str(step_start),
                    f"SG1R8{totp.at(step_start)}:{issued['body']}"], capture_output=True, text=True)
check("without the site key the seed cannot be opened", json.loads(r.stdout)["reason"] == "seal-not-opened", r.stdout)
sealed = cbor2.loads(Sign1Message.decode(b45decode(issued["body"])).payload)[-65537][4]
check("the seed travels sealed (48 bytes of box around 20)", len(sealed) == 68 and bytes.fromhex(issued["seed_hex"]) not in sealed)

# 4. A PIN after the pass (`credential issue --pin`, the PIN on standard input): the claim is a
# sealed box that PyNaCl opens with the site's secret key into a 32-byte salt and
# HMAC-SHA-256(salt, "scangate-pin-v1" 0x00 <32 zero bytes> PIN), checked with Python's hmac.
p = run("credential", "issue", "--key", f"{W}/issuer.key", "--kid", "hq-2026", "--sub", "dave", "--pin",
        "--site-public", site_public, stdin="9753\n")
check("issue --pin: a pass", p.returncode == 0 and p.stdout.startswith("SG1:"), p.stderr)
pin_text = p.stdout.strip()
private = cbor2.loads(Sign1Message.decode(b45decode(pin_text[4:])).payload)[-65537]
sealed_pin = private.get(10, b"")
site_secret = bytes.fromhex(open(f"{W}/site.key").read().strip())
try:
    opened = SealedBox(PrivateKey(site_secret)).decrypt(sealed_pin)
except Exception as e:  # noqa: BLE001 (any failure to open is the finding)
    opened = repr(e).encode()
salt, mac = opened[:32], opened[32:]
mac_of = lambda pin: hmac.new(salt, b"scangate-pin-v1\x00" + bytes(32) + pin, hashlib.sha256).digest()
check("the PIN claim is a 112-byte sealed box that PyNaCl opens with the site key to a salt and a MAC",
      len(sealed_pin) == 112 and len(opened) == 64, f"{len(sealed_pin)} {opened[:40]!r}")
check("the MAC is HMAC-SHA-256(salt, 'scangate-pin-v1' 0x00 zeros PIN) of 9753, not of 9754 (Python's hmac)",
      hmac.compare_digest(mac, mac_of(b"9753")) and not hmac.compare_digest(mac, mac_of(b"9754")))
check("the pass holds neither the PIN nor the salt in the clear", b"9753" not in b45decode(pin_text[4:]) and salt not in b45decode(pin_text[4:]))
r = show(pin_text)
check("credential show: the pass carries a PIN that opens with the site key", r.get("pin") is True and r.get("pin_opens") is True, str(r))
r = json.loads(subprocess.run([B, "credential", "show", "--trust", f"{W}/trust.toml", "--json", pin_text],
                              capture_output=True, text=True).stdout)
check("without the site key the PIN claim does not open", r.get("pin") is True and r.get("pin_opens") is False, str(r))
p = run("credential", "issue", "--key", f"{W}/issuer.key", "--kid", "hq-2026", "--sub", "dave", "--pin",
        "--site-public", site_public, stdin="12a4\n")
check("issue --pin refuses a PIN that is not 4-12 digits", p.returncode != 0 and "digits" in p.stderr, p.stderr)

# 5. A guest pass for Google Wallet: the GenericObject's fields Google documents as required for the
# object's content (cardTitle, header: LocalizedString) and its barcode and validity.
p = run("credential", "issue", "--key", f"{W}/issuer.key", "--kid", "hq-2026", "--guest", "Bob Guest", "--uses", "3",
        "--valid", "1d", "--wallet")
lines = p.stdout.split("\n", 1)
try:
    wallet = json.loads(lines[1])
except Exception as e:  # noqa: BLE001
    wallet = {"error": repr(e), "stdout": p.stdout[:300]}
claims_g = cbor2.loads(Sign1Message.decode(b45decode(lines[0].strip()[4:])).payload)
check("--wallet on a guest pass: a GenericObject with cardTitle and header (LocalizedString), the guest's name",
      wallet.get("cardTitle", {}).get("defaultValue", {}).get("value") == "Access pass"
      and wallet.get("header", {}).get("defaultValue", {}) == {"language": "en", "value": "Bob Guest"}, str(wallet))
check("its barcode is the pass as a QR code", wallet.get("barcode", {}).get("type") == "QR_CODE"
      and wallet.get("barcode", {}).get("value") == lines[0].strip(), str(wallet.get("barcode")))
end = wallet.get("validTimeInterval", {}).get("end", {}).get("date", "")
check("its validTimeInterval ends at the pass's exp", end == time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(claims_g[4])),
      f"{end} vs exp {claims_g[4]}")

print(f"interop: {failures} failure(s)")
sys.exit(1 if failures else 0)
