#!/usr/bin/env python3
"""compare_logits.py OURS.f32 REF.f32 [VOCAB]: row-by-row agreement of two
f32 logits files (row-major, VOCAB floats a row, e.g. `tessera run
--logits-out` against llama.cpp's ../shared/reference/zoo/*.logits.f32):
the worst and median row NMSE = sum((a-b)^2) / sum(b^2), and the share of
rows whose argmax agrees. Plain Python, no numpy."""
import struct
import sys


def rows(path, vocab):
    data = open(path, "rb").read()
    if len(data) % (4 * vocab):
        sys.exit(f"{path}: {len(data)} bytes is not a whole number of {vocab}-float rows")
    n = len(data) // 4
    v = struct.unpack(f"<{n}f", data)
    return [v[i:i + vocab] for i in range(0, n, vocab)]


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    vocab = int(sys.argv[3]) if len(sys.argv) == 4 else 512
    a, b = rows(sys.argv[1], vocab), rows(sys.argv[2], vocab)
    if len(a) != len(b):
        print(f"row counts differ: {len(a)} vs {len(b)}; comparing the first {min(len(a), len(b))}")
    nmse, agree = [], 0
    for x, y in zip(a, b):
        den = sum(v * v for v in y) or 1.0
        nmse.append(sum((u - v) ** 2 for u, v in zip(x, y)) / den)
        agree += x.index(max(x)) == y.index(max(y))
    if not nmse:
        sys.exit("no rows")
    s = sorted(nmse)
    print(f"rows {len(nmse)}  worst NMSE {s[-1]:.3e}  median {s[len(s) // 2]:.3e}  argmax agrees {agree}/{len(nmse)}")


if __name__ == "__main__":
    main()
