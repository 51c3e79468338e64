#!/usr/bin/env python3
"""Self-test of the BoofCV-style scorer (bench/dataset.py's label transforms + bench/peers.py's
matcher, and `scangate decode --locations` with --scangate), in seconds, before bench/run measures.

It writes a small corpus laid out like BoofCV's: QR codes (qrencode) pasted at known places on a
720x720 page, turned by 0/90/180/270/30 degrees, some drawn mirrored, some stored as JPEGs with an
EXIF orientation tag (labels in the stored pixel frame, as BoofCV's are); renders it with
dataset.py at original size and 640x480, upright and mirrored; and has every engine given (those
this Python can import) decode it. Each code whose final view is not mirrored must be matched to
its label, and nothing may be a false positive. The same images scored against deliberately wrong
labels (each one turned half-way round the page centre, away from its code) must match nothing.

Usage: scorer_test.py [--scangate BIN] [ENGINE...]   (default: zbar zxing-1.4, or in a venv
       zxing-newest opencv)
Run it with each interpreter that has engines: Debian's python3 (zbar, zxing-1.4), the venv's
(zxing-newest, opencv). Exit status 1 on any failure; ends with "N passed, N failed".
"""
import os, re, shutil, subprocess, sys, tempfile
import cv2
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dataset, peers

PAGE, MODULE, AT = 720, 8, (90, 380)   # code's top-left pixel; the centre of the page is (359.5, 359.5)
CENTRE = ((PAGE - 1) / 2, (PAGE - 1) / 2)
MIRRORING_TAGS = {2, 4, 5, 7}          # EXIF orientations that flip
# (degrees anticlockwise on screen, code drawn mirrored, EXIF orientation of the stored JPEG)
CASES = [(0, False, 1), (90, False, 1), (180, False, 1), (270, False, 1), (30, False, 1),
         (0, False, 6), (30, False, 8), (90, False, 3),
         (0, True, 1), (90, True, 1), (180, True, 1), (270, True, 1), (30, True, 1),
         (0, True, 2), (30, True, 5), (90, True, 7)]

passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok: passed += 1
    else: failed += 1; print("FAIL", what, flush=True)


def modules(text):
    art = subprocess.run(["qrencode", "-t", "ASCII", "-m", "0", "-o", "-", text], check=True,
                         capture_output=True, text=True).stdout.splitlines()
    return np.array([[row[i] == "#" for i in range(0, len(row), 2)] for row in art if row])


def jpeg_with_orientation(img, tag):
    """JPEG bytes of IMG with an EXIF APP1 segment holding only Orientation = TAG."""
    ok, jpg = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, 95])
    jpg = jpg.tobytes()
    if tag == 1: return jpg
    tiff = b"MM\x00\x2a" + (8).to_bytes(4, "big") + (1).to_bytes(2, "big") \
        + (0x0112).to_bytes(2, "big") + (3).to_bytes(2, "big") + (1).to_bytes(4, "big") + tag.to_bytes(2, "big") + b"\0\0" \
        + (0).to_bytes(4, "big")
    body = b"Exif\0\0" + tiff
    return jpg[:2] + b"\xff\xe1" + (len(body) + 2).to_bytes(2, "big") + body + jpg[2:]


def make_corpus(root):
    """ROOT/synthetic/imageNNN.jpg + .txt (BoofCV layout); returns {stem: readable-in-upright}."""
    os.makedirs(os.path.join(root, "synthetic"))
    upright_readable = {}
    for n, (angle, drawn_mirrored, tag) in enumerate(CASES):
        m = modules(f"scangate scorer test {n}")
        if drawn_mirrored: m = m[:, ::-1]
        page = np.full((PAGE, PAGE), 255, np.uint8)
        code = np.where(np.kron(m, np.ones((MODULE, MODULE), bool)), 0, 255).astype(np.uint8)
        x0, y0 = AT
        page[y0:y0 + code.shape[0], x0:x0 + code.shape[1]] = code
        side = code.shape[1]
        corners = [(x0 - 0.5, y0 - 0.5), (x0 + side - 0.5, y0 - 0.5), (x0 + side - 0.5, y0 + side - 0.5), (x0 - 0.5, y0 + side - 0.5)]
        r = cv2.getRotationMatrix2D(CENTRE, angle, 1.0)
        flags = cv2.INTER_NEAREST if angle % 90 == 0 else cv2.INTER_LINEAR
        page = cv2.warpAffine(page, r, (PAGE, PAGE), flags=flags, borderValue=255)
        corners = [tuple(r @ np.array([x, y, 1.0])) for x, y in corners]
        stem = "image%03d" % n
        with open(os.path.join(root, "synthetic", stem + ".jpg"), "wb") as f: f.write(jpeg_with_orientation(page, tag))
        with open(os.path.join(root, "synthetic", stem + ".txt"), "w") as f:
            f.write("# list of hand selected 2D points\nSETS\n" + " ".join("%.6f %.6f" % p for p in corners) + "\n")
        upright_readable[stem] = not (drawn_mirrored ^ (tag in MIRRORING_TAGS))
    return upright_readable


