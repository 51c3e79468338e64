#!/usr/bin/env python3
"""Makes the rig's 640x480 frames with qrencode.
  frames.py RUN                      a listed code, an unknown code and an empty frame (GREY and
                                     YUYV) and the allow-list, into the run folder RUN
  frames.py --grey DIR NAME=TEXT...  one GREY frame DIR/NAME.grey per code (the guest's checks)"""
import subprocess, sys

W, H = 640, 480
run = sys.argv[1]

def qr_frame(text, percent=60):
    rows = subprocess.run(["qrencode", "-t", "ASCII", "-m", "4", text], check=True,
                          capture_output=True, text=True).stdout.splitlines()
    n = max(len(r) for r in rows) // 2
    modules = [[r[2 * x:2 * x + 2] == "##" for x in range(n)] for r in rows]
    scale = min(W, H) * percent // 100 // len(modules)
    ox, oy = (W - n * scale) // 2, (H - len(modules) * scale) // 2
    g = bytearray(b"\xc8" * W * H)
    for y in range(oy, oy + len(modules) * scale):
        g[y * W + ox:y * W + ox + n * scale] = b"\xff" * (n * scale)
    for y, row in enumerate(modules):
        for x, dark in enumerate(row):
            if dark:
                for yy in range(oy + y * scale, oy + (y + 1) * scale):
                    g[yy * W + ox + x * scale:yy * W + ox + (x + 1) * scale] = b"\x10" * scale
    return g

if run == "--grey":
    for spec in sys.argv[3:]:
        name, text = spec.split("=", 1)
        open(f"{sys.argv[2]}/{name}.grey", "wb").write(qr_frame(text, 80))
    sys.exit(0)

frames = {"alice": qr_frame("ALICE-0001"), "mallory": qr_frame("MALLORY-9999"), "blank": bytearray(b"\xc8" * W * H)}
for name, g in frames.items():
    open(f"{run}/{name}.grey", "wb").write(g)
    yuyv = bytearray(W * H * 2)
    yuyv[0::2] = g
    yuyv[1::2] = b"\x80" * (W * H)
    open(f"{run}/{name}.yuyv", "wb").write(yuyv)
open(f"{run}/allow-list.txt", "w").write("text:ALICE-0001 label=alice\n")
