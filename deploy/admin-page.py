#!/usr/bin/env python3
"""The web admin page in a real browser: Debian's chromium driven by selenium (PyPI) through
Debian's chromium-driver, never a downloaded browser; plus an independent HTTP client (urllib)
for what a browser would not send. Run by deploy/admin-test.sh, which starts the reader and
`scangate admin`; prints PASS/FAIL lines.

  admin-page.py URL JOURNAL ADMIN_LOG
"""
import atexit, http.client as httpclient, json, shutil, os, re, socket, ssl, sys, tempfile, time, urllib.error, urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

URL, JOURNAL, ADMIN_LOG = sys.argv[1], sys.argv[2], sys.argv[3]
results = []


def check(ok, what):
    results.append(bool(ok))
    print(("PASS" if ok else "FAIL") + " admin-page: " + what, flush=True)


def read(path):
    with open(path, errors="replace") as f:
        return f.read()


def wait_for(fn, seconds=15):
    end = time.time() + seconds
    while time.time() < end:
        try:
            v = fn()
            if v:
                return v
        except Exception:
            pass
        time.sleep(0.2)
    return None


# ------------------------------------------------------------------ an HTTP client of our own
INSECURE = ssl.create_default_context()
INSECURE.check_hostname = False
INSECURE.verify_mode = ssl.CERT_NONE


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *a, **k):
        return None


opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=INSECURE), NoRedirect)


def http(method, path, data=None, cookie=None, origin=URL, headers=None):
    h = dict(headers or {})
    if cookie:
        h["Cookie"] = cookie
    if origin:
        h["Origin"] = origin
    body = data.encode() if isinstance(data, str) else data
    req = urllib.request.Request(URL + path, data=body, method=method, headers=h)
    try:
        r = opener.open(req, timeout=20)
        return r.status, dict(r.headers), r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode(errors="replace")


# ------------------------------------------------------------------ the browser
def browser(width=1200, height=900):
    o = webdriver.ChromeOptions()
    o.binary_location = "/usr/bin/chromium"
    profile = tempfile.mkdtemp(prefix="chromium-", dir=os.environ.get("TMPDIR_FOR_BROWSER"))
    atexit.register(shutil.rmtree, profile, True)  # the browser's profile goes with the run
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--user-data-dir=" + profile, f"--window-size={width},{height}"):
        o.add_argument(a)
    o.accept_insecure_certs = True  # the reader's own certificate; its fingerprint is checked apart
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)


def sign_in(d, name, password):
    d.get(URL + "/login")
    d.find_element(By.ID, "name").send_keys(name)
    d.find_element(By.ID, "password").send_keys(password)
    d.find_element(By.ID, "sign-in").click()


def people_checks(d):
    """10,000 entries: a page of 50, Next, a search the reader runs over all of them, and the CSV."""
    d.get(URL + "/people")
    first = [r.text for r in d.find_elements(By.CSS_SELECTOR, "#people tbody tr")]
    count = d.find_element(By.ID, "count").text
    check(len(first) == 50 and "of 9991 entries next from=50" in count, f"people: a page of 50 of 9,991 entries ({count!r})")
    d.find_element(By.ID, "next").click()
    second = wait_for(lambda: "from=50" in d.current_url and [r.text for r in d.find_elements(By.CSS_SELECTOR, "#people tbody tr")])
    check(second and second[0].startswith("person-00050") and not set(second) & set(first), f"people: Next shows the next 50 ({(second or [''])[0][:20]!r})")
    search = d.find_element(By.ID, "search")
    search.clear()
    search.send_keys("PERSON-0999")
    started = time.time()
    d.find_element(By.ID, "find").click()
    found = wait_for(lambda: "q=" in d.current_url and [r.text for r in d.find_elements(By.CSS_SELECTOR, "#people tbody tr")])
    took = time.time() - started
    labels = [r.split()[0] for r in found or []]
    check(labels == ["person-09990"],
          f"people: a search runs on the reader over all entries: {labels} ({took:.2f} s)")
    import csv, io
    cookie = "sg_session=" + {c["name"]: c for c in d.get_cookies()}["sg_session"]["value"]
    started = time.time()
    status, headers, body = http("GET", "/people.csv", cookie=cookie)
    took = time.time() - started
    table = list(csv.reader(io.StringIO(body))) if status == 200 else []
    labels = [r[0] for r in table[1:]]
    check(status == 200 and table[0] == ["label", "tag", "flags"] and len(labels) == 9991 and labels[0] == "alice"
          and labels[-1] == "person-09990" and all(len(r[1]) == 16 for r in table[1:]) and "ADMIN-PAGE" not in body,
          f"people: CSV of every entry, label, tag and flags, no payload ({len(labels)} rows in {took:.1f} s)")


