#!/usr/bin/env python3
"""Reads a run's latency.hlog with HdrHistogram's Python implementation (the `hdrhistogram`
package on PyPI, an implementation independent of the harness's Rust one) and checks it
against the run's summary.json.

Usage: scripts/check-hlog.py RESULTS_DIR

Checks, for every metric (tag) of the log:
- every interval line decodes (the reader skips lines it cannot decode, so lines are counted);
- for the metrics timed from a job's intended enqueue time (enqueue, schedule_lag,
  queue_wait, end_to_end), the merged intervals hold exactly as many values as summary.json's phases together
  (`phases[].latency_ms.<metric>.count`, drain included; the log starts with the load, so
  prefilled jobs finished before it are missing, and with a prefill the count is bounded);
- where the unmeasured phases hold no values of the metric, the merged intervals' p50, p99 and
  max agree with summary.json's `latency_ms.<metric>` to within the histogram's precision.
Exits 0 and prints one line per metric when all hold; exits 1 naming the first difference.
"""
import json
import math
import os
import sys

try:
    from hdrh.histogram import HdrHistogram
    from hdrh.log import HistogramLogReader
except ImportError:
    sys.exit("check-hlog: the Python package `hdrhistogram` is missing (pip install hdrhistogram)")


# Timed from a job's intended enqueue time: each value belongs to the phase that scheduled the
# job, so the phases partition them. `claim` and `handler` are timed by when they ran, and a
# claim's second and its phase window need not agree at the edges, so they are only decoded.
FROM_INTENDED_TIME = {"enqueue", "schedule_lag", "queue_wait", "end_to_end"}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[3])
    root = sys.argv[1]
    log_path = os.path.join(root, "latency.hlog")
    with open(os.path.join(root, "summary.json"), encoding="utf-8") as f:
        summary = json.load(f)
    with open(log_path, encoding="utf-8") as f:
        interval_lines = [l for l in f if l.startswith("Tag=")]

    reader = HistogramLogReader(log_path, HdrHistogram(1, 3_600_000_000, 3))
    merged, decoded = {}, 0
    while True:
        h = reader.get_next_interval_histogram()
        if h is None:
            break
        decoded += 1
        tag = h.get_tag()
        if tag not in merged:
            merged[tag] = HdrHistogram(1, 3_600_000_000, 3)
        merged[tag].add(h)
    if decoded != len(interval_lines):
        sys.exit(f"check-hlog: {log_path}: decoded {decoded} of {len(interval_lines)} intervals")
    if not merged:
        sys.exit(f"check-hlog: {log_path}: no intervals")

    for tag, h in sorted(merged.items()):
        count = h.get_total_count()
        if tag not in FROM_INTENDED_TIME:
            print(f"{tag}: {count} values decoded")
            continue
        in_phases = sum(p["latency_ms"][tag]["count"] for p in summary["phases"] if p["name"] != "prefill")
        prefill = sum(p["latency_ms"][tag]["count"] for p in summary["phases"] if p["name"] == "prefill")
        # Prefilled jobs finished before the load started are not in the log (it starts with
        # the load), so with a prefill the count can only be bounded.
        if not in_phases <= count <= in_phases + prefill:
            sys.exit(f"check-hlog: {tag}: the log holds {count} values, summary.json's phases {in_phases} (+ up to {prefill} prefilled)")
        line = f"{tag}: {count} values (= summary.json's phases)" if prefill == 0 else f"{tag}: {count} values ({in_phases} from the phases, {count - in_phases} of {prefill} prefilled)"
        want = summary["latency_ms"][tag]
        if want["count"] == count:
            for stat, got in (("p50", value_at_quantile(h, 0.50)), ("p99", value_at_quantile(h, 0.99)), ("max", h.get_max_value())):
                if not close(got / 1000, want[stat]):
                    sys.exit(f"check-hlog: {tag}.{stat}: the log says {got / 1000:.3f} ms, summary.json {want[stat]:.3f} ms")
            line += f", p50 {want['p50']:.2f} ms, p99 {want['p99']:.2f} ms, max {want['max']:.2f} ms (= summary.json)"
        print(line)


def value_at_quantile(h, quantile):
    """The value at `quantile` by the harness's rule: the ceil(quantile × count)-th value
    (at least the first), as its HdrHistogram (Rust) takes it. The Python package's
    get_value_at_percentile rounds that rank to the nearest instead, which picks the value
    one below where quantile × count falls below .5 (399 values: the 395th, not the 396th):
    a different sample, not a different decode. Walking the decoded counts ourselves keeps the
    check an independent reading of the log, of the same sample."""
    rank = max(math.ceil(quantile * h.get_total_count()), 1)
    seen = 0
    for item in h.get_recorded_iterator():
        seen += item.count_added_in_this_iter_step
        if seen >= rank:
            return h.get_highest_equivalent_value(item.value_iterated_to)
    return h.get_max_value()


def close(a, b):
    """Equal to within one HDR bucket at 3 significant digits (0.1%), with room for rounding."""
    return abs(a - b) <= max(0.01 * max(abs(a), abs(b)), 0.002)


if __name__ == "__main__":
    main()
