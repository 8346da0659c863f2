#!/usr/bin/env python3
"""Plots of bench/results.json, run by `make bench` after the measurements (matplotlib, pinned in
scripts/bench.sh): docs/pictures/bench-cost-by-sessions.svg (what a refresh costs with 10k, 100k
and 1M sessions stored) and docs/pictures/bench-storm-latency.svg (a hand-out's latency while the
broker is idle and during a refresh storm)."""
import json, os, sys
import matplotlib
matplotlib.use("Agg")
matplotlib.rcParams["svg.hashsalt"] = "tokenbroker"   # the same figures give the same file
import matplotlib.pyplot as plt

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
results = json.load(open(os.path.join(root, "bench/results.json")))
out = os.path.join(root, "docs/pictures")


def mean(v):
    return sum(v) / len(v)


def cost_curve():
    series = [("refresh_cpu_ms_by_stored", "broker CPU per refresh"), ("refresh_pg_cpu_ms_by_stored", "PostgreSQL CPU per refresh"),
              ("write_notify_ms_by_stored", "answer written and announced"), ("lock_read_ms_by_stored", "locked re-read of the session")]
    fig, ax = plt.subplots(figsize=(7, 4))
    for key, label in series:
        if key not in results:
            continue
        points = sorted((int(n), mean(v)) for n, v in results[key].items())
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label)
    ax.set_xscale("log")
    ax.set_xlabel("sessions stored")
    ax.set_ylabel("ms (mean of the runs)")
    ax.set_ylim(bottom=0)
    ax.set_title("What a refresh costs as sessions grow")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "bench-cost-by-sessions.svg"), metadata={"Date": None})
    plt.close(fig)


def storm_latency():
    keys = [("handout_probe_idle_p50_ms", "handout_probe_idle_p99_ms", "idle"),
            ("handout_probe_storm_p50_ms", "handout_probe_storm_p99_ms", "during a refresh storm")]
    if not all(k in results for a, b, _ in keys for k in (a, b)):
        return
    fig, ax = plt.subplots(figsize=(6, 3.5))
    xs = range(len(keys))
    ax.bar([x - 0.2 for x in xs], [results[a] for a, _, _ in keys], width=0.4, label="p50")
    ax.bar([x + 0.2 for x in xs], [results[b] for _, b, _ in keys], width=0.4, label="p99")
    ax.set_xticks(list(xs), [label for _, _, label in keys])
    ax.set_ylabel("ms")
    ax.set_title("A cached hand-out's latency")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "bench-storm-latency.svg"), metadata={"Date": None})
    plt.close(fig)


cost_curve()
storm_latency()
print("bench/plot.py: docs/pictures/bench-*.svg written", file=sys.stderr)
