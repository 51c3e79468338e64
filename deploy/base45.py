"""Base45 (RFC 9285), written here from the RFC, independent of ScanGate's codec: the peers'
scripts (credential-interop.py, admin-page.py) read and make signed passes' text with it."""
ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ $%*+-./:"


def b45decode(s):
    out = bytearray()
    for i in range(0, len(s), 3):
        chunk = s[i:i + 3]
        v = sum(ALPHABET.index(c) * 45 ** k for k, c in enumerate(chunk))
        out += v.to_bytes(2 if len(chunk) == 3 else 1, "big")
    return bytes(out)


def b45encode(b):
    out = []
    for i in range(0, len(b), 2):
        if i + 1 < len(b):
            v = b[i] << 8 | b[i + 1]
            out += [ALPHABET[v % 45], ALPHABET[v // 45 % 45], ALPHABET[v // 2025]]
        else:
            out += [ALPHABET[b[i] % 45], ALPHABET[b[i] // 45]]
    return "".join(out)
