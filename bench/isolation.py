#!/usr/bin/env python3
"""What the decoder's process boundary costs (docs/decoder.md, "The decoder worker").

The real service (`scangate run`, replay source, simulated GPIO) in both modes side by side in
one run, `decoder.isolation = "process"` (a worker process) and `"inline"` (the loop's thread):

- frame-to-edge: scenes of a code appearing (20 codes, 3 to 6 px per module, at several places,
  each shown 6 frames then 6 empty frames) replayed at 60 fps; the service's own histogram of
  capture-to-relay-edge (the summary line), and decode (send to reply in process mode);
- loop rate: the replay as fast as the loop takes frames, on empty frames and on frames that all
  hold a code: frames taken per second, and decodes that came back per second.

Run as: bench/isolation.py [SCANGATE] [SECONDS]  (default: the release build, 20 s a run)"""
import os, re, socket, subprocess, sys, tempfile, time

W, H = 640, 480
BINARY = sys.argv[1] if len(sys.argv) > 1 else ".build/release/scangate"
SECONDS = int(sys.argv[2]) if len(sys.argv) > 2 else 20


def code(text, scale, ox, oy):
    out = subprocess.run(["qrencode", "-t", "ASCII", "-m", "2", text], capture_output=True, text=True, check=True).stdout
    rows = [line[0::2] for line in out.splitlines() if line]
    image = bytearray([200]) * (W * H)
    for my, row in enumerate(rows):
        for mx, c in enumerate(row):
            v = 0 if c == "#" else 255
            for y in range(oy + my * scale, oy + (my + 1) * scale):
                image[y * W + ox + mx * scale:y * W + ox + (mx + 1) * scale] = bytes([v]) * scale
    return bytes(image)


def folder(root, name, frames):
    d = f"{root}/{name}"
    os.makedirs(d)
    cache = {}
    for i, pixels in enumerate(frames):
        base = cache.get(id(pixels))
        if base is None:
            base = cache[id(pixels)] = f"{root}/{name}-{len(cache)}.pgm"
            with open(base, "wb") as f:
                f.write(b"P5\n%d %d\n255\n" % (W, H) + pixels)
        os.link(base, f"{d}/{i:05d}.pgm")
    return d


def run(root, frames_dir, isolation, fps, seconds):
    allow = f"{root}/allow.txt"
    config = f"{root}/config-{isolation}-{os.path.basename(frames_dir)}.toml"
    with open(config, "w") as f:
        f.write(f"""[camera]
source = "replay"
replay_path = "{frames_dir}"
replay_fps = {fps}
replay_loop = true
[decoder]
isolation = "{isolation}"
[presence]
leave_after_ms = 60
cooldown_ms = 0
[allow_list]
path = "{allow}"
watch = false
[gpio]
backend = "sim"
relay_pulse_ms = 50
[log]
path = ""
[console]
listen = ["127.0.0.1:0"]
""")
    p = subprocess.Popen([BINARY, "run", "--config", config, "--quiet-edges"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    port = None
    lines = []
    while port is None:
        line = p.stdout.readline()
        lines.append(line)
        m = re.match(r"console listening on 127\.0\.0\.1:(\d+)", line)
        if m:
            port = int(m.group(1))
        if not line:
            raise SystemExit("".join(lines))
    time.sleep(seconds)
    stats = ""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"STATS\n")
    while "OK stats" not in stats:
        stats += s.recv(65536).decode()
    s.close()
    p.send_signal(2)
    out = "".join(lines) + p.communicate(timeout=30)[0]
    summary = re.search(r"summary: (\d+) frames in ([\d.]+) ms", out)
    latency = re.search(r"decode p50 (\d+) µs p99 (\d+) µs; frame-to-edge p50 (\d+) µs p99 (\d+) µs", out)
    skipped = re.search(r"skipped (\d+)", stats)
    frames, ms = int(summary.group(1)), float(summary.group(2))
    decodes = frames - (int(skipped.group(1)) if skipped else 0)
    grants = len(re.findall(r"decision granted", out))
    return dict(fps=frames * 1000 / ms, decodes=decodes * 1000 / ms, grants=grants,
                decode=(int(latency.group(1)), int(latency.group(2))), edge=(int(latency.group(3)), int(latency.group(4))))


def main():
    root = tempfile.mkdtemp(prefix="scangate-isolation-")
    texts = [f"EMP-{i:04d}" for i in range(20)]
    with open(f"{root}/allow.txt", "w") as f:
        f.writelines(f"text:{t}\n" for t in texts)
    empty = bytes([200]) * (W * H)
    scenes = []
    for i, t in enumerate(texts):
        pixels = code(t, 3 + i % 4, 40 + (i * 97) % 300, 30 + (i * 53) % 200)
        scenes += [pixels] * 6 + [empty] * 6
    scene_dir = folder(root, "scenes", scenes)
    empty_dir = folder(root, "empty", [empty])
    busy_dir = folder(root, "busy", [code("EMP-0001", 4, 200, 120)])
    print(f"binary {BINARY}; {SECONDS} s a run; 640x480; {os.cpu_count()} cores")
    print("| mode | frame-to-edge p50 / p99 ms | decode p50 / p99 ms | grants | loop fps empty | decodes/s empty "
          "| loop fps busy | decodes/s busy |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for isolation in ("process", "inline"):
        s = run(root, scene_dir, isolation, 60, SECONDS)
        e = run(root, empty_dir, isolation, 0, SECONDS // 2)
        b = run(root, busy_dir, isolation, 0, SECONDS // 2)
        print(f"| {isolation} | {s['edge'][0] / 1000:.2f} / {s['edge'][1] / 1000:.2f} | "
              f"{s['decode'][0] / 1000:.2f} / {s['decode'][1] / 1000:.2f} | {s['grants']} | {e['fps']:.0f} | "
              f"{e['decodes']:.0f} | {b['fps']:.0f} | {b['decodes']:.0f} |", flush=True)
    subprocess.run(["rm", "-rf", root])


if __name__ == "__main__":
    main()
