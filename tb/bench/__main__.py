"""`python -m tb.bench` (`make bench`): copy efficiency of the RTL engine under Verilator.

Builds the generated Verilog with `--max-outstanding N` (default 64) in
sim_build/bench/n<N>/ (tb/run.py's flow), runs the shape suite, the row-size sweep and
the streams (tb/bench/suite.py) at each GM latency in one simulation (tb/bench/sim.py),
and writes
bench.txt (the table printed here), bench.json (every raw number) and efficiency.png to
sim_build/bench/ (for another N, to sim_build/bench/n<N>/). Exits 1 if any program's memories
differ from the golden model's or the simulation fails; a MISS of the efficiency goal is
reported, not an error.
"""

import argparse
import json
import sys
import time
from collections import defaultdict
from dataclasses import dataclass

from model.isa import PROFILES
from model.parser import parse
from tb import run as tb_run
from tb.bench import metrics, suite

OUT = tb_run.BUILD / "bench"
WIDTH = 32
LATENCIES = (32, 200)
# AXI bursts in flight per direction in the benchmarked build: enough 4-beat bursts to
# cover L = 200 (about (L + 4) / 4 + 1). `make verilog`, `make sim` and the FPGA keep 8.
MAX_OUTSTANDING = 64
# Efficiency goals by GM latency: every shape, and the mean (None: no mean goal). A
# latency not listed takes the goals of the nearest one listed.
SHAPE_GOALS = {32: 0.93, 200: 0.96}
MEAN_GOALS = {32: 0.97, 200: None}


def goals(latency):
    """(shape goal, mean goal or None) at `latency`."""
    nearest = min(SHAPE_GOALS, key=lambda listed: abs(listed - latency))
    return SHAPE_GOALS[nearest], MEAN_GOALS[nearest]


def goals_text(latencies):
    parts = []
    for lat in latencies:
        shape, mean = goals(lat)
        parts.append(f"at L = {lat} every shape >= {shape:.2f}"
                     + (f" and the mean >= {mean:.2f}" if mean is not None else ""))
    return "; ".join(parts)
# Streams: bytes per cycle, as shares of W, that a stream of copies of a size should reach
# (at every latency); CONCURRENT_GOAL for both directions at once, aggregate.
STREAM_GOALS = {64: 0.9, 32: 0.8}
CONCURRENT_GOALS = {4096: 1.9}

HEADER = """\
MTE DMA copy efficiency: the RTL (Verilator), profile {profile}, W = {width} bytes,
max_outstanding = {max_outstanding} AXI bursts in flight per direction.
GM: a pipelined memory of fixed latency L, the first R beat L cycles after its AR
handshake and the B response L cycles after a burst's last W beat, any number of bursts
outstanding; no backpressure on any channel.
cycles: one copy command, from the clock edge that takes its last command word to the
edge after which its pipe's completed count has gone up.
ideal = L + max(read beats, write beats), a side's beats being the W-byte words each row
touches there (UB->UB: no L). efficiency = ideal / cycles.
Goals: {goals}."""


@dataclass
class Result:
    """A measured program with its arithmetic."""
    name: str
    direction: str
    latency: int
    size: int
    read_beats: int
    write_beats: int
    ideal: int
    cycles: int
    bus: dict
    failures: list

    @property
    def efficiency(self):
        """0 for a copy that never completed (its failure is reported)."""
        return metrics.efficiency(self.ideal, self.cycles) if self.cycles else 0.0

    @property
    def throughput(self):
        return self.size / self.cycles if self.cycles else 0.0