def import_checks(d):
    """CSV import: a preview that writes nothing, then Apply; a bad row refuses the whole file."""
    listing = os.path.join(os.path.dirname(JOURNAL), "allow-list.txt")
    before = read(listing)
    d.get(URL + "/import")
    csv_text = 'label,payload,static\r\nzoe,IMPORT-ZOE-1,\r\n"Yan Li",IMPORT-YAN-2,\r\nalice,,yes\r\n'
    d.execute_script("document.getElementById('csv').value = arguments[0]", csv_text)
    d.find_element(By.ID, "preview").click()
    changes = wait_for(lambda: [li.text for li in d.find_elements(By.CSS_SELECTOR, "#changes li")])
    summary = d.find_element(By.ID, "summary").text
    check(changes == ["add zoe", "add Yan Li", "change alice"] and "nothing written" in summary and read(listing) == before,
          f"import: Preview lists the changes and writes nothing ({changes}, {summary!r})")
    screenshot(d, "admin-import")
    d.find_element(By.ID, "apply").click()
    summary = wait_for(lambda: "applied" in d.find_element(By.ID, "summary").text and d.find_element(By.ID, "summary").text)
    after = read(listing)
    alice = [l for l in after.splitlines() if l.endswith("label=alice") or " label=alice " in l]
    check(summary and "2 added, 1 changed" in summary and " label=zoe" in after and "label=Yan%20Li" in after
          and "IMPORT-ZOE-1" not in after and alice and "static=yes" in alice[0],
          f"import: Apply writes the file through the reader ({summary!r})")
    check(wait_for(lambda: re.search(r"command IMPORT APPLY by web:olga \(uid \d+\): 2 added, 1 changed", read(JOURNAL)), 10),
          "import: the reader records the import with who")
    d.get(URL + "/people?q=zoe")
    check(wait_for(lambda: "zoe" in d.find_element(By.ID, "people").text), "import: zoe is on the people page at once (reloaded)")
    # Edit: only the fields filled in change; the code stays.
    zoe_before = [l for l in read(listing).splitlines() if " label=zoe" in l]
    d.find_element(By.CSS_SELECTOR, "#people a.edit").click()
    wait_for(lambda: d.find_element(By.ID, "edit-lockdown"))
    from selenium.webdriver.support.ui import Select
    Select(d.find_element(By.ID, "edit-lockdown")).select_by_value("yes")
    d.find_element(By.ID, "edit-until").send_keys("2030-01-01T00:00:00Z")
    d.find_element(By.ID, "save").click()
    said = wait_for(lambda: d.find_element(By.ID, "said").text)
    zoe = [l for l in read(listing).splitlines() if " label=zoe" in l]
    check(said and "1 changed" in said and zoe and zoe_before and zoe[0].split()[0] == zoe_before[0].split()[0]
          and "lockdown=yes" in zoe[0] and "until=2030-01-01T00:00:00Z" in zoe[0],
          f"edit: lockdown and until set, the code kept ({said!r}, {zoe[0] if zoe else 'gone'!r})")
    d.get(URL + "/people?q=zoe")
    check(wait_for(lambda: "lockdown" in d.find_element(By.ID, "people").text and "window" in d.find_element(By.ID, "people").text),
          "edit: the people page shows zoe's new flags")
    # A PIN on a reader with no keypad would never be asked: the reader refuses it (fail-secure).
    d.find_element(By.CSS_SELECTOR, "#people a.edit").click()
    wait_for(lambda: d.find_element(By.ID, "pin-digits")).send_keys("2468")
    d.find_element(By.ID, "set-pin").click()
    said = wait_for(lambda: d.find_element(By.ID, "said").text)
    check(said and said.startswith("ERR 503 no keypad asks for a PIN") and "pin=" not in [l for l in read(listing).splitlines() if " label=zoe" in l][0]
          and "2468" not in read(ADMIN_LOG) and "2468" not in read(JOURNAL),
          f"pin: on a reader without a keypad the PIN is refused, the PIN in no log ({said!r})")
    d.get(URL + "/visitors")
    issuing = wait_for(lambda: d.find_element(By.ID, "issuing").text)
    count = d.find_element(By.ID, "passes-count").text
    check(issuing and "never on a reader" in issuing and count.startswith("OK passes"),
          f"visitors: passes are issued off the reader, the page says so; the reader's counted passes ({count!r})")
    # One bad row refuses the file whole, naming its record, never its text.
    d.get(URL + "/import")
    d.execute_script("document.getElementById('csv').value = arguments[0]",
                     'label,payload,sha256\r\nxena,IMPORT-XENA-1,\r\nmallory,SECRET-PASS-9,' + "0" * 64 + '\r\n')
    d.find_element(By.ID, "preview").click()
    summary = wait_for(lambda: d.find_element(By.ID, "summary").text)
    check(summary and summary.startswith("ERR 409") and "record 3" in summary and "SECRET" not in summary
          and not d.find_elements(By.ID, "apply") and "xena" not in read(listing),
          f"import: a bad row refuses the whole file ({summary!r})")


