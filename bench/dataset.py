#!/usr/bin/env python3
"""Renders the benchmark's image variants once, as 8-bit PGM files every engine reads alike.

  qr-<size>-<variant>/qrcode-N/NAME.pgm (+ NAME.txt): zxing-cpp's QR sets with their expected text
  boofcv-<size>-<variant>/CATEGORY/imageNNN.pgm (+ .txt): the BoofCV half, corners transformed too

size: "original" or "640x480" (scaled to fit with INTER_AREA, padded with white, as a camera
frame); variant: upright, inverted (255 - v: a dark-mode phone screen), mirrored (left-right).

The BoofCV labels are in the JPEG's stored pixel frame, but OpenCV's imread turns a photo by its
EXIF orientation (14 of the BoofCV photos are stored sideways). The renderer finds the turn it
applied and moves the corners with it, so the labels stay on the codes in the image written.
Corners use pixel-centre coordinates (pixel i spans i - 0.5 .. i + 0.5): a mirror maps x to
W - 1 - x, a scale s maps x to (x + 0.5) * s - 0.5, each axis by its own rounded scale.
  empty-<size>/falsepositives-N-NAME.pgm (--empty-sizes): zxing-cpp's falsepositives-1..2, photos
  with no code in them (no labels: for timing a reader's empty frames)

Usage: dataset.py CORPUS OUT [--sizes original,640x480] [--variants upright,inverted,mirrored]
       [--boofcv-sizes 640x480] [--empty-sizes 640x480]
"""
import argparse, os, shutil
import cv2
import numpy as np


def fit(img, size):
    """The image fitted into SIZE, and the map of a point of the input onto it."""
    if size == "original":
        return img, lambda x, y: (x, y)
    w, h = map(int, size.split("x"))
    s = min(w / img.shape[1], h / img.shape[0], 1.0)
    nw, nh = max(1, int(img.shape[1] * s)), max(1, int(img.shape[0] * s))
    small = cv2.resize(img, (nw, nh), interpolation=cv2.INTER_AREA)
    out = np.full((h, w), 255, np.uint8)
    ox, oy = (w - nw) // 2, (h - nh) // 2
    out[oy:oy + nh, ox:ox + nw] = small
    sx, sy = nw / img.shape[1], nh / img.shape[0]
    return out, lambda x, y: ((x + 0.5) * sx - 0.5 + ox, (y + 0.5) * sy - 0.5 + oy)


def variant(img, v):
    if v == "inverted": return 255 - img
    if v == "mirrored": return np.ascontiguousarray(img[:, ::-1])
    return img


def variant_point(v, width):
    """The map of a point of an image onto its variant V (only the mirror moves anything)."""
    if v == "mirrored": return lambda x, y: (width - 1 - x, y)
    return lambda x, y: (x, y)


def write_pgm(path, img):
    with open(path, "wb") as f:
        f.write(b"P5\n%d %d\n255\n" % (img.shape[1], img.shape[0]))
        f.write(img.tobytes())


def dihedral(img, transpose, flip_x, flip_y):
    if transpose: img = img.T
    if flip_x: img = img[:, ::-1]
    if flip_y: img = img[::-1, :]
    return img


def load(path):
    """The image as OpenCV shows it (EXIF orientation applied), and the map of a point of the
    stored pixels (the frame the BoofCV labels use) onto it."""
    img = cv2.imread(path, cv2.IMREAD_GRAYSCALE)
    if img is None:  # GIF and friends
        cap = cv2.VideoCapture(path); ok, frame = cap.read()
        return (cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY) if ok else None), (lambda x, y: (x, y))
    raw = cv2.imread(path, cv2.IMREAD_GRAYSCALE | cv2.IMREAD_IGNORE_ORIENTATION)
    if raw is None or (raw.shape == img.shape and np.array_equal(raw, img)):
        return img, lambda x, y: (x, y)
    h, w = raw.shape
    for t in (False, True):
        for fx in (False, True):
            for fy in (False, True):
                view = dihedral(raw, t, fx, fy)
                if view.shape != img.shape or not np.array_equal(view, img): continue
                def move(x, y, t=t, fx=fx, fy=fy):
                    W, H = (h, w) if t else (w, h)
                    if t: x, y = y, x
                    if fx: x = W - 1 - x
                    if fy: y = H - 1 - y
                    return x, y
                return img, move
    raise SystemExit(f"dataset: {path}: OpenCV's EXIF orientation is no flip or quarter turn of the stored pixels")


