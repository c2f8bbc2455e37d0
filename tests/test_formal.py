"""The fast subset of `make formal`: the flow proves a block, and groups proved by
induction (their mutations in tests/test_formal_mutations.py: pytest-xdist hands a
worker a file at a time, so the two halves run side by side)."""

import os
import re
import signal
import threading
import time
from dataclasses import replace
from functools import partial
from pathlib import Path
from unittest import mock

import pytest
from amaranth.asserts import AnyConst
from amaranth.hdl import Assert, Assume, Module, Signal

from formal import props, runner
from formal.props import A_CYCLE_LATE, prop
from formal.proofs import PROOFS
from formal.runner import Proof, run_proof
from formal_cases import check_proved


@pytest.mark.parametrize("group, depth, properties", [
    ("burst_splitter_w8", None, 12),
    ("command_intake", None, 8),
    # The address generator hands out at most 3 rows of a copy from its abort on.
    ("drain_addrgen_copy_ubuf_to_gm", None, 8),
    # Each row taken goes out on both branches once, in order, as the fork maps it.
    ("row_fork", None, 35),
    # MTE2's completion path gives command i's Completion as its i-th, once.
    ("mte2_completions", None, 15),
    # The pipe's in-flight queue, completed count and error record, at its limit of 16.
    ("pipe_in_flight", None, 40),
    # The pipe controller's side (stand-ins for its checker and address generator).
    ("pipe_controller_mte2", None, 18),
    # What the pipe controller's proof assumes of its checker, of MTE2's real checker
    # (its induction closes at 1; the group's base case of 8 is for its mutations).
    ("checker_contract_mte2", 1, 12),
    # MTE2's address generator's rows are the walk of each copy's loop nest, `last` on
    # its final row (its induction closes at 1; the group's base case of 4 is for its
    # mutations).
    ("addrgen_nest_last_copy_gm_to_ubuf", 1, 13),
    # The engine's command path, following UB->UB's pipe (stand-ins for its checkers,
    # address generators and datapaths).
    ("engine_contract_v_w8", None, 29),
    # The AXI4 master properties at W = 8, 2 outstanding bursts.
    ("axi4_master_read_w8", None, 40),
    ("axi4_master_write_w8", None, 40),
    # Each of the aligner's rotator stages at W = 128 turns every lane by its amount bits.
    ("aligner_rotator_w128", None, 3),
    # At 8 bits a lane the aligner is eight copies of itself at 1 bit a lane. (The byte
    # contract's own proof, aligner_any_byte_w8, about 5 minutes, is make formal's.)
    ("aligner_bit_slices_w16", None, 70),
])
def test_proved_by_induction(tmp_path, group, depth, properties):
    """The group's properties hold for every depth."""
    check_proved(tmp_path, group, depth, properties)


@pytest.mark.parametrize("solver", ["yices", "bitwuzla"])
def test_counter_proved_by_induction_and_broken_one_fails(tmp_path, solver):
    """The flow itself, with each solver: k-induction closes on a true invariant, and a
    false one fails with its own name, not a cell number, and its trace."""
    def counter(limit):
        def build(mutation):
            m = Module()
            count = Signal(4)
            m.d.sync += count.eq(count + 1)
            with m.If(count == 9):
                m.d.sync += count.eq(0)
            prop(m, "count_below_limit", count < limit)
            return m
        return build
    proved = run_proof(Proof("counter", counter(10), "prove", 4, solver=solver),
                       root=tmp_path)
    assert proved.status == "proved" and proved.properties == 1
    failed = run_proof(Proof("counter_bad", counter(9), "prove", 12, solver=solver),
                       root=tmp_path)
    assert failed.status == "failed"
    assert [name for name, _ in failed.failures] == ["count_below_limit"]
    assert f"smtbmc --unroll --nopresat {solver}" in failed.log
    # The counterexample, from the solver's values: the count from reset up to 9.
    trace = Path(failed.failures[0][1]).read_text()
    code = re.search(r"\$var wire 4 (\S+) count \$end", trace)[1]
    counts = re.findall(rf"^b([01]+) {re.escape(code)}$", trace, re.M)
    assert [int(count, 2) for count in counts] == list(range(10))


def test_unclosed_induction_names_the_property_it_stops_at(tmp_path):
    """A true property that no short induction closes is reported unclosed, with the
    name of the property the induction stops at and its trace: two counters in step, and
    from an unreachable state where they differ a run of steps that pass but the last."""
    def build(mutation):
        m = Module()
        count, twin = Signal(4), Signal(4)
        m.d.sync += [count.eq(count + 1), twin.eq(twin + 1)]
        prop(m, "twins_apart_only_off_zero", (count == twin) | (count != 0))
        return m
    result = run_proof(Proof("unclosed", build, "prove", 4), root=tmp_path)
    assert result.status == "unclosed" and not result.failures
    name, trace = result.induction_stop
    assert name == "twins_apart_only_off_zero" and Path(trace).is_file()


def _swapped_pair(mutation, inverted=False):
    """Two registers that swap on every edge, both 0 from reset: that either is 0 is no
    invariant alone, but is, given the other on the cycle before. `inverted`: the first
    takes the second inverted, so both claims are false."""
    m = Module()
    first, second = Signal(), Signal()
    m.d.sync += [first.eq(~second if inverted else second), second.eq(first)]
    props.prop(m, "first_zero", first == 0)
    props.prop(m, "second_zero", second == 0)
    return m


