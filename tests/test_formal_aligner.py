"""The fast formal subset's aligner part, a file of its own so that pytest-xdist
(`--dist loadfile`) runs it beside tests/test_formal.py: its proof is most of the
subset's time."""

import pytest

from formal_cases import check_mutation_caught, check_proved


@pytest.mark.parametrize("group, depth, properties", [
    # Every row's tracked byte at its destination lane: the invariant closes the
    # induction at 1, so a base case of 1 and one induction step prove it.
    ("aligner_any_byte_w8", None, 40),
    # Each of the aligner's rotator stages at W = 128 turns every lane by its amount bits.
    ("aligner_rotator_w128", None, 3),
    # At 8 bits a lane the aligner is eight copies of itself at 1 bit a lane.
    ("aligner_bit_slices_w16", None, 70),
])
def test_aligner_proved_by_induction(tmp_path, group, depth, properties):
    check_proved(tmp_path, group, depth, properties)


@pytest.mark.parametrize("group, mutation, expected", [
    ("aligner_any_byte_w8", "rotator_one_lane_off",
     r"aligner_rotator_0_holds_its_word|aligner_ring_entry_\d_holds_its_word"
     r"|dst_tracked_byte_arrives"),
    # The same with rows overlapping in the aligner, whose mutated harness has the
    # contract alone (no invariant), so the contract itself catches it.
    ("aligner_rows_overlapping_w8", "rotator_one_lane_off", "dst_tracked_byte_arrives"),
    # A lane's bits swapped, which the contract at 1 bit a lane cannot see.
    ("aligner_bit_slices_w16", "bits_swapped_in_each_lane", r"aligner_rot\d_agrees"),
])
def test_aligner_mutation_caught_with_name_and_trace(tmp_path, group, mutation, expected):
    check_mutation_caught(tmp_path, group, mutation, expected)