def live_latency(d, samples=5, seconds=20):
    """Seconds from a decision's line in the reader's journal to the same record (#N) on the
    page, for decisions first seen after the call; both polled every 50 ms."""
    start_len = len(read(JOURNAL))
    first, waits, end = {}, {}, time.time() + seconds
    while time.time() < end and len(waits) < samples:
        now = time.time()
        for m in re.finditer(r"#(\d+) \S+ decision ", read(JOURNAL)[start_len:]):
            first.setdefault(m.group(1), now)
        shown = d.execute_script("return Array.from(document.querySelectorAll('#events li')).map(e => e.textContent)")
        now = time.time()
        for text in shown:
            m = re.search(r"#(\d+) ", text)
            if m and m.group(1) in first and m.group(1) not in waits:
                waits[m.group(1)] = now - first[m.group(1)]
        time.sleep(0.05)
    return list(waits.values())


def backup_checks(d):
    """Backup and restore, as an admin: the archive downloads, PyNaCl (not ours) opens it with the
    passphrase and finds the list and no secret; a person taken off comes back through Preview
    and Restore; a wrong passphrase restores nothing. Run on a small list (the rig's 10,000 go
    back after): the page restores lists of up to 24 kB, larger ones on the reader."""
    import base64, glob, nacl.public, nacl.pwhash
    listing = os.path.join(os.path.dirname(JOURNAL), "allow-list.txt")
    big = read(listing)
    # 503 entries, 23 kB: more IMPORT DATA lines than the console's burst of 40 (the page paces them).
    fill = "".join(f"text:BACKUP-FILL-{i:04d} label=fill-{i:04d}\n" for i in range(500))
    small = "text:ADMIN-PAGE-ALICE label=alice\ntext:BACKUP-BOB-1 label=bob\ntext:BACKUP-CY-2 label=cy\n" + fill

    def put(text):
        with open(listing + ".new", "w") as f:
            f.write(text)
        os.rename(listing + ".new", listing)

    put(small)
    d.get(URL + "/people")
    check(wait_for(lambda: "of 503 entries" in d.find_element(By.ID, "count").text, 20), "backup: the reader reloaded a 503-entry list")
    downloads = tempfile.mkdtemp(prefix="downloads-", dir=os.environ.get("TMPDIR_FOR_BROWSER"))
    d.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": downloads})
    d.get(URL + "/backup")
    d.find_element(By.ID, "backup-passphrase").send_keys("a backup passphrase")
    d.find_element(By.ID, "backup-again").send_keys("a backup passphrase")
    screenshot(d, "admin-backup")
    d.find_element(By.ID, "download").click()
    files = wait_for(lambda: [f for f in glob.glob(downloads + "/*.sgbackup")], 30)
    data = open(files[0], "rb").read() if files else b""
    body = b""
    try:
        end = data.index(b"\n\n") + 2
        kdf = dict(w.split("=") for w in data[:end].split(b"\n")[1].decode().split()[2:])
        seed = nacl.pwhash.argon2id.kdf(32, b"a backup passphrase", bytes.fromhex(kdf["salt"]),
                                        opslimit=int(kdf["ops"]), memlimit=int(kdf["mem"]))
        body = nacl.public.SealedBox(nacl.public.PrivateKey.from_seed(seed)).decrypt(data[end:])
    except Exception as e:
        print("backup: " + repr(e))
    check(files and b"BACKUP-BOB-1" not in data and small.encode() in body and b" secret " not in body
          and body.startswith(data[:end]), f"backup: the download ({os.path.basename(files[0]) if files else 'none'}, {len(data)} bytes) "
          "opens with PyNaCl and the passphrase: the list, no secret")
    check(wait_for(lambda: re.search(r"command BACKUP by web:ada \(uid \d+\): \d+ files", read(JOURNAL)), 10),
          "backup: the reader records it with who")
    put("text:ADMIN-PAGE-ALICE label=alice\ntext:BACKUP-CY-2 label=cy\n" + fill)  # bob taken off
    d.get(URL + "/people")
    wait_for(lambda: "of 502 entries" in d.find_element(By.ID, "count").text, 20)

    def preview(passphrase):
        d.get(URL + "/backup")
        d.find_element(By.ID, "archive-file").send_keys(files[0])
        wait_for(lambda: d.find_element(By.ID, "archive").get_attribute("value"))
        d.find_element(By.ID, "restore-passphrase-check").send_keys(passphrase)
        d.find_element(By.ID, "restore-check-button").click()

    preview("not the passphrase")
    said = wait_for(lambda: d.find_element(By.ID, "said").text)
    check(said and "passphrase is wrong" in said and "bob" not in read(listing), f"restore: a wrong passphrase restores nothing ({said!r})")
    preview("a backup passphrase")
    changes = wait_for(lambda: [li.text for li in d.find_elements(By.CSS_SELECTOR, "#changes li")], 60)
    summary = d.find_element(By.ID, "summary").text
    check(changes == ["add bob"] and "nothing written" in summary and "bob" not in read(listing),
          f"restore: Preview shows who comes back and writes nothing ({changes}, {summary!r})")
    screenshot(d, "admin-restore")
    d.find_element(By.ID, "restore-passphrase-apply").send_keys("a backup passphrase")
    d.find_element(By.ID, "restore-apply-button").click()
    summary = wait_for(lambda: "applied" in d.find_element(By.ID, "summary").text and d.find_element(By.ID, "summary").text, 60)
    check(summary and "1 added, 0 changed, 0 removed, 502 unchanged" in summary and read(listing) == small, f"restore: the people are back, the list as backed up ({summary!r})")
    check(wait_for(lambda: re.search(r"command IMPORT APPLY LIST by web:ada \(uid \d+\): 1 added", read(JOURNAL)), 10),
          "restore: the reader records it with who")
    put(big)
    d.get(URL + "/people")
    wait_for(lambda: "of 9991 entries" in d.find_element(By.ID, "count").text, 30)


