#!/usr/bin/env python3
"""The peers a user would pick instead of ScanGate, on the same PGM files (bench/dataset.py):
zbar (pyzbar), zxing-cpp 1.4 (Debian's python3-zxing-cpp), zxing-cpp newest (PyPI, run from a
venv), OpenCV's QRCodeDetector. QR codes only, one decode call per image, timed in-process.

Usage: peers.py ENGINE DATASET_DIR...   prints one line per dataset (ENGINE json=FILE: `scangate decode
  --json` lines already written, scored here the same way; its median_ms is meaningless):
  engine dataset passed total median_ms false_positives
       peers.py --categories ENGINE DATASET_DIR...   the same, then the mean time per image
  (engine dataset/MEAN - - mean_ms -) and for a BoofCV-style dataset one line per category
  folder: engine dataset/CATEGORY passed total - false_positives
       peers.py --time ENGINE PGM...   time per call on images without labels (empty frames, each
  decoded 5 times in a row, as frames of a still scene): engine time p50_us mean_us calls
       peers.py --self-test [ENGINE...]  the scorer's self-test (bench/scorer_test.py)
A zxing-style dataset (image + expected .txt) counts an image when a decoded text equals the
expected one; a BoofCV-style one (a .txt with a SETS line) counts codes whose corner polygon
overlaps a labelled one with IoU > 0.1, each label matched once (the best-overlapping one still
free); other results are false positives. Both polygons are taken as the convex hull of their
corners, so neither an engine's corner order (zxing-cpp: top-left, top-right, bottom-right,
bottom-left of the symbol; zbar and OpenCV: their own) nor the label's orientation matters.
"""
import json, os, statistics, sys, time
import numpy as np

ENGINES = ("zbar", "zxing-1.4", "zxing-newest", "opencv")


def json_lines_decoder(path):
    """An engine already run: `scangate decode --json` lines (in any root: the trixie chroot's
    paths differ), looked up by each image's last two path components. decode(img, path)."""
    found = {}
    for line in open(path):
        r = json.loads(line)
        key = "/".join(r["file"].split("/")[-2:])
        found.setdefault(key, [])
        if "corners" in r:
            c = r["corners"]
            found[key].append((r.get("text", ""), [(float(c[i]), float(c[i + 1])) for i in range(0, 8, 2)]))
    def decode(img, path):
        return found.get("/".join(path.split("/")[-2:]), [])
    decode.by_path = True
    return decode


def make_decoder(engine):
    """decode(img: 2-D uint8 array) -> [(text, [(x, y), ...])], points in the image's pixels."""
    if engine.startswith("json="):
        return json_lines_decoder(engine[5:])
    if engine == "zbar":
        from pyzbar import pyzbar
        def decode(img):
            out = []
            for s in pyzbar.decode((img.tobytes(), img.shape[1], img.shape[0]), symbols=[pyzbar.ZBarSymbol.QRCODE]):
                out.append((s.data.decode("utf-8", "replace"), [(float(p.x), float(p.y)) for p in s.polygon]))
            return out
        return decode
    if engine in ("zxing-1.4", "zxing-newest"):  # Debian's, or PyPI's from a venv
        import zxingcpp
        kwargs = {}
        if hasattr(zxingcpp, "TextMode"):
            kwargs["text_mode"] = zxingcpp.TextMode.Plain
        def decode(img):
            out = []
            for r in zxingcpp.read_barcodes(np.ascontiguousarray(img), formats=zxingcpp.BarcodeFormat.QRCode, **kwargs):
                p = r.position
                out.append((r.text, [(float(q.x), float(q.y)) for q in (p.top_left, p.top_right, p.bottom_right, p.bottom_left)]))
            return out
        return decode
    if engine == "opencv":
        import cv2
        detector = cv2.QRCodeDetector()
        def decode(img):
            ok, texts, points, _ = detector.detectAndDecodeMulti(img)
            if not ok or points is None: return []
            return [(t, [(float(q[0]), float(q[1])) for q in pts]) for t, pts in zip(texts, points) if t]
        return decode
    raise SystemExit("unknown engine " + engine)


def read_pgm(path):
    data = open(path, "rb").read()
    # Header: "P5", width, height, maxval, each followed by whitespace; then exactly one
    # whitespace byte before the pixels (which may themselves start with whitespace values).
    fields, i = [], 0
    while len(fields) < 4:
        while data[i:i + 1].isspace(): i += 1
        j = i
        while not data[j:j + 1].isspace(): j += 1
        fields.append(data[i:j]); i = j
    w, h = int(fields[1]), int(fields[2])
    return np.frombuffer(data[i + 1:i + 1 + w * h], np.uint8).reshape(h, w)


def area(p):
    return sum(p[i][0] * p[(i + 1) % len(p)][1] - p[(i + 1) % len(p)][0] * p[i][1] for i in range(len(p))) / 2


def hull(points):
    """Convex hull, counter-clockwise in x-right/y-up terms (Andrew's monotone chain)."""
    pts = sorted(set((float(x), float(y)) for x, y in points))
    if len(pts) < 3: return pts
    turn = lambda o, a, b: (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])
    lower, upper = [], []
    for p in pts:
        while len(lower) >= 2 and turn(lower[-2], lower[-1], p) <= 0: lower.pop()
        lower.append(p)
    for p in reversed(pts):
        while len(upper) >= 2 and turn(upper[-2], upper[-1], p) <= 0: upper.pop()
        upper.append(p)
    return lower[:-1] + upper[:-1]


