#!/usr/bin/env python3
"""Runs `paddock-sim recurring --engine slice` (the token-slice engine) at three loads x three seeds (issue 13, "It must show" 3; Morpheus
§9), prints the Markdown tables of docs/recurring-sim.md and writes docs/img/recurring.svg.
Python 3 standard library only.

usage: python3 docs/img/recurring.py PATH/TO/paddock-sim [OUT.svg]   (run from the repository root)
"""
import json
import subprocess
import sys

SIM = sys.argv[1] if len(sys.argv) > 1 else "paddock-sim"
OUT = sys.argv[2] if len(sys.argv) > 2 else "docs/img/recurring.svg"
LOADS = [0.7, 0.9, 1.0]
SEEDS = [1, 2, 3]
POLS = ["none", "greedy", "lowcost", "lowcost_reprov"]
COLORS = {"none": "#7f7f7f", "greedy": "#d62728", "lowcost": "#1f77b4",
          "lowcost_reprov": "#2ca02c"}


def run(load, seed, extra=()):
    out = subprocess.run([SIM, "recurring", "--engine", "slice", "--load", str(load), "--seed",
                          str(seed), "--json", *extra], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


res = {(l, s): run(l, s) for l in LOADS for s in SEEDS}
noadm = {s: run(0.9, s, ("--admission", "off")) for s in SEEDS}


def mean(l, p, key, r=None):
    r = r or res
    return sum(r[(l, s)]["policies"][p][key] for s in SEEDS) / len(SEEDS)


r0 = res[(LOADS[0], SEEDS[0])]
print(f"\n### {r0['jobs']} periodic jobs, {r0['capacity']} tokens, steps of {r0['step_s']:.0f} s, "
      f"{r0['warmup_steps']} steps of warm-up, {r0['eval_steps']} evaluated; mean of seeds "
      f"{', '.join(map(str, SEEDS))}\n")
print("| load | policy | SLO violations | peak tokens | periodic grant peak | ad-hoc p50 (s) "
      "| ad-hoc p90 (s) | ad-hoc deadline missed | utilization | reserved used | reprov steps |")
print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for l in LOADS:
    for p in POLS:
        print(f"| {l} | {p} | {mean(l, p, 'slo_violation_fraction'):.3f} "
              f"| {mean(l, p, 'peak_tokens'):.1f} | {mean(l, p, 'periodic_grant_peak'):.1f} "
              f"| {mean(l, p, 'adhoc_latency_p50_s'):.0f} "
              f"| {mean(l, p, 'adhoc_latency_p90_s'):.0f} "
              f"| {mean(l, p, 'adhoc_deadline_missed_fraction'):.3f} "
              f"| {mean(l, p, 'utilization'):.3f} | {mean(l, p, 'reserved_used_fraction'):.3f} "
              f"| {mean(l, p, 'reprov_steps'):.0f} |")
print("\nPer seed, SLO violation fraction / peak tokens:\n")
print("| load | seed | offered (periodic + ad-hoc) | runs | " + " | ".join(POLS) + " |")
print("|---:|---:|---:|---:|" + "---:|" * len(POLS))
for l in LOADS:
    for s in SEEDS:
        d = res[(l, s)]
        pol = d["policies"]
        cells = [f"{pol[p]['slo_violation_fraction']:.3f} / {pol[p]['peak_tokens']:.1f}"
                 for p in POLS]
        print(f"| {l} | {s} | {d['periodic_load']:.2f} + {d['adhoc_load']:.2f} "
              f"| {pol['none']['runs']} | " + " | ".join(cells) + " |")
print("\nLoad 0.9 without admission (`--admission off`), SLO violation fraction per seed:\n")
print("| seed | " + " | ".join(POLS) + " |")
print("|---:|" + "---:|" * len(POLS))
for s in SEEDS:
    pol = noadm[s]["policies"]
    print(f"| {s} | " + " | ".join(f"{pol[p]['slo_violation_fraction']:.3f}" for p in POLS)
          + " |")

# The chart: two panels (SLO violations, peak tokens), x = load, one bar per policy (mean of
# the seeds), each seed a dot on its bar.
PW, PH = 380, 220
W, H = 2 * (PW + 110) + 40, 360
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
       'font-family="sans-serif" font-size="12">',
       '<rect width="100%" height="100%" fill="white"/>',
       '<text x="70" y="22" font-size="14">paddock-sim recurring: periodic reservations '
       f'(bars: mean of seeds {", ".join(map(str, SEEDS))}; dots: each seed)</text>']
panels = [("slo_violation_fraction", "periodic runs missing their deadline"),
          ("peak_tokens", "peak tokens (plan; none: granted to periodic runs)")]
for col, (key, title) in enumerate(panels):
    x0, y0 = 80 + col * (PW + 110), 60
    top = max(res[(l, s)]["policies"][p][key] for l in LOADS for s in SEEDS for p in POLS)
    top = top * 1.1 if top > 0 else 1
    svg.append(f'<text x="{x0}" y="{y0 - 8}">{title}</text>')
    for k in range(5):
        y = y0 + PH - PH * k / 4
        svg.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x0 + PW}" y2="{y:.1f}" stroke="#ddd"/>')
        svg.append(f'<text x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end">{top * k / 4:.3g}'
                   '</text>')
    gw = PW / len(LOADS)
    bw = gw * 0.8 / len(POLS)
    for i, l in enumerate(LOADS):
        gx = x0 + i * gw + gw * 0.1
        svg.append(f'<text x="{x0 + i * gw + gw / 2:.1f}" y="{y0 + PH + 16}" '
                   f'text-anchor="middle">load {l}</text>')
        for j, p in enumerate(POLS):
            v = mean(l, p, key)
            h = PH * v / top
            x = gx + j * bw
            svg.append(f'<rect x="{x:.1f}" y="{y0 + PH - h:.1f}" width="{bw - 2:.1f}" '
                       f'height="{h:.1f}" fill="{COLORS[p]}"/>')
            for s in SEEDS:
                sv = res[(l, s)]["policies"][p][key]
                svg.append(f'<circle cx="{x + (bw - 2) / 2:.1f}" '
                           f'cy="{y0 + PH - PH * sv / top:.1f}" r="2.5" fill="black"/>')
for i, p in enumerate(POLS):
    svg.append(f'<text x="{80 + i * 170}" y="{H - 20}" fill="{COLORS[p]}">&#9632; {p}</text>')
svg.append("</svg>")
with open(OUT, "w") as f:
    f.write("\n".join(svg) + "\n")