def zbar(png, name):
    """What zbarimg (ZBar, not ours) reads in a PNG."""
    import base64, subprocess
    path = os.path.join(os.path.dirname(JOURNAL), name)
    with open(path, "wb") as f:
        f.write(png)
    return subprocess.run(["zbarimg", "--quiet", "--raw", path], capture_output=True, text=True).stdout.split()


def camera_checks(d):
    """The camera's picture: the page's is blanked where codes are; a technician's is not."""
    import base64
    cookie = "sg_session=" + {c["name"]: c for c in d.get_cookies()}["sg_session"]["value"]
    req = urllib.request.Request(URL + "/camera.png", headers={"Cookie": cookie})
    r = opener.open(req, timeout=30)
    png = r.read()
    check(r.status == 200 and r.headers.get("Content-Type") == "image/png" and png[:4] == b"\x89PNG",
          f"camera: the aiming picture ({len(png)} bytes of PNG)")
    # The same frame source seen by a technician on the console (no AS: payloads shown): ZBar
    # reads the code there, so it would read it in the page's picture if it were not blanked.
    tech = socket.socket(socket.AF_UNIX)
    tech.settimeout(20)
    tech.connect(os.path.join(os.path.dirname(JOURNAL), "console.sock"))
    f = tech.makefile("rb")
    tech.sendall(b"SNAPSHOT\n")
    lines = []
    while True:
        line = f.readline().decode().rstrip("\n")
        if line.startswith("OK") or line.startswith("ERR") or not line:
            break
        if line.startswith("| "):
            lines.append(line[2:])
    tech.close()
    full = zbar(base64.b64decode("".join(lines)), "technician.png") if lines else []
    page = zbar(png, "page.png")
    check(any(t.startswith("ADMIN-PAGE-") for t in full) and not page,
          f"camera: ZBar reads {full} in a technician's picture and nothing in the page's")
    d.get(URL + "/camera")
    loaded = wait_for(lambda: d.execute_script("const i = document.getElementById('camera'); return i.complete && i.naturalWidth"))
    check(loaded, f"camera: the page shows the picture ({loaded} px wide)")
    screenshot(d, "admin-camera")


