#!/usr/bin/env python3
"""Renders the benchmark's image variants once, as 8-bit PGM files every engine reads alike.

  qr-<size>-<variant>/qrcode-N/NAME.pgm (+ NAME.txt): zxing-cpp's QR sets with their expected text
  boofcv-<size>-<variant>/CATEGORY/imageNNN.pgm (+ .txt): the BoofCV half, corners transformed too

size: "original" or "640x480" (scaled to fit with INTER_AREA, padded with white, as a camera
frame); variant: upright, inverted (255 - v: a dark-mode phone screen), mirrored (left-right).
Usage: dataset.py CORPUS OUT [--sizes original,640x480] [--variants upright,inverted,mirrored]
       [--boofcv-sizes 640x480]
"""
import argparse, os, shutil
import cv2
import numpy as np

p = argparse.ArgumentParser()
p.add_argument("corpus"); p.add_argument("out")
p.add_argument("--sizes", default="original,640x480")
p.add_argument("--variants", default="upright,inverted,mirrored")
p.add_argument("--boofcv-sizes", default="640x480")
a = p.parse_args()

def fit(img, size):
    if size == "original":
        return img, 1.0, 0, 0
    w, h = map(int, size.split("x"))
    s = min(w / img.shape[1], h / img.shape[0], 1.0)
    nw, nh = max(1, int(img.shape[1] * s)), max(1, int(img.shape[0] * s))
    small = cv2.resize(img, (nw, nh), interpolation=cv2.INTER_AREA)
    out = np.full((h, w), 255, np.uint8)
    ox, oy = (w - nw) // 2, (h - nh) // 2
    out[oy:oy + nh, ox:ox + nw] = small
    return out, s, ox, oy

def variant(img, v):
    if v == "inverted": return 255 - img
    if v == "mirrored": return np.ascontiguousarray(img[:, ::-1])
    return img

def write_pgm(path, img):
    with open(path, "wb") as f:
        f.write(b"P5\n%d %d\n255\n" % (img.shape[1], img.shape[0]))
        f.write(img.tobytes())

def load(path):
    img = cv2.imread(path, cv2.IMREAD_GRAYSCALE)
    if img is None:  # GIF and friends
        cap = cv2.VideoCapture(path); ok, frame = cap.read()
        img = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY) if ok else None
    return img

sizes, variants = a.sizes.split(","), a.variants.split(",")
for n in range(1, 7):
    src = os.path.join(a.corpus, "zxing-cpp", f"qrcode-{n}")
    for name in sorted(os.listdir(src)):
        stem, ext = os.path.splitext(name)
        if ext.lower() not in (".png", ".jpg", ".jpeg", ".gif"): continue
        if not os.path.exists(os.path.join(src, stem + ".txt")): continue
        img = load(os.path.join(src, name))
        if img is None: continue
        for size in sizes:
            fitted = fit(img, size)[0]
            for v in variants:
                d = os.path.join(a.out, f"qr-{size}-{v}", f"qrcode-{n}")
                os.makedirs(d, exist_ok=True)
                write_pgm(os.path.join(d, stem + ".pgm"), variant(fitted, v))
                shutil.copyfile(os.path.join(src, stem + ".txt"), os.path.join(d, stem + ".txt"))

def labels(path):
    text = open(path).read()
    nums, quads = [], []
    sets = "SETS" in text
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or line.startswith("SETS"): continue
        vals = [float(x) for x in line.split()]
        if sets and len(vals) == 8: quads.append(vals)
        elif not sets: nums += vals
    quads += [nums[i:i + 8] for i in range(0, len(nums) - 7, 8)]
    return quads

root = os.path.join(a.corpus, "boofcv-dev")
for size in [s for s in a.boofcv_sizes.split(",") if s]:
    for category in sorted(os.listdir(root)):
        src = os.path.join(root, category)
        for name in sorted(os.listdir(src)):
            if not name.endswith(".jpg"): continue
            stem = name[:-4]
            img = load(os.path.join(src, name))
            if img is None: continue
            fitted, s, ox, oy = fit(img, size)
            quads = [[(q[i] * s + ox) if i % 2 == 0 else (q[i] * s + oy) for i in range(8)] for q in labels(os.path.join(src, stem + ".txt"))]
            for v in variants:
                out = variant(fitted, v)
                qs = [[(out.shape[1] - 1 - q[i]) if (v == "mirrored" and i % 2 == 0) else q[i] for i in range(8)] for q in quads]
                d = os.path.join(a.out, f"boofcv-{size}-{v}", category)
                os.makedirs(d, exist_ok=True)
                write_pgm(os.path.join(d, stem + ".pgm"), out)
                with open(os.path.join(d, stem + ".txt"), "w") as f:
                    f.write("# corners transformed by bench/dataset.py\nSETS\n")
                    for q in qs: f.write(" ".join("%.3f" % x for x in q) + "\n")
