"""Summary of an A/B log (bench/ab.sh, bench/probes/env-ab.sh): per shape the best time of the
rounds and its ratio to the first variant, per profile the geometric mean of those ratios, and
the inexact outputs. A ratio marked `*` compares different kernels: the variants' maps chose
another family or block size for that shape (builds of different default maps), so it measures
the map's choice, not a kernel change alone; the geometric means are also given without them.
Usage: python3 bench/ab_summary.py LOG VARIANT [VARIANT ...]"""
import collections, json, math, sys
log, variants = sys.argv[1], sys.argv[2:]
best = collections.defaultdict(dict)
kernel = collections.defaultdict(dict)  # (profile, rows, width) -> variant -> (map, threads)
inexact = []
for line in open(log):
    r = json.loads(line)
    key = (r["profile"], r["rows"], r["width"])
    if not r["exact"]:
        inexact.append("%s %s %dx%d" % (r["variant"], *key))
    fields = dict(f.split("=", 1) for f in r.get("spec", "").split(",") if "=" in f)
    kernel[key][r["variant"]] = (fields.get("map"), fields.get("threads"))
    t = best[key].get(r["variant"])
    best[key][r["variant"]] = r["median_ms"] if t is None else min(t, r["median_ms"])
base = variants[0]
ratios = collections.defaultdict(list)
same_kernel = collections.defaultdict(list)
marked = 0
print("shape".ljust(24) + ("%s ms" % base).rjust(14) + "".join(("%s/%s" % (v, base)).rjust(24) for v in variants[1:]))
for key in sorted(best):
    row = best[key]
    if base not in row:
        continue
    cells = []
    for v in variants[1:]:
        if v in row:
            ratio = row[v] / row[base]
            ratios[(key[0], v)].append(ratio)
            if kernel[key].get(v) == kernel[key].get(base):
                same_kernel[(key[0], v)].append(ratio)
                cells.append("%.3f" % ratio)
            else:
                marked += 1
                cells.append("%.3f*" % ratio)
        else:
            cells.append("-")
    print(("%s %dx%d" % key).ljust(24) + ("%.4f" % row[base]).rjust(14) + "".join(c.rjust(24) for c in cells))


def geomean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs))


for (profile, v), xs in sorted(ratios.items()):
    line = "%s %s/%s: geometric mean %.4f over %d shapes" % (profile, v, base, geomean(xs), len(xs))
    same = same_kernel[(profile, v)]
    if len(same) < len(xs):
        line += (", %.4f over the %d with the same kernel" % (geomean(same), len(same))
                 if same else ", none with the same kernel")
    print(line)
if marked:
    print("* %d ratio(s) compare kernels of different families or block sizes (the variants' maps "
          "differ there)" % marked)
print("inexact outputs: %d%s" % (len(inexact), "" if not inexact else " (" + ", ".join(inexact) + ")"))
