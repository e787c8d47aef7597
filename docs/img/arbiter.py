#!/usr/bin/env python3
"""Runs `paddock-sim arbiter` at three loads x two seeds on both job mixes (issue 12, "It must
show" 3; Verma et al. Figures 1-2 as a load sweep), prints the Markdown tables of docs/arbiter.md
and writes docs/img/arbiter.svg. Python 3 standard library only. The sweep keeps the setting its
tables were made in: Verma's deadlines on the true time alone, the error model learning from
every job (`--deadlines true --calib-from all`), on the token-slice engine it was made on
(`--engine slice`).

usage: python3 docs/img/arbiter.py PATH/TO/paddock-sim [OUT.svg]   (run from the repository root)
"""
import json
import subprocess
import sys

SIM = sys.argv[1] if len(sys.argv) > 1 else "paddock-sim"
OUT = sys.argv[2] if len(sys.argv) > 2 else "docs/img/arbiter.svg"
LOADS = [0.5, 0.7, 0.9]
SEEDS = [1, 2]
MIXES = {"wfcommons": 300, "facebook": 1000}  # jobs per run
POLS = ["fcfs", "edf", "minedf", "minedf_wc", "paddock"]
COLORS = {"fcfs": "#7f7f7f", "edf": "#d62728", "minedf": "#ff7f0e", "minedf_wc": "#1f77b4",
          "paddock": "#2ca02c"}


def run(mix, load, seed):
    out = subprocess.run([SIM, "arbiter", "--mix", mix, "--jobs", str(MIXES[mix]), "--load",
                          str(load), "--seed", str(seed), "--deadlines", "true",
                          "--calib-from", "all", "--engine", "slice", "--json"], check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout)


res = {(m, l, s): run(m, l, s) for m in MIXES for l in LOADS for s in SEEDS}


def mean(m, l, name, key):
    return sum(res[(m, l, s)]["policies"][name][key] for s in SEEDS) / len(SEEDS)


for m in MIXES:
    r0 = res[(m, LOADS[0], SEEDS[0])]
    print(f"\n### {m}: {r0['jobs']} jobs per run, {r0['capacity']} tokens, seeds "
          f"{', '.join(map(str, SEEDS))} (mean of the two)\n")
    print("| load | policy | missed | rel. deadline exceeded | utilization | spare grants "
          "| spare reclaims | work lost (token-s) | admitted | admitted missed |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for l in LOADS:
        for adm in ["", "+admission"]:
            for p in POLS:
                n = p + adm
                print(f"| {l} | {n} | {mean(m, l, n, 'missed_fraction'):.3f} "
                      f"| {mean(m, l, n, 'relative_deadline_exceeded'):.3f} "
                      f"| {mean(m, l, n, 'utilization'):.3f} "
                      f"| {mean(m, l, n, 'spare_grants'):.0f} "
                      f"| {mean(m, l, n, 'spare_reclaims'):.0f} "
                      f"| {mean(m, l, n, 'work_lost_s'):.0f} "
                      f"| {mean(m, l, n, 'admitted_fraction'):.3f} "
                      f"| {mean(m, l, n, 'admitted_missed_fraction'):.3f} |")
    print("\nPer seed, missed fraction (without admission / admitted missed with admission):\n")
    print("| load | seed | " + " | ".join(POLS) + " |")
    print("|---:|---:|" + "---:|" * len(POLS))
    for l in LOADS:
        for s in SEEDS:
            pol = res[(m, l, s)]["policies"]
            cells = [f"{pol[p]['missed_fraction']:.3f} / "
                     f"{pol[p + '+admission']['admitted_missed_fraction']:.3f}" for p in POLS]
            print(f"| {l} | {s} | " + " | ".join(cells) + " |")
    print("\nAllocation of deadline jobs (time-averaged grant) over the oracles, without "
          "admission:\n")
    print("| load | oracle k (structure-aware) | oracle ceil(T/d) | "
          + " | ".join(f"{p} alloc/dag, alloc/T/d" for p in POLS) + " |")
    print("|---:|---:|---:|" + "---:|" * len(POLS))
    for l in LOADS:
        o = [res[(m, l, s)]["oracle"] for s in SEEDS]
        dag = sum(x["dag_mean"] for x in o) / len(o)
        td = sum(x["td_mean"] for x in o) / len(o)
        cells = [f"{mean(m, l, p, 'alloc_vs_oracle_dag'):.2f}, "
                 f"{mean(m, l, p, 'alloc_vs_oracle_td'):.2f}" for p in POLS]
        print(f"| {l} | {dag:.2f} | {td:.2f} | " + " | ".join(cells) + " |")

# The chart: a 2 x 4 grid, rows = mixes, columns = Verma's Figure 1 (missed fraction, relative
# deadline exceeded) and Figure 2 (spare tokens granted, spare taken back), x = load, one line
# per policy (no admission).
PW, PH = 240, 200
W, H = 80 + 4 * (PW + 100), 620
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
       'font-family="sans-serif" font-size="12">',
       '<rect width="100%" height="100%" fill="white"/>',
       '<text x="70" y="22" font-size="14">paddock-sim arbiter: Verma et al. Figures 1-2 as a load '
       'sweep (mean of seeds 1, 2; no admission)</text>']
panels = [("missed_fraction", "missed-deadline jobs"),
          ("relative_deadline_exceeded", "rel. deadline exceeded"),
          ("spare_grants", "spare tokens granted"),
          ("spare_reclaims", "spare taken back")]
for row, m in enumerate(MIXES):
    for col, (key, title) in enumerate(panels):
        x0, y0 = 80 + col * (PW + 100), 60 + row * (PH + 90)
        # FCFS's relative deadline exceeded is an order of magnitude above the rest: clipped.
        shown = [p for p in POLS if key != "relative_deadline_exceeded" or p != "fcfs"]
        top = max(mean(m, l, p, key) for l in LOADS for p in shown)
        top = top * 1.1 if top > 0 else 1
        note = " (no fcfs)" if len(shown) < len(POLS) else ""
        svg.append(f'<text x="{x0}" y="{y0 - 8}">{m}: {title}{note}</text>')
        for k in range(5):
            y = y0 + PH - PH * k / 4
            svg.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x0 + PW}" y2="{y:.1f}" '
                       'stroke="#ddd"/>')
            svg.append(f'<text x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end">'
                       f'{top * k / 4:.3g}</text>')
        for i, l in enumerate(LOADS):
            x = x0 + PW * i / (len(LOADS) - 1)
            svg.append(f'<text x="{x:.1f}" y="{y0 + PH + 16}" text-anchor="middle">load {l}'
                       '</text>')
        for p in shown:
            pts = " ".join(f"{x0 + PW * i / (len(LOADS) - 1):.1f},"
                           f"{y0 + PH - PH * min(mean(m, l, p, key) / top, 1.05):.1f}"
                           for i, l in enumerate(LOADS))
            dash = ' stroke-dasharray="6,3"' if p == "paddock" else ""
            svg.append(f'<polyline fill="none" stroke="{COLORS[p]}" stroke-width="2"{dash} '
                       f'points="{pts}"/>')
for i, p in enumerate(POLS):
    svg.append(f'<text x="{80 + i * 150}" y="{H - 12}" fill="{COLORS[p]}">&#9632; {p}</text>')
svg.append("</svg>")
with open(OUT, "w") as f:
    f.write("\n".join(svg) + "\n")