def issuer_checks(d):
    """The issuer's page (a second `scangate admin`, no reader, the issuer key): an operator issues a
    guest pass; ZBar reads the sheet, pycose verifies the signature with the trust file's key, and
    the pass goes to deploy/admin-test.sh, which shows it to a reader."""
    import base64, cbor2
    from pycose.keys import OKPKey
    from pycose.keys.curves import Ed25519
    from pycose.messages import Sign1Message
    from base45 import b45decode  # deploy/base45.py
    issuer = os.environ["ISSUER_URL"]
    work = os.path.dirname(JOURNAL)
    d.get(issuer + "/login")
    d.find_element(By.ID, "name").send_keys("olga")
    d.find_element(By.ID, "password").send_keys("correct horse battery")
    d.find_element(By.ID, "sign-in").click()
    wait_for(lambda: d.find_element(By.ID, "issuing"))
    d.get(issuer + "/people")
    menu = [a.text for a in d.find_elements(By.CSS_SELECTOR, "nav a")]
    check(d.current_url.endswith("/visitors") and menu == ["Visitors"],
          f"issuer's page: no reader here, so visitors only ({menu}; /people goes to {d.current_url.rsplit('/', 1)[1]})")
    name = "Vera <b>Visitor</b>"
    d.find_element(By.ID, "guest-name").send_keys(name)
    uses = d.find_element(By.ID, "guest-uses")
    uses.clear()
    uses.send_keys("2")
    d.find_element(By.ID, "issue").click()
    pass_id = wait_for(lambda: d.find_element(By.ID, "pass-id").text)
    title = d.find_element(By.TAG_NAME, "h2").text
    check(pass_id and re.fullmatch(r"[0-9a-f]{16}", pass_id) and title == "Guest pass for " + name and not d.find_elements(By.TAG_NAME, "b"),
          f"issuer's page: a guest pass issued ({pass_id!r}), the name shown as text ({title!r})")
    shown = wait_for(lambda: d.execute_script("const i = document.getElementById('pass-sheet'); return i.complete && i.naturalWidth"))
    png = base64.b64decode(d.find_element(By.ID, "pass-png").get_attribute("href").split(",", 1)[1])
    pdf = base64.b64decode(d.find_element(By.ID, "pass-pdf").get_attribute("href").split(",", 1)[1])
    with open(os.path.join(work, "guest-sheet.pdf"), "wb") as f:
        f.write(pdf)
    import subprocess
    words = subprocess.run(["pdftotext", os.path.join(work, "guest-sheet.pdf"), "-"], capture_output=True, text=True).stdout
    check(shown and png[:4] == b"\x89PNG" and pdf[:5] == b"%PDF-" and "Guest pass" in words and "Vera <b>Visitor</b>" in words
          and "Opens 2 times" in words, f"issuer's page: the sheet shown ({shown} px) and as PNG and PDF (pdftotext: {words.split(chr(10))[:2]})")
    screenshot(d, "admin-visitors")
    with open(os.path.join(work, "guest-sheet.png"), "wb") as f:
        f.write(png)
    # One code, whose text holds spaces (base45): ZBar's raw output, its newline taken off.
    text = subprocess.run(["zbarimg", "--quiet", "--raw", os.path.join(work, "guest-sheet.png")],
                          capture_output=True, text=True).stdout.rstrip("\n")
    trust = read(os.path.join(work, "trust.toml"))
    public = bytes.fromhex(re.search(r'ed25519 = "([0-9a-f]{64})"', trust).group(1))
    ok, claims = False, {}
    try:
        msg = Sign1Message.decode(b45decode(text[4:]))
        msg.key = OKPKey(crv=Ed25519, x=public)
        ok = msg.verify_signature()
        claims = cbor2.loads(msg.payload)
    except Exception as e:  # noqa: BLE001
        claims = {"error": repr(e)}
    private = claims.get(-65537, {}) if isinstance(claims, dict) else {}
    check(text.startswith("SG1:") and ok and private.get(1) == name and private.get(8) == 2
          and claims.get(4, 0) - claims.get(6, 0) == 86_400,
          f"ZBar reads the sheet's code; pycose verifies it with the trust file's key; label, 2 uses, 1 day ({private})")
    with open(os.path.join(work, "guest-pass.png"), "wb") as f:
        f.write(png)
    log = read(os.path.join(work, "issuer.log"))
    check(re.search(r"olga issued guest pass id=" + pass_id + r" name=Vera\?<b>Visitor</b> uses=2", log) and text[4:40] not in log,
          "issuer's page: the pass is recorded with who, its id and name, never the pass")
    d.find_element(By.XPATH, "//button[text()='Sign out']").click()
    wait_for(lambda: d.current_url.endswith("/login"))
    d.get(issuer + "/login")
    wait_for(lambda: d.find_element(By.ID, "name")).send_keys("vic")
    d.find_element(By.ID, "password").send_keys("viewer password 1")
    d.find_element(By.ID, "sign-in").click()
    refused = wait_for(lambda: "for operators" in d.find_element(By.TAG_NAME, "main").text)
    check(refused and not d.find_elements(By.ID, "issue"), "issuer's page: a viewer issues nothing")


def remote_checks(d):
    """The page as on another host (a third `scangate admin`): the reader's TLS console with a client
    certificate, AUTH, then AS: the reader records the person and the page's address."""
    remote = os.environ["REMOTE_URL"]
    d.get(remote + "/login")
    d.find_element(By.ID, "name").send_keys("olga")
    d.find_element(By.ID, "password").send_keys("correct horse battery")
    d.find_element(By.ID, "sign-in").click()
    emergency = wait_for(lambda: d.find_element(By.ID, "emergency").text)
    check(emergency and "lockdown" in emergency, f"another host: the dashboard through the reader's TLS console ({emergency!r})")
    start = len(read(JOURNAL))
    d.find_element(By.ID, "open").click()
    said = wait_for(lambda: d.find_element(By.ID, "said").text)
    # The TLS console's AUTH ("AUTH ok"; the Unix socket's page is "AUTH by the Unix socket's
    # peer"), AS, OPEN; the peer is the page's host (here this one: its user, as the kernel says).
    record = wait_for(lambda: re.search(r"command AUTH ok\n#\d+ \S+ command AS operator web:olga \(uid \d+\)\n"
                                        r"#\d+ \S+ command OPEN by web:olga \(uid \d+\)", read(JOURNAL)[start:]), 10)
    edge = wait_for(lambda: record and re.search(r"#\d+ \S+ edge relay active", read(JOURNAL)[start + record.end():]), 10)
    check(said and said.startswith("OK #") and record and edge,
          f"another host: Open door is recorded by web:olga with the page's address, and drives the relay ({said!r})")
    d.get(remote + "/people?q=alice")
    rows = wait_for(lambda: [r.text for r in d.find_elements(By.CSS_SELECTOR, "#people tbody tr")])
    check(rows and rows[0].startswith("alice") and "ADMIN-PAGE" not in d.page_source,
          f"another host: people through the TLS console, no payload ({(rows or [''])[0][:30]!r})")
    d.find_element(By.XPATH, "//button[text()='Sign out']").click()
    wait_for(lambda: d.current_url.endswith("/login"))


def rows(d):
    return [[c.text for c in r.find_elements(By.TAG_NAME, "td")] for r in d.find_elements(By.CSS_SELECTOR, "#history tbody tr")]


