#!/usr/bin/env python3
"""Runs `paddock-sim match` over seeds 1-10 at 10, 100 and 1,000 tasks (Apollo Figure 12 setup,
100 single-slot servers), prints the table of docs/benchmarks.md and writes docs/img/match.svg.

usage: python3 docs/img/match.py PATH/TO/paddock-sim [OUT.svg]
"""
import json
import subprocess
import sys

SIM = sys.argv[1] if len(sys.argv) > 1 else "paddock-sim"
OUT = sys.argv[2] if len(sys.argv) > 2 else "docs/img/match.svg"
ALGS = ["stable", "greedy", "optimal", "lower_bound"]
SIZES = [10, 100, 1000]

rows = {}
for n in SIZES:
    runs = []
    for seed in range(1, 11):
        out = subprocess.run([SIM, "match", "--tasks", str(n), "--servers", "100", "--seed",
                              str(seed), "--json"], check=True, capture_output=True, text=True)
        runs.append(json.loads(out.stdout))
    rows[n] = runs

print("| tasks | stable | greedy | optimal | lower bound | stable/optimal | greedy/optimal "
      "| stable/lower bound | greedy/stable |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
means = {}
for n in SIZES:
    rs = rows[n]
    m = {a: sum(r[a] for r in rs) / len(rs) for a in ALGS}
    ratio = lambda a, b: sum(r[a] / r[b] for r in rs) / len(rs)
    means[n] = (m, ratio("stable", "lower_bound"), ratio("greedy", "lower_bound"),
                ratio("optimal", "lower_bound"))
    print(f"| {n} | {m['stable']:.3f} | {m['greedy']:.3f} | {m['optimal']:.3f} | "
          f"{m['lower_bound']:.3f} | {ratio('stable', 'optimal'):.3f} | "
          f"{ratio('greedy', 'optimal'):.3f} | {ratio('stable', 'lower_bound'):.3f} | "
          f"{ratio('greedy', 'stable'):.3f} |")

# Bar chart: mean completion time / lower bound per matcher and size.
W, H, L, B, T = 560, 320, 60, 50, 40
colors = {"stable": "#1f77b4", "greedy": "#d62728", "optimal": "#2ca02c"}
ymax = max(max(v[1], v[2], v[3]) for v in means.values())
ymax = (int(ymax * 2) + 1) / 2.0
ph = H - T - B
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
       'font-family="sans-serif" font-size="12">',
       '<rect width="100%" height="100%" fill="white"/>',
       f'<text x="{L}" y="22" font-size="14">Workload completion / lower bound '
       '(Apollo Fig. 12 setup, mean of 10 seeds)</text>']
k = 0.0
while k <= ymax + 1e-9:
    y = T + ph - ph * k / ymax
    svg.append(f'<line x1="{L}" y1="{y:.1f}" x2="{W - 20}" y2="{y:.1f}" stroke="#ddd"/>'
               f'<text x="{L - 6}" y="{y + 4:.1f}" text-anchor="end">{k:.1f}</text>')
    k += 0.5
gw = (W - L - 20) / len(SIZES)
for i, n in enumerate(SIZES):
    vals = {"stable": means[n][1], "greedy": means[n][2], "optimal": means[n][3]}
    for j, a in enumerate(["stable", "greedy", "optimal"]):
        x = L + i * gw + 20 + j * (gw - 40) / 3
        h = ph * vals[a] / ymax
        svg.append(f'<rect x="{x:.1f}" y="{T + ph - h:.1f}" width="{(gw - 40) / 3 - 4:.1f}" '
                   f'height="{h:.1f}" fill="{colors[a]}"/>')
    svg.append(f'<text x="{L + i * gw + gw / 2:.1f}" y="{T + ph + 18}" '
               f'text-anchor="middle">{n} tasks</text>')
for j, a in enumerate(["stable", "greedy", "optimal (per batch)"]):
    c = list(colors.values())[j]
    svg.append(f'<rect x="{L + 10 + j * 150}" y="{H - 22}" width="10" height="10" fill="{c}"/>'
               f'<text x="{L + 24 + j * 150}" y="{H - 13}">{a}</text>')
svg.append("</svg>")
with open(OUT, "w") as f:
    f.write("\n".join(svg) + "\n")
