#!/usr/bin/env python3
"""The peers a user would pick instead of ScanGate, on the same PGM files (bench/dataset.py):
zbar (pyzbar), zxing-cpp 1.4 (Debian's python3-zxing-cpp), zxing-cpp newest (PyPI, run from a
venv), OpenCV's QRCodeDetector. QR codes only, one decode call per image, timed in-process.

Usage: peers.py ENGINE DATASET_DIR...   prints one line per dataset:
  engine dataset passed total median_ms false_positives
A zxing-style dataset (image + expected .txt) counts an image when a decoded text equals the
expected one; a BoofCV-style one (a .txt with a SETS line) counts codes whose corner polygon
overlaps a labelled one with IoU > 0.1, each label matched once; other results are false positives.
"""
import os, statistics, sys, time
import numpy as np

engine, datasets = sys.argv[1], sys.argv[2:]

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

if engine == "zbar":
    from pyzbar import pyzbar
    def decode(img):
        out = []
        for s in pyzbar.decode((img.tobytes(), img.shape[1], img.shape[0]), symbols=[pyzbar.ZBarSymbol.QRCODE]):
            out.append((s.data.decode("utf-8", "replace"), [(p.x, p.y) for p in s.polygon]))
        return out
elif engine.startswith("zxing"):  # zxing-1.4 (Debian) or zxing-newest (PyPI, from a venv)
    import zxingcpp
    kwargs = {}
    if hasattr(zxingcpp, "TextMode"):
        kwargs["text_mode"] = zxingcpp.TextMode.Plain
    def decode(img):
        out = []
        for r in zxingcpp.read_barcodes(img, formats=zxingcpp.BarcodeFormat.QRCode, **kwargs):
            p = r.position
            out.append((r.text, [(p.top_left.x, p.top_left.y), (p.top_right.x, p.top_right.y),
                                 (p.bottom_right.x, p.bottom_right.y), (p.bottom_left.x, p.bottom_left.y)]))
        return out
elif engine == "opencv":
    import cv2
    detector = cv2.QRCodeDetector()
    def decode(img):
        ok, texts, points, _ = detector.detectAndDecodeMulti(img)
        if not ok or points is None: return []
        return [(t, [tuple(q) for q in pts]) for t, pts in zip(texts, points) if t]
else:
    sys.exit("unknown engine " + engine)

def area(p):
    return sum(p[i][0] * p[(i + 1) % len(p)][1] - p[(i + 1) % len(p)][0] * p[i][1] for i in range(len(p))) / 2

def iou(a, b):
    if len(a) < 3 or len(b) < 3: return 0.0
    a = a if area(a) > 0 else a[::-1]
    b = b if area(b) > 0 else b[::-1]
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

for dataset in datasets:
    passed = total = false_positives = 0
    times = []
    for folder, _, files in sorted(os.walk(dataset)):
        for name in sorted(files):
            if not name.endswith(".pgm"): continue
            img = read_pgm(os.path.join(folder, name))
            truth_path = os.path.join(folder, name[:-4] + ".txt")
            truth = open(truth_path, "rb").read()
            start = time.perf_counter()
            try:
                found = decode(img)
            except Exception:
                found = []
            times.append((time.perf_counter() - start) * 1000)
            if b"SETS" in truth:
                labels = quads(truth_path)
                total += len(labels)
                for _, poly in found:
                    match = next((i for i, l in enumerate(labels) if iou(poly, l) > 0.1), None)
                    if match is None: false_positives += 1
                    else:
                        passed += 1
                        labels.pop(match)
            else:
                total += 1
                expected = truth.decode("utf-8", "replace")
                if any(text == expected for text, _ in found): passed += 1
    median = statistics.median(times) if times else 0.0
    print(engine, os.path.basename(dataset.rstrip("/")), passed, total, "%.2f" % median, false_positives, flush=True)