def history_checks(d, cookie):
    d.get(URL + "/history")
    first = wait_for(lambda: rows(d))
    check(first and all(r[0].isdigit() for r in first), f"events: the newest records, one row each ({len(first or [])} rows)")
    screenshot(d, "admin-events")
    check("ADMIN-PAGE-" not in d.page_source, "events: no payload, though the reader logs raw payloads (log.raw_payloads)")
    # Filters, set in the form as a person would: Dan's grants only.
    d.find_element(By.ID, "person").send_keys("Dan Example")
    d.find_element(By.CSS_SELECTOR, "#verdict option[value=granted]").click()
    d.find_element(By.ID, "filter").click()
    dan = wait_for(lambda: "person=" in d.current_url and rows(d))
    check(dan and all(r[3] == "granted" and "Dan%20Example" in r[4] for r in dan),
          f"events: person and verdict filters ({len(dan or [])} rows, all Dan's grants: {dan[:1] if dan else ''})")
    d.get(URL + "/history?kind=command")
    mine = wait_for(lambda: [r for r in rows(d) if "by web:olga" in r[4]])
    check(mine, f"events: the page's own commands are in the log, with who ({mine[-1][4][:60] if mine else rows(d)[:2]})")
    # Older pages: every record on the next page is older than every record on this one.
    d.get(URL + "/history")
    older = wait_for(lambda: d.find_element(By.ID, "older"), 5)
    if older:
        newest = [int(r[0]) for r in rows(d)]
        older.click()
        page2 = wait_for(lambda: "before=" in d.current_url and rows(d))
        check(page2 and max(int(r[0]) for r in page2) < min(newest), f"events: Older pages back ({len(page2 or [])} older rows)")
    else:
        check(False, f"events: more than one page of records to page through ({len(rows(d))} shown)")
    # The CSV, read by Python's csv module.
    import csv, io
    status, headers, body = http("GET", "/history.csv?verdict=granted", cookie=cookie)
    table = list(csv.reader(io.StringIO(body))) if status == 200 else []
    check(status == 200 and table and table[0] == ["sequence", "time", "event", "verdict", "record"]
          and len(table) > 1 and all(r[3] == "granted" for r in table[1:]) and "ADMIN-PAGE-" not in body,
          f"events: CSV download, {max(len(table) - 1, 0)} granted records, no payload ({headers.get('Content-Disposition', '')})")
    seqs = [int(r[0]) for r in table[1:]]
    check(seqs == sorted(seqs) and len(set(seqs)) == len(seqs), "events: the CSV's records are in order, each once")
    status, _, _ = http("GET", "/history?from=yesterday", cookie=cookie)
    check(status == 400, f"events: a malformed filter is refused ({status})")


SHOTS = os.environ.get("SCREENSHOTS", "")


def screenshot(d, name):
    """docs/admin.md's pictures, made by this test: the page at a desk and on a phone."""
    if not SHOTS:
        return
    size = d.get_window_size()
    for width, height, suffix in ((1200, 900, "desktop"), (390, 844, "phone")):
        d.set_window_size(width, height)
        time.sleep(0.3)
        d.save_screenshot(os.path.join(SHOTS, f"{name}-{suffix}.png"))
    d.set_window_size(size["width"], size["height"])


