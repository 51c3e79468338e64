#!/usr/bin/python3
"""Can a cheap pre-screen refuse hostile frames before zxing-cpp sees them? (issue 28; the
result: docs/decoder.md, "A pre-screen for hostile frames").

The screen (bench/prescreen.c, the same steps modelled here in numpy): downscale by a box filter,
binarise by the local mean, scan every row for the finder pattern's 1:1:3:1:1, check the column
through each hit the same way, and count the candidates (a hit continuing one of the previous
row's is the same candidate), in total and per tile of 80 px; at each downscale factor asked
(1, 2, 4: each sees another range of module sizes). The numpy model is only there to count;
every frame's counts must equal the C function's (compiled with cc -O2, called through ctypes),
which is what is timed (median of 200 calls).
Beside it, one zxing-cpp 1.4 call on the same frame (Debian's python3-zxing-cpp, QR only, the
defaults the reader's first attempt uses: try harder, rotate, the engine's own downscale), the
median of 3 calls; on a hostile sheet one call in a child process, stopped at --zxing-timeout.

Frame sets, all 640x480 gray:
  hostile   finder-pattern sheets (deploy/faults/decoder.py's generator) at 2, 3, 4 px per module;
            the same tiling rotated 10 degrees, at 1, 1.5, 2.5, 3.5, 5, 6, 8 px per module, at 3
            degrees blurred with camera noise, and half a sheet beside a real code
  qr        the 162 photos of zxing-cpp's qrcode-1..6 (CORPUS/zxing-cpp), fitted to 640x480
  boofcv    the BoofCV half (CORPUS/boofcv-dev, 16 categories, 271 photos), fitted likewise
  multi     sheets of 20 QR codes (qrencode): short texts at 2, 3, 4 px per module, long ones
            (version 4) at 2 and 3 px
  empty     zxing-cpp's falsepositives-1..2 fitted, and synthetic views (flat, a gradient, a
            doorway, each with camera noise of sigma 0 to 30; salt and pepper, binary noise,
            stripes, a checkerboard)
  shaped    sheets shaped after the thresholds the hostile set gives, not used to choose them:
            part of a frame tiled (2.5, 3.5, 5 px) and inverted sheets (3, 4 px; zxing-cpp timed
            on the inverted view, as the reader's inverted attempts see them)

Usage: bench/prescreen.py [CORPUS] [--factors 1,2,4] [--tile 80] [--tile-threshold 4] [--runs 200]
                          [--zxing-timeout 30] [--csv FILE]
(CORPUS: default ../shared/corpus beside the repository.) Debian's python3:
numpy, PIL (python3-pil) and python3-zxing-cpp; qrencode; cc."""
import argparse, ctypes, itertools, os, statistics, subprocess, sys, tempfile, time
import numpy as np
from PIL import Image, ImageOps

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "deploy", "faults"))
import decoder as faults  # noqa: E402  (finder_sheet: the fault stage's hostile sheets)

W, H = 640, 480
BLOCK, MIN_RANGE = 8, 24  # as in prescreen.c


# ---------------------------------------------------------------- the screen, modelled in numpy

