"""Summary of an A/B log (bench/ab.sh, bench/probes/env-ab.sh): per shape the best time of the
rounds and its ratio to the first variant, per profile the geometric mean of those ratios, and
the inexact outputs. Usage: python3 bench/ab_summary.py LOG VARIANT [VARIANT ...]"""
import collections, json, math, sys
log, variants = sys.argv[1], sys.argv[2:]
best = collections.defaultdict(dict)
inexact = []
for line in open(log):
    r = json.loads(line)
    key = (r["profile"], r["rows"], r["width"])
    if not r["exact"]:
        inexact.append("%s %s %dx%d" % (r["variant"], *key))
    t = best[key].get(r["variant"])
    best[key][r["variant"]] = r["median_ms"] if t is None else min(t, r["median_ms"])
base = variants[0]
ratios = collections.defaultdict(list)
print("shape".ljust(24) + ("%s ms" % base).rjust(14) + "".join(("%s/%s" % (v, base)).rjust(24) for v in variants[1:]))
for key in sorted(best):
    row = best[key]
    if base not in row:
        continue
    cells = []
    for v in variants[1:]:
        if v in row:
            ratios[(key[0], v)].append(row[v] / row[base])
            cells.append("%.3f" % (row[v] / row[base]))
        else:
            cells.append("-")
    print(("%s %dx%d" % key).ljust(24) + ("%.4f" % row[base]).rjust(14) + "".join(c.rjust(24) for c in cells))
for (profile, v), xs in sorted(ratios.items()):
    g = math.exp(sum(map(math.log, xs)) / len(xs))
    print("%s %s/%s: geometric mean %.4f over %d shapes" % (profile, v, base, g, len(xs)))
print("inexact outputs: %d%s" % (len(inexact), "" if not inexact else " (" + ", ".join(inexact) + ")"))