def labels(path):
    """Corner quadrilaterals of a BoofCV label file: after a SETS line one code per line (eight
    numbers); without one, one corner per line, four lines per code."""
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
    return [[(q[i], q[i + 1]) for i in range(0, 8, 2)] for q in quads]


def write_labels(path, quads):
    with open(path, "w") as f:
        f.write("# corners transformed by bench/dataset.py\nSETS\n")
        for q in quads: f.write(" ".join("%.3f %.3f" % p for p in q) + "\n")


def render_boofcv(root, out_root, sizes, variants):
    """ROOT/CATEGORY/imageNNN.jpg + .txt -> OUT_ROOT/boofcv-SIZE-VARIANT/CATEGORY/imageNNN.pgm + .txt"""
    for size in sizes:
        for category in sorted(os.listdir(root)):
            src = os.path.join(root, category)
            if not os.path.isdir(src): continue
            for name in sorted(os.listdir(src)):
                if not name.endswith(".jpg"): continue
                stem = name[:-4]
                img, orient = load(os.path.join(src, name))
                if img is None: continue
                fitted, scale = fit(img, size)
                quads = [[scale(*orient(x, y)) for x, y in q] for q in labels(os.path.join(src, stem + ".txt"))]
                for v in variants:
                    move = variant_point(v, fitted.shape[1])
                    d = os.path.join(out_root, f"boofcv-{size}-{v}", category)
                    os.makedirs(d, exist_ok=True)
                    write_pgm(os.path.join(d, stem + ".pgm"), variant(fitted, v))
                    write_labels(os.path.join(d, stem + ".txt"), [[move(x, y) for x, y in q] for q in quads])


def render_qr(corpus, out_root, sizes, variants, every=1):
    """Every `every`-th labelled photo of each set (1: all of them; the smoke run takes a sample)."""
    for n in range(1, 7):
        src = os.path.join(corpus, "zxing-cpp", f"qrcode-{n}")
        kept = 0
        for name in sorted(os.listdir(src)):
            stem, ext = os.path.splitext(name)
            if ext.lower() not in (".png", ".jpg", ".jpeg", ".gif"): continue
            if not os.path.exists(os.path.join(src, stem + ".txt")): continue
            kept += 1
            if (kept - 1) % every: continue
            img = load(os.path.join(src, name))[0]
            if img is None: continue
            for size in sizes:
                fitted = fit(img, size)[0]
                for v in variants:
                    d = os.path.join(out_root, f"qr-{size}-{v}", f"qrcode-{n}")
                    os.makedirs(d, exist_ok=True)
                    write_pgm(os.path.join(d, stem + ".pgm"), variant(fitted, v))
                    shutil.copyfile(os.path.join(src, stem + ".txt"), os.path.join(d, stem + ".txt"))


def render_empty(corpus, out_root, sizes):
    for n in (1, 2):
        src = os.path.join(corpus, "zxing-cpp", f"falsepositives-{n}")
        for name in sorted(os.listdir(src)):
            stem, ext = os.path.splitext(name)
            if ext.lower() not in (".png", ".jpg", ".jpeg", ".gif"): continue
            img = load(os.path.join(src, name))[0]
            if img is None: continue
            for size in sizes:
                d = os.path.join(out_root, f"empty-{size}")
                os.makedirs(d, exist_ok=True)
                write_pgm(os.path.join(d, f"falsepositives-{n}-{stem}.pgm"), fit(img, size)[0])


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("corpus"); p.add_argument("out")
    p.add_argument("--sizes", default="original,640x480")
    p.add_argument("--variants", default="upright,inverted,mirrored")
    p.add_argument("--boofcv-sizes", default="640x480")
    p.add_argument("--empty-sizes", default="")
    p.add_argument("--every", type=int, default=1, help="keep every N-th photo of each QR set")
    a = p.parse_args()
    variants = a.variants.split(",")
    render_qr(a.corpus, a.out, [s for s in a.sizes.split(",") if s], variants, max(1, a.every))
    render_boofcv(os.path.join(a.corpus, "boofcv-dev"), a.out, [s for s in a.boofcv_sizes.split(",") if s], variants)
    render_empty(a.corpus, a.out, [s for s in a.empty_sizes.split(",") if s])