def small_view(img, factor):
    dh, dw = img.shape[0] // factor, img.shape[1] // factor
    a = img[:dh * factor, :dw * factor].astype(np.int32)
    return (a.reshape(dh, factor, dw, factor).sum(axis=(1, 3)) // (factor * factor)).astype(np.int32)


def thresholds(d):
    """Per 8x8 block: the mean of the 3x3 blocks around it, -1 where they span < MIN_RANGE."""
    dh, dw = d.shape
    bh, bw = -(-dh // BLOCK), -(-dw // BLOCK)
    pad = np.zeros((bh * BLOCK, bw * BLOCK), np.int64)
    pad[:dh, :dw] = d
    valid = np.zeros_like(pad)
    valid[:dh, :dw] = 1
    blocks = lambda a: a.reshape(bh, BLOCK, bw, BLOCK)
    s = blocks(pad).sum(axis=(1, 3))
    n = blocks(valid).sum(axis=(1, 3))
    lo = np.where(blocks(valid) == 1, blocks(pad), 255).min(axis=(1, 3))
    hi = np.where(blocks(valid) == 1, blocks(pad), 0).max(axis=(1, 3))

    def around(a, op, fill):
        p = np.pad(a, 1, constant_values=fill)
        out = p[1:-1, 1:-1].copy()
        for dy in (-1, 0, 1):
            for dx in (-1, 0, 1):
                out = op(out, p[1 + dy:1 + dy + bh, 1 + dx:1 + dx + bw])
        return out

    s3 = sum(np.pad(s, 1)[1 + dy:1 + dy + bh, 1 + dx:1 + dx + bw] for dy in (-1, 0, 1) for dx in (-1, 0, 1))
    n3 = sum(np.pad(n, 1)[1 + dy:1 + dy + bh, 1 + dx:1 + dx + bw] for dy in (-1, 0, 1) for dx in (-1, 0, 1))
    lo3, hi3 = around(lo, np.minimum, 255), around(hi, np.maximum, 0)
    return np.where(hi3 - lo3 < MIN_RANGE, -1, s3 // n3)


def across(col, y, total):
    """The column through a row hit's centre: five runs 1:1:3:1:1, between half and twice the size."""
    v, lim = [0] * 5, 2 * total
    yy = y
    for k, want in ((2, True), (1, False), (0, True)):
        while yy >= 0 and col[yy] == want and v[k] <= lim:
            v[k] += 1
            yy -= 1
    yy = y + 1
    for k, want in ((2, True), (3, False), (4, True)):
        while yy < len(col) and col[yy] == want and v[k] <= lim:
            v[k] += 1
            yy += 1
    tv = sum(v)
    if not (2 * tv >= total and tv <= 2 * total):
        return False
    return all(x > 0 and abs(14 * x - e * tv) < t * tv for x, e, t in zip(v, (2, 2, 6, 2, 2), (1, 1, 3, 1, 1)))


def count(img, factor, tile, tile_threshold):
    """(candidates, most in one tile, tiles with >= tile_threshold): prescreen.c's answer."""
    d = small_view(img, factor)
    dh, dw = d.shape
    t = np.repeat(np.repeat(thresholds(d), BLOCK, axis=0), BLOCK, axis=1)[:dh, :dw]
    dark = (t >= 0) & (d < t)
    tw, th = -(-dw // tile), -(-dh // tile)
    tiles = np.zeros(tw * th, np.int64)
    columns = dark.T.tolist()
    prev, total = [], 0
    for y in range(dh):
        row = dark[y]
        edges = np.flatnonzero(row[1:] != row[:-1]) + 1
        starts = np.concatenate(([0], edges))
        lengths = np.diff(np.concatenate((starts, [dw])))
        colours = row[starts]
        cur = []
        if len(lengths) >= 5:
            win = np.lib.stride_tricks.sliding_window_view(lengths, 5)
            tot = win.sum(axis=1)
            expect = np.array([2, 2, 6, 2, 2])
            tol = np.array([1, 1, 3, 1, 1])
            ok = (np.abs(14 * win - expect * tot[:, None]) < tol * tot[:, None]).all(axis=1)
            ok &= (tot >= 7) & colours[4:]
            for i in np.flatnonzero(ok):
                c = int(starts[i + 2] + lengths[i + 2] // 2)
                if not across(columns[c], y, int(tot[i])):
                    continue
                m = int((tot[i] + 6) // 7)
                same = any(abs(pc - c) <= m and abs(pc - c) <= pm for pc, pm in prev)
                cur.append((c, m))
                if not same:
                    total += 1
                    tiles[(y // tile) * tw + c // tile] += 1
        prev = cur[:512]
    return total, int(tiles.max()), int((tiles >= tile_threshold).sum())


# ---------------------------------------------------------------- the screen in C

class CScreen:
    def __init__(self, workdir):
        so = os.path.join(workdir, "prescreen.so")
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", so, os.path.join(HERE, "prescreen.c")], check=True)
        self.lib = ctypes.CDLL(so)
        self.fn = self.lib.prescreen
        self.fn.restype = ctypes.c_int
        p = ctypes.c_void_p
        i = ctypes.c_int
        self.fn.argtypes = [p, i, i, i, i, i, i, p, ctypes.POINTER(i), ctypes.POINTER(i)]
        self.scratch = ctypes.create_string_buffer(W * H)
        self.a, self.b = ctypes.c_int(), ctypes.c_int()

    def __call__(self, img, factor, tile, tile_threshold, runs=0):
        img = np.ascontiguousarray(img, np.uint8)
        ptr = img.ctypes.data
        args = (ptr, img.shape[1], img.shape[0], img.shape[1], factor, tile, tile_threshold,
                ctypes.addressof(self.scratch), ctypes.byref(self.a), ctypes.byref(self.b))
        total = self.fn(*args)
        times = []
        for _ in range(runs):
            t = time.perf_counter_ns()
            self.fn(*args)
            times.append(time.perf_counter_ns() - t)
        return (total, self.a.value, self.b.value), (statistics.median(times) / 1000 if times else None)


# ---------------------------------------------------------------- zxing-cpp on the same frame

ZXING_CHILD = """
import sys, time, numpy as np, zxingcpp
img = np.fromfile(sys.argv[1], np.uint8).reshape(480, 640)
t = time.perf_counter(); r = zxingcpp.read_barcodes(img, formats=zxingcpp.BarcodeFormat.QRCode)
print((time.perf_counter() - t) * 1000, len(r))
"""


def zxing_inline(img, runs=3):
    import zxingcpp
    times, found = [], 0
    for _ in range(runs):
        t = time.perf_counter()
        found = len(zxingcpp.read_barcodes(img, formats=zxingcpp.BarcodeFormat.QRCode))
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times), found


def zxing_child(img, workdir, timeout):
    path = os.path.join(workdir, "frame.raw")
    img.tofile(path)
    try:
        out = subprocess.run([sys.executable, "-c", ZXING_CHILD, path], capture_output=True, text=True,
                             timeout=timeout, check=True).stdout.split()
        return float(out[0]), int(out[1])
    except subprocess.TimeoutExpired:
        return float("inf"), 0


# ---------------------------------------------------------------- frames

def fit(img):
    """As bench/dataset.py: scaled to fit 640x480 with an area filter, padded with white."""
    s = min(W / img.width, H / img.height, 1.0)
    nw, nh = max(1, int(img.width * s)), max(1, int(img.height * s))
    small = np.asarray(img.resize((nw, nh), Image.BOX) if s < 1 else img, np.uint8)
    out = np.full((H, W), 255, np.uint8)
    out[(H - nh) // 2:(H - nh) // 2 + nh, (W - nw) // 2:(W - nw) // 2 + nw] = small
    return out


def load(path):
    img = Image.open(path)
    img = ImageOps.exif_transpose(img)
    return fit(img.convert("L"))


def tiling(px, angle=0.0, supersample=4):
    """The fault stage's tiling at any module size and angle, area-sampled as a camera would."""
    o = (np.arange(supersample) + 0.5) / supersample
    ys, xs = np.mgrid[0:H, 0:W].astype(np.float64)
    acc = np.zeros((H, W))
    c, s = np.cos(np.radians(angle)), np.sin(np.radians(angle))
    for oy in o:
        for ox in o:
            x, y = xs + ox - W / 2, ys + oy - H / 2
            u, v = c * x + s * y + W / 2, -s * x + c * y + H / 2
            mx, my = np.floor(u / px).astype(np.int64) % 8, np.floor(v / px).astype(np.int64) % 8
            dark = (mx != 7) & (my != 7) & (np.maximum(np.abs(mx - 3), np.abs(my - 3)) != 2)
            acc += np.where(dark, 0, 255)
    return (acc / supersample ** 2).round().astype(np.uint8)


def qr_modules(text, margin=4):
    out = subprocess.run(["qrencode", "-t", "ASCII", "-m", str(margin), text], capture_output=True, text=True,
                         check=True).stdout
    return np.array([[c == "#" for c in line[0::2]] for line in out.splitlines() if line])


def paste_code(img, text, px, ox, oy, margin=1):
    m = qr_modules(text, margin)
    block = np.where(np.kron(m, np.ones((px, px), bool)), 0, 255).astype(np.uint8)
    h, w = block.shape
    img[oy:oy + h, ox:ox + w] = block[:H - oy, :W - ox]
    return img


def blur_noise(img, rng, sigma=6.0):
    a = img.astype(np.float64)
    k = np.array([1, 4, 6, 4, 1]) / 16.0  # a binomial blur: a slightly soft lens
    a = np.apply_along_axis(lambda r: np.convolve(r, k, "same"), 1, a)
    a = np.apply_along_axis(lambda r: np.convolve(r, k, "same"), 0, a)
    a = 40 + a * (180 / 255) + rng.normal(0, sigma, a.shape)  # printed paper under room light
    return np.clip(a, 0, 255).astype(np.uint8)


def hostile_frames(rng):
    out = []
    for px in (2, 3, 4):
        sheet = np.frombuffer(faults.finder_sheet(px), np.uint8).reshape(H, W)
        assert np.array_equal(sheet, tiling(px, supersample=1)), "tiling() must be the fault stage's sheet"
        out.append((f"sheet {px} px", sheet))
    for px in (2, 3, 4):
        out.append((f"sheet {px} px rotated 10°", tiling(px, 10)))
    for px in (1, 1.5, 2.5, 3.5, 5, 6, 8):
        out.append((f"sheet {px} px (scaled)", tiling(px)))
    for px in (3, 4):
        out.append((f"sheet {px} px at 3°, blurred, noise", blur_noise(tiling(px, 3), rng)))
    for px in (2, 3, 4):
        half = np.frombuffer(faults.finder_sheet(px), np.uint8).reshape(H, W).copy()
        half[:, W // 2:] = 255
        out.append((f"half sheet {px} px + a code", paste_code(half, "EMP-0001", 4, W // 2 + 40, 150)))
    return out


def shaped_frames():
    """Sheets shaped after the thresholds the hostile set gives (not used to choose them): part of
    a frame tiled, so the count stays under them; and inverted sheets (light finders on dark),
    which the reader's inverted views turn back into the hostile sheet."""
    out = []
    for px, cols in ((2.5, 580), (3.5, 300), (5, 600)):
        img = tiling(px).copy()
        img[:, cols:] = 255
        out.append((f"sheet {px} px, left {cols} px", img))
    for px in (3, 4):
        out.append((f"sheet {px} px inverted", 255 - tiling(px)))
    return out


def multi_frames():
    """Sheets of 20 codes (5 x 4 cells of 128 x 120 px): short texts (version 1) at 2, 3, 4 px per
    module and long ones (a 65-byte credential: version 4) at 2 and 3 px."""
    out = []
    for px, kind in ((2, "short"), (3, "short"), (4, "short"), (2, "long"), (3, "long")):
        img = np.full((H, W), 255, np.uint8)
        for i in range(20):
            text = f"EMP-{i:04d}" if kind == "short" else f"SG1:{i:04d}:" + "k3Yv9QzT" * 7
            side = qr_modules(text, margin=1).shape[0] * px
            assert side <= 120
            cx, cy = (i % 5) * 128, (i // 5) * 120
            paste_code(img, text, px, cx + (128 - side) // 2, cy + (120 - side) // 2)
        out.append((f"20 codes {px} px {kind}", img))
    return out


def empty_frames(corpus, rng):
    out = []
    for d in ("falsepositives-1", "falsepositives-2"):
        folder = os.path.join(corpus, "zxing-cpp", d)
        for f in sorted(os.listdir(folder)):
            if f.rsplit(".", 1)[-1].lower() in ("png", "jpg", "jpeg", "gif"):
                out.append((f"{d}/{f}", load(os.path.join(folder, f))))
    ys, xs = np.mgrid[0:H, 0:W]
    gradient = (60 + 140 * xs / W).astype(np.float64)
    doorway = gradient.copy()
    doorway[:, 180:460] = 90  # a dark doorway in a lit wall, a floor
    doorway[400:, :] = 150
    for sigma in (0, 4, 12, 30):
        for name, base in (("flat", np.full((H, W), 128.0)), ("gradient", gradient), ("doorway", doorway)):
            out.append((f"{name}, noise σ {sigma}", np.clip(base + rng.normal(0, sigma, (H, W)), 0, 255).astype(np.uint8)))
    sp = np.full((H, W), 128, np.uint8)
    r = rng.random((H, W))
    sp[r < 0.05], sp[r > 0.95] = 0, 255
    out.append(("salt and pepper 10 %", sp))
    out.append(("binary noise, 1 px", np.where(rng.random((H, W)) < 0.5, 0, 255).astype(np.uint8)))
    out.append(("binary noise, 2 px", np.kron(np.where(rng.random((H // 2, W // 2)) < 0.5, 0, 255),
                                            np.ones((2, 2))).astype(np.uint8)))
    stripes = np.where((xs // 3) % 2 == 0, 40, 220).astype(np.uint8)
    out.append(("stripes 3 px", stripes))
    check = np.where(((xs // 4) + (ys // 4)) % 2 == 0, 40, 220).astype(np.uint8)
    out.append(("checkerboard 4 px", check))
    return out


def corpus_frames(corpus):
    qr, boof = [], []
    for i in range(1, 7):
        folder = os.path.join(corpus, "zxing-cpp", f"qrcode-{i}")
        for f in sorted(os.listdir(folder)):
            if f.rsplit(".", 1)[-1].lower() in ("png", "jpg", "jpeg", "gif"):
                qr.append((f"qrcode-{i}/{f}", load(os.path.join(folder, f))))
    root = os.path.join(corpus, "boofcv-dev")
    for cat in sorted(os.listdir(root)):
        if not os.path.isdir(os.path.join(root, cat)):
            continue
        for f in sorted(os.listdir(os.path.join(root, cat))):
            if f.rsplit(".", 1)[-1].lower() in ("png", "jpg", "jpeg"):
                boof.append((f"{cat}/{f}", load(os.path.join(root, cat, f))))
    return qr, boof


# ---------------------------------------------------------------- the run

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus", nargs="?", default=os.path.join(HERE, "..", "..", "shared", "corpus"))
    ap.add_argument("--factors", default="1,2,4", help="downscale factors to screen at (box filter)")
    ap.add_argument("--tile", type=int, default=80, help="tile side in px of the frame")
    ap.add_argument("--tile-threshold", type=int, default=4, help="a dense tile: at least this many")
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--zxing-timeout", type=float, default=30)
    ap.add_argument("--csv")
    args = ap.parse_args()
    factors = [int(f) for f in args.factors.split(",")]
    if not os.path.isdir(os.path.join(args.corpus, "zxing-cpp")):
        raise SystemExit(f"no corpus at {args.corpus} (give CORPUS: the folder of shared/corpus)")
    rng = np.random.default_rng(28)
    work = tempfile.mkdtemp(prefix="scangate-prescreen-")
    screen = CScreen(work)
    qr, boof = corpus_frames(args.corpus)
    sets = [("hostile", hostile_frames(rng)), ("qr", qr), ("boofcv", boof), ("multi", multi_frames()),
            ("empty", empty_frames(args.corpus, rng)), ("shaped", shaped_frames())]
    print(f"factors {factors}; tiles of {args.tile} px of the frame, dense at >= {args.tile_threshold}; "
          f"{args.runs} C calls a frame and factor; {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}", flush=True)
    rows = []
    for set_name, frames in sets:
        for name, img in frames:
            counts, us = {}, {}
            for f in factors:
                tile = args.tile // f
                model = count(img, f, tile, args.tile_threshold)
                counts[f], us[f] = screen(img, f, tile, args.tile_threshold, args.runs)
                if model != counts[f]:
                    raise SystemExit(f"{set_name} {name} /{f}: numpy model {model} != C {counts[f]}")
            if set_name in ("hostile", "shaped"):  # an inverted sheet: timed in the view that reads it
                zx_ms, found = zxing_child(255 - img if "inverted" in name else img, work, args.zxing_timeout)
            else:
                zx_ms, found = zxing_inline(img)
            rows.append(dict(set=set_name, name=name, counts=counts, us=us, zx=zx_ms, found=found))
            if set_name in ("hostile", "multi", "shaped"):
                zx = f">{args.zxing_timeout:.0f} s" if zx_ms == float("inf") else f"{zx_ms:.1f} ms"
                print(f"  {set_name:8} {name:32} " + "  ".join(
                    f"/{f}: {counts[f][0]:4} ({counts[f][1]:2}, {counts[f][2]:2}) {us[f]:5.0f} µs" for f in factors) +
                    f"  zxing {zx}, {found} codes", flush=True)
    if args.csv:
        with open(args.csv, "w") as out:
            out.write("set,frame,zxing_ms,codes," + ",".join(
                f"candidates_{f},tile_max_{f},dense_tiles_{f},c_us_{f}" for f in factors) + "\n")
            for r in rows:
                out.write(f"{r['set']},\"{r['name']}\",{r['zx']:.3f},{r['found']}," + ",".join(
                    f"{r['counts'][f][0]},{r['counts'][f][1]},{r['counts'][f][2]},{r['us'][f]:.1f}" for f in factors) + "\n")
    report(rows, factors, args)
    subprocess.run(["rm", "-rf", work])


def report(rows, factors, args):
    names = ["hostile", "qr", "boofcv", "multi", "empty"]
    legit = [r for r in rows if r["set"] not in ("hostile", "shaped")]
    shaped = [r for r in rows if r["set"] == "shaped"]
    hostile = [r for r in rows if r["set"] == "hostile"]
    slow = [r for r in hostile if r["zx"] > 100]
    ms = lambda v: "> timeout" if v == float("inf") else f"{v:.1f}"
    mmm = lambda v: f"{min(v)} / {statistics.median(v):g} / {max(v)}"
    print("\n| set | frames | zxing-cpp ms median (max) | " + " | ".join(
        f"/{f}: candidates min / median / max · most in a tile · C µs median (max)" for f in factors) + " |")
    print("|---|---:|---:|" + "---:|" * len(factors))
    for s in names + ["shaped"]:
        r = [x for x in rows if x["set"] == s]
        zx = [x["zx"] for x in r]
        print(f"| {s} | {len(r)} | {ms(statistics.median(zx))} ({ms(max(zx))}) | " + " | ".join(
            f"{mmm([x['counts'][f][0] for x in r])} · {max(x['counts'][f][1] for x in r)} · "
            f"{statistics.median([x['us'][f] for x in r]):.0f} ({max(x['us'][f] for x in r):.0f})" for f in factors) + " |")
    total = lambda r, f: r["counts"][f][0]

    def wrong(rule):
        return ", ".join(f"{s} {sum(1 for x in legit if x['set'] == s and rule(x))}/{sum(1 for x in legit if x['set'] == s)}"
                         for s in names[1:])

    def examples(rule, key):
        worst = sorted((x for x in legit if rule(x)), key=key)[:3]
        return "; e.g. " + "; ".join(f"{x['set']} {x['name']}" for x in worst) if worst else ""

    print()
    for label, targets in (("every hostile sheet", hostile), ("every sheet zxing-cpp needs > 100 ms for", slow)):
        print(f"To refuse {label} ({len(targets)}):")
        for f in factors:
            for i, metric in ((0, "candidates"), (1, "most in one tile"), (2, f"tiles with >= {args.tile_threshold}")):
                seen = [x for x in targets if x["counts"][f][i] > 0]
                missed = [x["name"] for x in targets if x["counts"][f][i] == 0]
                if not seen:
                    print(f"  /{f} {metric}: sees none of them")
                    continue
                t = min(x["counts"][f][i] for x in seen)
                rule = lambda x, f=f, i=i, t=t: x["counts"][f][i] >= t
                print(f"  /{f} {metric} >= {t}" + (f" (the {len(seen)} it sees; none on: {', '.join(missed)})" if missed else "") +
                      f": wrongly refused {wrong(rule)}" + examples(rule, lambda x, f=f, i=i: -x["counts"][f][i]))
        # a frame refused when any factor's candidates reach that factor's threshold: the best
        # thresholds (fewest wrongly refused, then the highest) among the targets' own counts
        best = None
        options = [sorted({total(x, f) for x in targets if total(x, f) > 0}) + [float("inf")] for f in factors]
        for combo in itertools.product(*options):
            rule = lambda x, combo=combo: any(total(x, f) >= t for f, t in zip(factors, combo))
            if not all(rule(x) for x in targets):
                continue
            key = (sum(1 for x in legit if rule(x)), [-t for t in combo])
            if best is None or key < best[0]:
                best = (key, combo, rule)
        if best:
            combo, rule = best[1], best[2]
            cost = [sum(x["us"][f] for f in factors) for x in legit]
            print("  any of " + ", ".join(f"/{f} >= {t:g}" for f, t in zip(factors, combo)) +
                  f": wrongly refused {wrong(rule)}" + examples(rule, lambda x: -max(total(x, f) for f in factors)) +
                  f"; all {len(factors)} scales cost {statistics.median(cost):.0f} µs a frame (median; max {max(cost):.0f})")
            for x in shaped:
                print(f"    shaped: {x['name']}: " + "/".join(str(total(x, f)) for f in factors) +
                      f" -> {'refused' if rule(x) else 'PASSES'}; zxing-cpp {ms(x['zx'])} ms")
    top = sorted(legit, key=lambda x: -max(total(x, f) for f in factors))[:6]
    print("Most candidates on a legitimate frame: " + "; ".join(
        f"{x['set']} {x['name']} " + "/".join(str(total(x, f)) for f in factors) + f" (zxing {ms(x['zx'])} ms)" for x in top))


if __name__ == "__main__":
    main()