def _toggling_twice(mutation):
    """A register that toggles on every edge, and the false claim, twice, that it stays 0."""
    m = Module()
    toggle = Signal()
    m.d.sync += toggle.eq(~toggle)
    props.prop(m, "toggle_zero_once", toggle == 0)
    props.prop(m, "toggle_zero_twice", toggle == 0)
    return m


def _assumed_on_the_cycle_checked(m, name, test):
    """A broken split: each property assumed on the very cycle it is checked."""
    m.d.comb += [Assert(test, name), Assume(test, name + A_CYCLE_LATE)]


def test_split_proof_takes_the_other_parts_up_to_the_cycle_before(tmp_path):
    """Proof.split: each part's induction has the other parts' properties up to the
    cycle before, and not on the cycle it checks, so two false claims do not prove each
    other; with the broken split that assumes them on that cycle, they do."""
    def split(name, build):
        return Proof(name, build, "prove", 1, split=lambda prop_name: prop_name)
    pair = run_proof(split("swapped_pair", _swapped_pair), root=tmp_path)
    assert pair.status == "proved" and pair.parts == 2 and pair.properties == 2
    twice = run_proof(split("toggling", _toggling_twice), root=tmp_path)
    assert twice.status != "proved"
    with mock.patch.object(props, "prop", _assumed_on_the_cycle_checked):
        broken = run_proof(split("toggling_broken", _toggling_twice), root=tmp_path)
    assert broken.status == "proved"


def test_resume_takes_only_the_parts_proved_on_the_same_harness(tmp_path):
    """`resume` takes a part an earlier run proved, with any solver, and only on the
    same harness and script: the pair's false twin, its parts named alike, is run
    again, and not proved."""
    proof = Proof("pair", _swapped_pair, "prove", 1, split=lambda prop_name: prop_name)
    first = run_proof(proof, root=tmp_path, resume=True)
    assert first.status == "proved" and first.reused == 0
    again = run_proof(proof, root=tmp_path, resume=True)
    assert again.status == "proved" and (again.parts, again.reused) == (2, 2)
    # A part's proof does not depend on the solver that found it; it does on its depth.
    other_solver = run_proof(replace(proof, solver="bitwuzla"), root=tmp_path, resume=True)
    assert other_solver.status == "proved" and other_solver.reused == 2
    deeper = run_proof(replace(proof, depth=2), root=tmp_path, resume=True)
    assert deeper.status == "proved" and deeper.reused == 0
    twin = replace(proof, build=partial(_swapped_pair, inverted=True))
    twin = run_proof(twin, root=tmp_path, resume=True)
    assert twin.status != "proved" and twin.reused == 0
    assert run_proof(proof, root=tmp_path).reused == 0


def test_a_part_stops_if_a_check_it_leaves_out_is_not_in_the_prepared_design(tmp_path):
    """The parts run on the harness prepared once: each check a part leaves out must be
    in the prepared design, as named in the harness, or the part is an error, not a
    proof of fewer properties than it names."""
    parts = runner._parts

    def with_a_check_missing(cells, part_of):
        return {part: [*removed, "999999"] for part, removed in parts(cells, part_of).items()}
    proof = Proof("pair", _swapped_pair, "prove", 1, split=lambda prop_name: prop_name)
    with mock.patch.object(runner, "_parts", with_a_check_missing):
        result = run_proof(proof, root=tmp_path)
    assert result.status == "error" and "Assertion failed: selection" in result.log


def _processes_under(root):
    """The processes whose working directory is under `root`: {pid: command name}."""
    found = {}
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and (proc / "cwd").resolve().is_relative_to(root):
                found[int(proc.name)] = (proc / "comm").read_text().strip()
        except OSError:
            pass
    return found


def test_a_proof_past_its_limit_stops_its_solvers(tmp_path):
    """A proof that reaches TIMEOUT_S is reported so, and leaves no process behind: sby
    starts its solvers in process groups of their own, which a kill of sby alone would
    leave running, deep in a query that prints nothing (here that multiplication is
    associative, far beyond a solver's reach at 24 bits)."""
    def endless(mutation):
        m = Module()
        a, b, c = (AnyConst(24) for _ in range(3))
        prop(m, "multiplication_associative", (a * b) * c == a * (b * c))
        return m
    root = tmp_path.resolve()
    seen, running = {}, threading.Event()
    running.set()

    def watch():
        while running.is_set():
            seen.update(_processes_under(root))
            time.sleep(0.2)
    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        with mock.patch.object(runner, "TIMEOUT_S", 15):
            result = run_proof(Proof("endless", endless, "bmc", 1), root=root)
        deadline = time.monotonic() + 10
        while _processes_under(root) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = _processes_under(root)
    finally:
        running.clear()
        watcher.join()
        for pid in _processes_under(root):
            os.kill(pid, signal.SIGKILL)
    assert result.status == "error" and result.log.startswith("timed out after 15 s")
    assert "yices-smt2" in seen.values(), "no solver had started: the limit is too short"
    assert not left


def test_every_group_has_a_mutation():
    """Every group has mutations of its own, at its W."""
    assert all(proof.mutations for proof in PROOFS)
    assert all(proof.mode == "prove" or proof.why_bmc for proof in PROOFS)