@dataclass
class Stream:
    """A measured stream: `copies` one-row copies of `size` bytes back to back, on one
    pipe or interleaved on two (`direction` "GM->UB+UB->GM").

    cycles: from the first copy's acceptance to the last completion. steady: from a
    pipe's first completion to its last, the longer of the two pipes'. bytes_per_cycle,
    the stream's rate once it flows, with no start-up latency in it: the bytes of every
    copy but each pipe's first, over `steady`."""
    direction: str
    latency: int
    size: int
    copies: int
    cycles: int
    steady: int

    @property
    def pipes(self):
        return self.direction.count("+") + 1

    @property
    def bytes_per_cycle(self):
        return (self.copies - self.pipes) * self.size / self.steady if self.steady else 0.0

    @property
    def total_bytes_per_cycle(self):
        """With the start-up: every byte over `cycles`."""
        return self.copies * self.size / self.cycles if self.cycles else 0.0

    def goal(self):
        """The goal in bytes per cycle, or None."""
        goals = CONCURRENT_GOALS if "+" in self.direction else STREAM_GOALS
        return goals[self.size] * WIDTH if self.size in goals else None

    def as_dict(self):
        return dict(vars(self), bytes_per_cycle=self.bytes_per_cycle,
                    total_bytes_per_cycle=self.total_bytes_per_cycle)


def evaluate_streams(records):
    return [Stream(r["direction"], r["latency"], r["size"], r["copies"], r["cycles"],
                   r["steady"]) for r in records]


def evaluate(records, cases):
    """Results of the simulation's records; `cases` maps a program's name to its BenchCase."""
    out = []
    for r in records:
        case = cases[r["name"]].case
        way, read, write = metrics.copy_beats(parse(case.text, case.bindings), WIDTH)
        out.append(Result(r["name"], way, r["latency"], r["size"], read, write,
                          metrics.ideal_cycles(way, r["latency"], read, write), r["cycles"],
                          r["bus"], r["failures"]))
    return out


def verdict(ok):
    return "PASS" if ok else "MISS"


def shape_table(shapes, latencies):
    by_name = defaultdict(dict)
    for r in shapes:
        by_name[r.name][r.latency] = r
    groups = f"{'':<40} {'beats':^11}" + "".join(f" | {'L = ' + str(lat):^25}"
                                                  for lat in latencies)
    head = f"{'shape':<40} {'read':>5} {'write':>5}" + \
        f" | {'ideal':>6} {'cycles':>6} {'eff':>5} {'':4}" * len(latencies)
    lines = [groups.rstrip(), head.rstrip(), "-" * len(head)]
    for name, row in by_name.items():
        first = row[latencies[0]]
        line = f"{name:<40} {first.read_beats:>5} {first.write_beats:>5}"
        for lat in latencies:
            r = row[lat]
            line += (f" | {r.ideal:>6} {r.cycles:>6} {r.efficiency:5.3f} "
                     f"{verdict(r.efficiency >= goals(lat)[0])}")
        lines.append(line)
    line = f"{'mean':<40} {'':>5} {'':>5}"
    for lat in latencies:
        mean = mean_efficiency(shapes, lat)
        goal = goals(lat)[1]
        mark = "" if goal is None else verdict(mean >= goal)
        line += f" | {'':>6} {'':>6} {mean:5.3f} {mark}"
    lines.append(line)
    return lines


def mean_efficiency(shapes, latency):
    values = [r.efficiency for r in shapes if r.latency == latency]
    return sum(values) / len(values)


def _at(t):
    return "-" if t is None else str(t)


def timeline_table(shapes):
    """Where the cycles go: the bus events of each copy, counted from its acceptance."""
    head = (f"{'shape':<40} {'L':>4} {'bursts':>6} {'1st addr':>8} {'1st data':>8} "
            f"{'last data':>9} {'done':>6} {'data span':>9} {'beats':>5}")
    lines = [head, "-" * len(head)]
    for r in shapes:
        bus = r.bus
        span = "-" if bus["first_data"] is None else bus["last_data"] - bus["first_data"] + 1
        beats = r.read_beats if r.direction == "GM->UB" else r.write_beats
        lines.append(f"{r.name:<40} {r.latency:>4} {bus['bursts']:>6} "
                     f"{_at(bus['first_address']):>8} {_at(bus['first_data']):>8} "
                     f"{_at(bus['last_data']):>9} {r.cycles:>6} {span:>9} {beats:>5}")
    return lines