def wrong_labels(src, dst):
    """DST: SRC's images with every label turned half-way round the image centre."""
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("*.txt"))
    for folder, _, files in os.walk(src):
        for name in files:
            if not name.endswith(".txt"): continue
            h, w = peers.read_pgm(os.path.join(folder, name[:-4] + ".pgm")).shape
            quads = [[(w - 1 - x, h - 1 - y) for x, y in q] for q in peers.quads(os.path.join(folder, name))]
            dataset.write_labels(os.path.join(dst, os.path.relpath(folder, src), name), quads)


def scorer_cases():
    """The matcher alone: corner order and orientation do not matter, a swap of x and y or a shift does."""
    square = [(100, 300), (200, 300), (200, 400), (100, 400)]
    for order in ([0, 1, 2, 3], [1, 2, 3, 0], [3, 2, 1, 0], [2, 3, 0, 1], [0, 1, 3, 2], [0, 2, 1, 3]):
        check(abs(peers.iou([square[i] for i in order], square) - 1) < 1e-9, f"iou of a square with its corners in order {order} is 1")
    check(peers.iou([(y, x) for x, y in square], square) == 0, "iou of an off-diagonal square with its x/y swap is 0")
    check(abs(peers.iou([(x + 50, y) for x, y in square], square) - 1 / 3) < 1e-9, "iou of a square with itself shifted by half is 1/3")
    check(peers.match([square, square], [square]) == (1, 1), "a label is matched once; the second hit is a false positive")
    near = [(x + 60, y) for x, y in square]
    check(peers.match([near], [square, near]) == (1, 0), "the best-overlapping label is taken")


def scangate_totals(binary, directory):
    out = subprocess.run([binary, "decode", "--locations", directory, "--formats", "qr"], capture_output=True, text=True).stdout
    m = re.search(r"TOTAL\s+(\d+) / (\d+).*false positives: (\d+)", out)
    return tuple(map(int, m.groups())) if m else None


def main(argv):
    scangate = None
    if argv[:1] == ["--scangate"]:
        scangate, argv = argv[1], argv[2:]
    in_venv = sys.prefix != getattr(sys, "base_prefix", sys.prefix)
    engines = argv or (["zxing-newest", "opencv"] if in_venv else ["zbar", "zxing-1.4"])
    scorer_cases()
    if not shutil.which("qrencode"):
        check(False, "qrencode is installed (apt-get install qrencode)")
        print(f"{passed} passed, {failed} failed"); return 1
    tmp = tempfile.mkdtemp(prefix="scorer-test-")
    try:
        readable = make_corpus(os.path.join(tmp, "corpus"))
        out = os.path.join(tmp, "rendered")
        dataset.render_boofcv(os.path.join(tmp, "corpus"), out, ["original", "640x480"], ["upright", "mirrored"])
        sets = sorted(os.listdir(out))
        for s in sets: wrong_labels(os.path.join(out, s), os.path.join(tmp, "wrong", s))
        decoders = {}
        for e in engines:
            try:
                decoders[e] = peers.make_decoder(e)
            except ImportError as error:
                print(f"scorer self-test: {e} skipped in {sys.executable} ({error})")
        for e, decode in decoders.items():
            for s in sets:
                flipped = s.endswith("-mirrored")
                rows = []
                peers.score(os.path.join(out, s), decode, rows)
                for path, labelled, matched, fp in rows:
                    stem = os.path.basename(path)[:-4]
                    case = CASES[int(stem[5:])]
                    what = f"{e} {s} {stem} (turned {case[0]}°, drawn mirrored {case[1]}, EXIF {case[2]})"
                    if readable[stem] ^ flipped:
                        check(labelled == 1 and matched == 1, what + ": found at its label")
                    check(fp == 0, what + ": no false positive")
                rows = []
                peers.score(os.path.join(tmp, "wrong", s), decode, rows)
                decoded = sum(m + fp for _, _, m, fp in rows)
                check(sum(m for _, _, m, _ in rows) == 0 and decoded > 0, f"{e} {s}: wrong labels match nothing ({decoded} decoded)")
        if scangate:
            for s in sets:
                expect = sum(readable[k] ^ s.endswith("-mirrored") for k in readable)
                t = scangate_totals(scangate, os.path.join(out, s))
                check(t is not None and t[0] >= expect and t[2] == 0, f"scangate {s}: {expect}+ found at their labels, no false positive (found, labelled, fp: {t})")
                t = scangate_totals(scangate, os.path.join(tmp, "wrong", s))
                check(t is not None and t[0] == 0 and t[2] > 0, f"scangate {s}: wrong labels match nothing (found, labelled, fp: {t})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"scorer self-test ({', '.join(list(decoders) + (['scangate'] if scangate else []))}): {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