def iou(a, b):
    """Intersection over union of the convex hulls of two point sets (Sutherland–Hodgman)."""
    a, b = hull(a), hull(b)
    if len(a) < 3 or len(b) < 3: return 0.0
    out = list(a)
    for i in range(len(b)):
        e0, e1 = b[i], b[(i + 1) % len(b)]
        inside = lambda p: (e1[0] - e0[0]) * (p[1] - e0[1]) - (e1[1] - e0[1]) * (p[0] - e0[0]) >= 0
        def cross(p, q):
            dx, dy, ex, ey = q[0] - p[0], q[1] - p[1], e1[0] - e0[0], e1[1] - e0[1]
            d = dx * ey - dy * ex
            if d == 0: return p
            t = ((e0[0] - p[0]) * ey - (e0[1] - p[1]) * ex) / d
            return (p[0] + t * dx, p[1] + t * dy)
        inp, out = out, []
        for j in range(len(inp)):
            cur, prev = inp[j], inp[j - 1]
            if inside(cur):
                if not inside(prev): out.append(cross(prev, cur))
                out.append(cur)
            elif inside(prev):
                out.append(cross(prev, cur))
        if not out: return 0.0
    inter = abs(area(out)) if len(out) >= 3 else 0.0
    union = abs(area(a)) + abs(area(b)) - inter
    return inter / union if union > 0 else 0.0


def quads(path):
    q = []
    for line in open(path):
        v = line.split()
        if len(v) == 8 and not line.startswith("#"):
            f = [float(x) for x in v]
            q.append([(f[0], f[1]), (f[2], f[3]), (f[4], f[5]), (f[6], f[7])])
    return q


def match(polygons, labels, threshold=0.1):
    """(matched, false_positives): each polygon takes the free label it overlaps most, if IoU > threshold."""
    free, matched, false_positives = list(labels), 0, 0
    for poly in polygons:
        scores = [iou(poly, l) for l in free]
        best = max(range(len(free)), key=scores.__getitem__, default=None)
        if best is None or scores[best] <= threshold:
            false_positives += 1
        else:
            matched += 1
            free.pop(best)
    return matched, false_positives


def score(dataset, decode, per_image=None, times=None):
    """(passed, total, median_ms, false_positives) of DECODE over DATASET; PER_IMAGE, a list,
    gets (path, labelled, matched, false_positives) for each BoofCV-style image; TIMES, a list,
    the milliseconds of each call."""
    passed = total = false_positives = 0
    out_times, times = times, []
    for folder, _, files in sorted(os.walk(dataset)):
        for name in sorted(files):
            if not name.endswith(".pgm"): continue
            img = read_pgm(os.path.join(folder, name))
            truth_path = os.path.join(folder, name[:-4] + ".txt")
            truth = open(truth_path, "rb").read()
            start = time.perf_counter()
            try:
                found = decode(img, os.path.join(folder, name)) if getattr(decode, "by_path", False) else decode(img)
            except Exception:
                found = []
            times.append((time.perf_counter() - start) * 1000)
            if b"SETS" in truth:
                labels = quads(truth_path)
                m, fp = match([poly for _, poly in found], labels)
                total += len(labels); passed += m; false_positives += fp
                if per_image is not None: per_image.append((os.path.join(folder, name), len(labels), m, fp))
            else:
                total += 1
                expected = truth.decode("utf-8", "replace")
                if any(text == expected for text, _ in found): passed += 1
    median = statistics.median(times) if times else 0.0
    if out_times is not None: out_times.extend(times)
    return passed, total, median, false_positives


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--self-test":
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import scorer_test
        sys.exit(scorer_test.main(sys.argv[2:]))
    if len(sys.argv) < 2: sys.exit(__doc__)
    args = sys.argv[1:]
    if args[0] == "--time":
        decode = make_decoder(args[1])
        calls = []
        for path in args[2:]:
            img = read_pgm(path)
            for _ in range(5):
                start = time.perf_counter()
                decode(img)
                calls.append((time.perf_counter() - start) * 1e6)
        print(args[1], "time", "%d" % statistics.median(calls), "%d" % (sum(calls) / len(calls)), len(calls), flush=True)
        sys.exit(0)
    categories = args[0] == "--categories"
    if categories: args = args[1:]
    engine, datasets = args[0], args[1:]
    decode = make_decoder(engine)
    for dataset in datasets:
        per_image, times = [], []
        passed, total, median, false_positives = score(dataset, decode, per_image, times)
        name = os.path.basename(dataset.rstrip("/"))
        print(engine, name, passed, total, "%.2f" % median, false_positives, flush=True)
        if categories:
            print(engine, name + "/MEAN", "-", "-", "%.3f" % (sum(times) / max(1, len(times))), "-", flush=True)
            by = {}
            for path, labelled, matched, fp in per_image:
                c = by.setdefault(os.path.basename(os.path.dirname(path)), [0, 0, 0])
                c[0] += matched; c[1] += labelled; c[2] += fp
            for category in sorted(by):
                m, l, fp = by[category]
                print(engine, name + "/" + category, m, l, "-", fp, flush=True)