def sweep_curves(sweep):
    """{(direction, latency): [Result by size]}."""
    curves = defaultdict(list)
    for r in sorted(sweep, key=lambda r: r.size):
        curves[(r.direction, r.latency)].append(r)
    return curves


def half_peaks(curves):
    out = []
    for (way, latency), results in curves.items():
        found = metrics.half_peak([r.size for r in results], [r.throughput for r in results])
        out.append({"direction": way, "latency": latency, **found})
    return out


def sweep_table(curves, peaks):
    keys = list(curves)
    head = f"{'row bytes':>9}" + "".join(f" {way + ' L=' + str(lat):>13}" for way, lat in keys)
    lines = [head, "-" * len(head)]
    for index, first in enumerate(curves[keys[0]]):
        lines.append(f"{first.size:>9}" + "".join(
            f" {curves[k][index].throughput:13.2f}" for k in keys))
    lines += ["", f"{'direction':<9} {'L':>4} {'peak B/cycle':>12} {'of W':>5} "
              f"{'K (sweep point)':>15} {'K (interpolated)':>16}"]
    for p in peaks:
        lines.append(f"{p['direction']:<9} {p['latency']:>4} {p['peak']:12.2f} "
                     f"{p['peak'] / WIDTH:5.2f} {p['point']:>15} {p['interpolated']:16.0f}")
    return lines


def report(shapes, curves, peaks, profile, latencies, max_outstanding, streams=()):
    lines = [HEADER.format(profile=profile, width=WIDTH, max_outstanding=max_outstanding,
                           goals=goals_text(latencies)), ""]
    lines += shape_table(shapes, latencies)
    lines += ["", "Bus timeline of each copy (cycles from its acceptance; data span = last - "
              "first data beat + 1, beats = GM-side beats):"]
    lines += timeline_table(shapes)
    if curves:
        lines += ["", "Row-size sweep: one aligned row per copy, throughput = bytes / cycles "
                  f"(bytes per cycle; the bus moves at most W = {WIDTH}).",
                  "Half-peak size K: peak = the largest throughput of the sweep; K = the "
                  "smallest swept size reaching peak / 2,",
                  "and where the curve crosses peak / 2, interpolated linearly in log2(size) "
                  "between the sweep points around it.", ""]
        lines += sweep_table(curves, peaks)
    if streams:
        lines += ["", f"Streams: {suite.STREAM_COPIES} back-to-back one-row copies per "
                  "direction on one pipe (both: interleaved, one of each in turn).",
                  "steady: bytes per cycle once the stream flows, every copy but each "
                  "pipe's first over the cycles from a pipe's",
                  "first completion to its last (both: aggregate, over the longer pipe's); "
                  "total: every byte over cycles, from the",
                  "first copy's acceptance to the last completion. " + stream_goals_text(),
                  ""]
        lines += stream_table(streams)
    return "\n".join(lines)


def stream_table(streams):
    """Bytes per cycle of each stream by size, a column per (direction, latency)."""
    keys = list(dict.fromkeys((s.direction, s.latency) for s in streams))
    by_key = {(s.direction, s.latency, s.size): s for s in streams}
    sizes = sorted({s.size for s in streams})
    head = f"{'row bytes':>9}" + "".join(f" | {way + ' L=' + str(lat):^25}"
                                        for way, lat in keys)
    sub = f"{'':>9}" + f" | {'steady':>7} {'':4} {'total':>6} {'cycles':>6}" * len(keys)
    lines = [head, sub, "-" * len(head)]
    for size in sizes:
        line = f"{size:>9}"
        for way, lat in keys:
            s = by_key[(way, lat, size)]
            goal = s.goal()
            mark = "" if goal is None else verdict(s.bytes_per_cycle >= goal)
            line += (f" | {s.bytes_per_cycle:7.2f} {mark:4} {s.total_bytes_per_cycle:6.2f} "
                     f"{s.cycles:6}")
        lines.append(line)
    return lines


