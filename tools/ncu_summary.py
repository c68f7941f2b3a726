"""tools/ncu_summary.py FILE.csv: total and mean duration per kernel from
`ncu --metrics gpu__time_duration.sum --csv --print-units base` (tools/gpu_check.sh profile)."""
import collections
import csv
import sys

rows = list(csv.reader(open(sys.argv[1])))
head = next(i for i, r in enumerate(rows) if "Kernel Name" in r)
h = rows[head]
name_i, metric_i, value_i = h.index("Kernel Name"), h.index("Metric Name"), h.index("Metric Value")
total, count = collections.defaultdict(float), collections.Counter()
for r in rows[head + 1:]:
    if len(r) > value_i and r[metric_i] == "gpu__time_duration.sum":
        name = r[name_i].split("(")[0]
        total[name] += float(r[value_i].replace(",", ""))
        count[name] += 1
for name, ns in sorted(total.items(), key=lambda kv: -kv[1]):
    print(f"{name:40s} n={count[name]:4d} total={ns / 1e3:9.1f} us  mean={ns / count[name] / 1e3:8.1f} us")