def main():
    # Headers: a strict CSP, no inline script anywhere, the cookie's flags.
    status, headers, body = http("GET", "/login")
    csp = headers.get("Content-Security-Policy", "")
    check(status == 200 and "script-src 'self'" in csp and "unsafe-inline" not in csp and "default-src 'none'" in csp,
          f"the sign-in page carries a strict Content-Security-Policy ({csp[:60]}...)")
    check(not re.search(r"<script(?![^>]*\bsrc=)", body) and not re.search(r"\s(style|on\w+)=", body),
          "no inline script, style or event handler in the page")
    status, headers, _ = http("GET", "/")
    check(status == 303 and headers.get("Location") == "/login", f"signed out, / sends to /login ({status})")

    d = browser()
    try:
        sign_in(d, "olga", "not the password at all")
        msg = wait_for(lambda: d.find_element(By.ID, "message").text)
        screenshot(d, "admin-sign-in")
        check(msg == "Wrong name or password.", f"a wrong password is refused in the page ({msg!r})")
        check("sign-in failed for olga" in read(ADMIN_LOG), "the failure is recorded with the client's address")

        # A viewer: state and decisions, no actions, no payloads.
        sign_in(d, "vic", "viewer password 1")
        emergency = wait_for(lambda: d.find_element(By.ID, "emergency").text)
        check(emergency and "lockdown" in emergency, f"viewer: the dashboard shows fire and lockdown ({emergency!r})")
        check(not d.find_elements(By.ID, "open"), "viewer: no Open door button")
        check(not d.find_elements(By.LINK_TEXT, "People"), "viewer: no People page in the menu")
        cookies = {c["name"]: c for c in d.get_cookies()}
        s = cookies.get("sg_session", {})
        check(s.get("secure") and s.get("httpOnly") and s.get("sameSite") == "Strict",
              f"the session cookie is Secure, HttpOnly, SameSite=Strict ({ {k: s.get(k) for k in ('secure', 'httpOnly', 'sameSite')} })")
        check(d.execute_script("return document.cookie") == "", "the page's script cannot read the session cookie")
        before = len(d.find_elements(By.CSS_SELECTOR, "#events li"))
        grew = wait_for(lambda: len(d.find_elements(By.CSS_SELECTOR, "#events li")) > before, 15)
        lines = [e.text for e in d.find_elements(By.CSS_SELECTOR, "#events li")]
        check(grew and any("decision granted" in l for l in lines), f"viewer: decisions arrive live (SSE), {len(lines)} shown")
        waits = live_latency(d)
        check(len(waits) >= 3 and sorted(waits)[len(waits) // 2] <= 1.0,
              f"viewer: a decision is on the page within 1 s of the reader's journal (median of {len(waits)}: "
              f"{', '.join(f'{w:.2f}' for w in waits)} s; each side polled every 50 ms)")
        check(not any("payload=" in l for l in lines), "viewer: no decision shows a payload")
        d.get(URL + "/history")
        check("for operators" in d.find_element(By.TAG_NAME, "main").text, "viewer: the event history is for operators (as LOG is)")
        d.get(URL + "/")
        csrf = d.find_element(By.CSS_SELECTOR, "meta[name=csrf]").get_attribute("content")
        forged = d.execute_script(
            "return fetch('/door/open', {method: 'POST', headers: {'Content-Type': 'application/x-www-form-urlencoded'},"
            " body: 'csrf=' + arguments[0], redirect: 'manual'}).then(r => r.status)", csrf)
        check(forged == 403, f"viewer: a hand-made POST /door/open with the right CSRF token is refused ({forged})")
        viewer_cookie = "sg_session=" + s.get("value", "")
        d.find_element(By.XPATH, "//button[text()='Sign out']").click()
        wait_for(lambda: d.current_url.endswith("/login"))
        status, headers, _ = http("GET", "/", cookie=viewer_cookie)
        check(status == 303 and headers.get("Location") == "/login", f"after signing out the old cookie opens nothing ({status})")

        # An operator: the door opens through the console, recorded with who.
        sign_in(d, "olga", "correct horse battery")
        button = wait_for(lambda: d.find_element(By.ID, "open"))
        button.click()
        said = wait_for(lambda: d.find_element(By.ID, "said").text)
        check(said and said.startswith("OK #"), f"operator: Open door answers as the console does ({said!r})")
        record = wait_for(lambda: re.search(r"command OPEN by web:olga \(uid \d+\)", read(JOURNAL)), 10)
        check(record, f"the reader records the open with who: {record.group(0) if record else read(JOURNAL)[-300:]!r}")
        edge = wait_for(lambda: record and re.search(r"#\d+ \S+ edge relay active", read(JOURNAL)[record.end():]), 10)
        check(edge, f"the open drives the relay: {edge.group(0) if edge else 'no relay edge after the OPEN record'!r}")
        wait_for(lambda: d.find_element(By.ID, "lockdown-on")).click()
        state = wait_for(lambda: "lockdown on" in d.find_element(By.ID, "emergency").text.lower() and d.find_element(By.ID, "emergency").text)
        check(state, f"operator: Lockdown latches it ({state!r})")
        d.find_element(By.ID, "lockdown-off").click()
        state = wait_for(lambda: "lockdown off" in d.find_element(By.ID, "emergency").text.lower() and d.find_element(By.ID, "emergency").text)
        check(state, f"operator: Lift lockdown lifts the page's own lockdown ({state!r})")
        screenshot(d, "admin-door")
        check(wait_for(lambda: re.search(r"LOCKDOWN ON by web:olga", read(JOURNAL)), 10), "the lockdown is recorded by web:olga")
        lines = [e.text for e in d.find_elements(By.CSS_SELECTOR, "#events li")]
        check(lines and not any("payload=" in l for l in lines), "operator: decisions never show a payload on the page either")

        # People: the list, search.
        d.get(URL + "/people")
        rows = wait_for(lambda: d.find_elements(By.CSS_SELECTOR, "#people tbody tr"))
        check(rows and "alice" in rows[0].text, f"people: the allow-list's entries, by label ({len(rows or [])} rows)")
        d.find_element(By.ID, "search").send_keys("nobody-by-this-name")
        hidden = wait_for(lambda: all(not r.is_displayed() for r in d.find_elements(By.CSS_SELECTOR, "#people tbody tr")))
        check(hidden, "people: search hides the rows that do not match")
        people_checks(d)
        import_checks(d)
        camera_checks(d)
        d.get(URL + "/people")
        d.find_element(By.ID, "search").clear()
        d.find_element(By.ID, "search").send_keys(" ")
        d.find_element(By.ID, "search").clear()
        screenshot(d, "admin-people")

        # Enrol by scanning: the unknown code in view is listed by its tag (never its payload),
        # given a label, enrolled through the console, and granted from the next scan.
        d.get(URL + "/enrol")
        label = wait_for(lambda: d.find_element(By.CSS_SELECTOR, "#candidates form.enrol input[name=label]"), 20)
        page = d.find_element(By.ID, "candidates").text
        screenshot(d, "admin-enrol")
        check(label and "ADMIN-PAGE" not in d.page_source, f"enrol: the unknown code is listed by tag and time, no payload ({page[:60]!r})")
        label.send_keys("Dan Example")
        label.find_element(By.XPATH, "./following-sibling::button").click()
        said = wait_for(lambda: d.find_element(By.ID, "said").text)
        check(said and said.startswith("OK #") and "enrolled Dan%20Example" in said, f"enrol: the reader's reply ({said!r})")
        granted = wait_for(lambda: re.search(r"decision granted qr label=Dan%20Example", read(JOURNAL)), 15)
        check(granted and re.search(r"command ENROL by web:olga \(uid \d+\)", read(JOURNAL)), "enrol: the next scan is granted, and the enrolment is recorded by web:olga")
        d.get(URL + "/people?q=dan")
        check(wait_for(lambda: "Dan Example" in d.find_element(By.ID, "people").text), "enrol: Dan Example is on the people page (searched)")

        # Events: the reader's audit log, filtered and paged on the reader's side, and as CSV.
        op_cookie = "sg_session=" + {c["name"]: c for c in d.get_cookies()}["sg_session"]["value"]
        history_checks(d, op_cookie)

        # CSRF and origin, with the operator's own cookie.
        status, _, _ = http("POST", "/door/open", "csrf=", cookie=op_cookie)
        check(status == 403, f"a POST without the CSRF token is refused ({status})")
        status, _, _ = http("POST", "/door/open", "csrf=" + csrf, cookie=op_cookie, origin="https://evil.example")
        check(status == 403, f"a POST from another origin is refused ({status})")

        # Backup and restore are an admin's: not an operator's.
        status, _, body = http("GET", "/backup", cookie=op_cookie)
        check(status == 403 and "for admins" in body, f"backup: an operator gets no backup page ({status})")
        sign_in(d, "ada", "admin password 12")
        wait_for(lambda: d.find_element(By.LINK_TEXT, "Backup"))
        backup_checks(d)
        issuer_checks(d)
        remote_checks(d)

        # A phone at the door: nothing wider than the screen.
        d.set_window_size(390, 844)
        d.get(URL + "/")
        wait_for(lambda: d.find_element(By.ID, "open"))
        wide = d.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
        check(wide <= 0, f"on a 390 px phone the dashboard needs no sideways scrolling ({wide} px over)")
    finally:
        d.quit()

    # /metrics: only with its token; read by Prometheus' own parser (prometheus_client).
    from prometheus_client.parser import text_string_to_metric_families
    token = os.environ["METRICS_TOKEN"]
    codes = (http("GET", "/metrics")[0], http("GET", "/metrics", headers={"Authorization": "Bearer " + token[:-1] + "x"})[0])
    check(codes == (401, 401), f"/metrics without its token, or with a wrong one: {codes}")
    status, headers, body = http("GET", "/metrics", headers={"Authorization": "Bearer " + token})
    families = {f.name: f for f in text_string_to_metric_families(body)} if status == 200 else {}
    granted = families.get("scangate_decisions_granted")
    value = granted.samples[0].value if granted and granted.samples else 0
    check(status == 200 and granted and granted.type == "counter" and value >= 1 and "scangate_decode_seconds" in families,
          f"/metrics with its token: {len(families)} families parsed by prometheus_client, {value:.0f} granted")
    check("ADMIN-PAGE" not in body and "label" not in body and "tag" not in body, "/metrics holds no payload, label or tag")

    # Live views hold a console connection each: at most 4, so the reader's console keeps room
    # for a technician however many browsers are open.
    status, headers, _ = http("POST", "/login", "name=olga&password=correct+horse+battery")
    cookie = (headers.get("Set-Cookie") or "").split(";")[0]
    views, answers = [], []
    for _ in range(5):
        c = httpclient.HTTPSConnection(URL.split("//")[1].split(":")[0], int(URL.rsplit(":", 1)[1]), context=INSECURE, timeout=10)
        c.request("GET", "/events", headers={"Cookie": cookie})
        r = c.getresponse()
        answers.append(r.status)
        views.append((c, r))
    tech = socket.socket(socket.AF_UNIX)
    tech.settimeout(5)
    tech.connect(os.path.join(os.path.dirname(JOURNAL), "console.sock"))
    tech.sendall(b"VERSION\n")
    greeting = tech.makefile("rb").readline()
    tech.close()
    for c, _ in views:
        c.close()
    check(answers == [200, 200, 200, 200, 503] and greeting,
          f"live views: four at once, the fifth refused ({answers}); a technician's console still connects")

    # Sign-in limits: after four wrong passwords an account waits before the next is even checked.
    codes = [http("POST", "/login", "name=olga&password=wrong-" + str(i))[0] for i in range(6)]
    check(codes[:5] == [401] * 5 and codes[5] == 429, f"sign-in backoff per account (2 s after the fifth failure): {codes}")
    return 0 if all(results) else 1


sys.exit(main())