def stream_goals_text():
    singles = ", ".join(f">= {share} W for {size} B copies"
                        for size, share in STREAM_GOALS.items())
    both = ", ".join(f">= {share} W aggregate on {size} B copies"
                     for size, share in CONCURRENT_GOALS.items())
    return f"Goals (steady): {singles}; both directions at once {both}."


def plot(shapes, curves, peaks, latencies, streams, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (bars, curve, stream_axes) = plt.subplots(3, 1, figsize=(13, 16))
    names = list(dict.fromkeys(r.name for r in shapes))
    width = 0.8 / len(latencies)
    for i, lat in enumerate(latencies):
        values = {r.name: r.efficiency for r in shapes if r.latency == lat}
        xs = [n + (i - (len(latencies) - 1) / 2) * width for n in range(len(names))]
        bars.bar(xs, [values[name] for name in names], width,
                 label=f"L = {lat} (mean {mean_efficiency(shapes, lat):.2f})")
    for i, lat in enumerate(latencies):
        goal = goals(lat)[0]
        bars.axhline(goal, color=f"C{i}", linestyle="--", label=f"goal at L = {lat}: {goal:.2f}")
    bars.set_xticks(range(len(names)), names, rotation=35, ha="right", fontsize=8)
    bars.set_ylabel("efficiency = ideal / cycles")
    bars.set_ylim(0, 1.05)
    bars.set_title("Shape suite: efficiency per copy")
    bars.legend(fontsize=8)
    colors = {way: f"C{i}" for i, way in enumerate(metrics.DIRECTIONS.values())}
    styles = {lat: ("-", "--", ":", "-.")[i % 4] for i, lat in enumerate(latencies)}
    for (way, lat), results in curves.items():
        if way not in metrics.GM_DIRECTIONS and lat != latencies[0]:
            continue                    # the same curve: UB->UB does not wait for GM
        label = f"{way} L = {lat}" if way in metrics.GM_DIRECTIONS else way
        curve.plot([r.size for r in results], [r.throughput for r in results], marker="o",
                   markersize=3, color=colors[way], linestyle=styles[lat], label=label)
        peak = next(p for p in peaks if (p["direction"], p["latency"]) == (way, lat))
        curve.plot([peak["interpolated"]], [peak["peak"] / 2], marker="x", markersize=10,
                   color=colors[way])
    curve.axhline(WIDTH, color="gray", linestyle=":", label=f"W = {WIDTH} B/cycle")
    curve.set_xscale("log", base=2)
    curve.set_xlabel("row bytes (single-row copy)")
    curve.set_ylabel("bytes / cycle")
    curve.set_title("Row-size sweep (x: half-peak size K, interpolated)")
    curve.legend(fontsize=8, ncol=2)
    plot_streams(stream_axes, streams, latencies)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_streams(axes, streams, latencies):
    """Bytes per cycle of the streams against their copies' size."""
    if not streams:
        axes.set_axis_off()          # --no-streams
        return
    styles = {lat: ("-", "--", ":", "-.")[i % 4] for i, lat in enumerate(latencies)}
    keys = list(dict.fromkeys((s.direction, s.latency) for s in streams))
    colors = {way: f"C{i}" for i, way in enumerate(dict.fromkeys(k[0] for k in keys))}
    for way, lat in keys:
        points = sorted((s.size, s.bytes_per_cycle) for s in streams
                        if (s.direction, s.latency) == (way, lat))
        axes.plot(*zip(*points), marker="o", markersize=3, color=colors[way],
                  linestyle=styles[lat], label=f"{way} L = {lat}")
    for share in (1, 2):
        axes.axhline(share * WIDTH, color="gray", linestyle=":")
    axes.set_xscale("log", base=2)
    axes.set_xlabel(f"bytes per copy (one row each, {suite.STREAM_COPIES} copies per direction)")
    axes.set_ylabel("bytes / cycle (aggregate)")
    axes.set_title(f"Streams of back-to-back copies (gray: W = {WIDTH} and 2 W B/cycle)")
    axes.legend(fontsize=8, ncol=2)


def argument_parser():
    parser = argparse.ArgumentParser(prog="python -m tb.bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", choices=sorted(PROFILES), default="a5")
    parser.add_argument("--latency", type=int, action="append",
                        help=f"GM latency in cycles (repeatable; default {LATENCIES})")
    parser.add_argument("--max-outstanding", type=int, default=MAX_OUTSTANDING,
                        help=f"AXI bursts in flight per direction (default {MAX_OUTSTANDING})")
    parser.add_argument("--no-sweep", dest="sweep", action="store_false",
                        help="no row-size sweep")
    parser.add_argument("--no-streams", dest="streams", action="store_false",
                        help="no streams")
    return parser


def main(argv=None):
    args = argument_parser().parse_args(argv)
    latencies = args.latency or list(LATENCIES)
    started = time.monotonic()
    # One build per max_outstanding, so switching between them does not rebuild; the
    # outputs of a build other than the default's go next to it.
    build_root = OUT / f"n{args.max_outstanding}"
    out = OUT if args.max_outstanding == MAX_OUTSTANDING else build_root
    runner, build_dir = tb_run.build(
        "verilator", args.profile, WIDTH, waves=False, root=build_root,
        gen_args=["--max-outstanding", str(args.max_outstanding)])
    env = {"MTE_PROFILE": args.profile, "MTE_BENCH_LATENCIES": ",".join(map(str, latencies)),
           "MTE_BENCH_SWEEP": "1" if args.sweep else "0",
           "MTE_BENCH_STREAMS": "1" if args.streams else "0", "COCOTB_LOG_LEVEL": "WARNING",
           "PYTHONWARNINGS": "ignore::DeprecationWarning"}
    simulated = tb_run.run(runner, build_dir, ["bench"], env, waves=False,
                           log_file=out / "sim.log", test_module="tb.bench.sim")
    records, failed = simulated.records, simulated.failed
    if not records:
        print(f"the simulation reported nothing (see {out / 'sim.log'})")
        return 1
    cases = {c.name: c for c in suite.shapes(args.profile) + suite.sweep(args.profile)}
    kinds = {c.name: c.kind for c in suite.streams(args.profile)}
    results = evaluate([r for r in records if r["name"] in cases], cases)
    streams = evaluate_streams([r for r in records if kinds.get(r["name"]) == "stream"])
    concurrent = evaluate_streams([r for r in records
                                   if kinds.get(r["name"]) == "concurrent"])
    shapes = [r for r in results if not r.size]
    curves = sweep_curves([r for r in results if r.size])
    peaks = half_peaks(curves)
    text = report(shapes, curves, peaks, args.profile, latencies, args.max_outstanding,
                  streams + concurrent)
    print(text)
    (out / "bench.txt").write_text(text + "\n")
    raw = {"profile": args.profile, "width": WIDTH, "max_outstanding": args.max_outstanding,
           "latencies": latencies,
           "goals": {str(lat): dict(zip(("shape", "mean"), goals(lat))) for lat in latencies},
           "means": {str(lat): mean_efficiency(shapes, lat) for lat in latencies},
           "results": [dict(vars(r), efficiency=r.efficiency) for r in results],
           "half_peak": peaks,
           "stream_goals": {"single": STREAM_GOALS, "concurrent": CONCURRENT_GOALS},
           "streams": [s.as_dict() for s in streams],
           "concurrent": [s.as_dict() for s in concurrent]}
    (out / "bench.json").write_text(json.dumps(raw, indent=1) + "\n")
    if curves:
        plot(shapes, curves, peaks, latencies, streams + concurrent, out / "efficiency.png")
    mismatches = [f for r in records for f in r["failures"]]
    for failure in mismatches:
        print(f"MISMATCH {failure}")
    print(f"outputs: {out / 'bench.txt'}, {out / 'bench.json'}, {out / 'efficiency.png'}; "
          f"{time.monotonic() - started:.0f} s; "
          f"{'FAILED: ' + ', '.join(failed) if failed else 'RTL agrees with the model'}")
    return 1 if failed or mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
