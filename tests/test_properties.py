"""Random legal programs: the model leaves exactly the memories the byte-by-byte reference
leaves (whole UB, every GM region). With part of GM unmapped, both stop at the same
bus error, at the same address, with the same rows done."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness import assert_same_run, run_both, run_scenario
from strategies import COPY_MNEMONICS, scenarios

SETTINGS = settings(max_examples=120, deadline=None)


@pytest.mark.parametrize("mnemonic", COPY_MNEMONICS)
@SETTINGS
@given(data=st.data())
def test_each_copy_matches_the_reference(mnemonic, data):
    scenario = data.draw(scenarios(ops=(mnemonic,)))
    assert_same_run(run_scenario(scenario), scenario.regions)


@SETTINGS
@given(scenarios(max_copies=4))
def test_mixed_programs_match_the_reference(scenario):
    assert_same_run(run_scenario(scenario), scenario.regions)


@settings(max_examples=20, deadline=None)
@given(scenarios(gm_align=4096))
def test_page_aligned_gm_windows(scenario):
    for base, data in scenario.regions:
        assert base % 4096 == 0 and len(data) % 4096 == 0
    assert_same_run(run_scenario(scenario), scenario.regions)


@SETTINGS
@given(scenarios(ops=("copy_gm_to_ubuf", "copy_ubuf_to_gm")), st.data())
def test_unmapped_gm_gives_the_same_bus_error(scenario, data):
    """Drop a GM region or cut it short: same error, same address, same rows moved."""
    victim = data.draw(st.integers(0, len(scenario.regions) - 1))
    base, contents = scenario.regions[victim]
    keep = data.draw(st.integers(0, len(contents) - 1))
    regions = scenario.regions[:victim] + scenario.regions[victim + 1:]
    if keep:
        regions.append((base, contents[:keep]))
    outcome = run_both(scenario.profile, regions, scenario.instrs, scenario.ub)
    assert_same_run(outcome, regions)
