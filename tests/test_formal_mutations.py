"""The fast subset of `make formal`, its mutations: each property group catches one of
its mutations, with the property's name and a counterexample VCD."""

import pytest

from formal_cases import check_mutation_caught


@pytest.mark.parametrize("group, mutation, expected", [
    # Each W burst's length is checked against its AW's, whichever goes first.
    ("axi4_master_write_w8", "wlast_on_first_beat",
     r"wlast_on_last_beat_only|awlen_matches_w_beats_sent"
     r"|address_fifo_entry_\d_is_its_w_bursts_length"),
    ("axi4_master_write_w8", "one_burst_too_many", "issuer_unfinished_within_max"),
    ("axi4_master_read_w8", "axsize_off_by_one", "ar_size_is_bus_width"),
    # An ID let out early shows in the FIFO's entries or on the bus, whichever first.
    ("axi4_master_read_w8", "no_id_fence",
     r"address_fifo_entry_\d_of_the_last_rows_sid|bursts_on_bus_of_the_last_rows_sid"),
    ("burst_splitter_w32", "burst_crosses_4k", "burst_within_4k_page"),
    ("pad_setup_w8", "right_fill_one_byte_long", "row_spots_holds_the_followed_row"),
    ("pad_stage_w8", "ub_cmd_last_on_every_rows_end", "ub_cmd_last_on_commands_final_word"),
    ("event_flags", "grant_invented",
     r"no_grant_without_a_counted_set|flag_counters_consistent"),
    ("command_intake", "command_lost_when_refused", "command_offered_with_its_last_word"),
    ("dispatcher", "entry_of_the_command_before",
     r"mte3_nth_given_is_the_nth_taken|mte3_(output|queue_slot_\d)_holds_its_command"),
    ("mte2_completions", "result_of_command_before", "completion_is_its_commands_in_order"),
    ("pipe_in_flight", "landed_index_one_entry_late",
     r"landed_index_is_its_copys|in_flight_queue_\w+"),
    ("pipe_controller_mte2", "set_end_counted_twice",
     "in_flight_told_of_each_end_once|completed_counts_each_command_taken_once"),
    ("drain_addrgen_copy_gm_to_ubuf", "abort_a_row_late",
     "rows_after_abort_at_most_bound|cut_copy_walked_row_is_its_last"),
    ("drain_to_gm_side_copy_ubuf_to_gm", "room_one_row_late",
     r"ready_only_with_room_everywhere|gm_rows_after_abort_at_most_bound"),
    ("addrgen_rows_numbered_copy_gm_to_ubuf", "last_a_row_early",
     r"row_only_of_a_copy_taken_and_not_ended|copies_unended_are_queued_or_walked"),
    ("aligner_any_byte_w8", "rotator_one_lane_off",
     r"aligner_rotator_0_holds_its_word|aligner_ring_entry_\d_holds_its_word"
     r"|dst_tracked_byte_arrives"),
    # The same with rows overlapping in the aligner, whose mutated harness has the
    # contract alone (no invariant), so the contract itself catches it.
    ("aligner_rows_overlapping_w8", "rotator_one_lane_off", "dst_tracked_byte_arrives"),
    # A lane's bits swapped, which the contract at 1 bit a lane cannot see.
    ("aligner_bit_slices_w16", "bits_swapped_in_each_lane", r"aligner_rot\d_agrees"),
    ("engine_contract_v_w8", "enters_the_next_pipe",
     r"v_completed_trails_accepted_by_the_commands_held"
     r"|dispatcher_queue_holds_the_v_commands_not_taken"),
])
def test_mutation_caught_with_name_and_trace(tmp_path, group, mutation, expected):
    check_mutation_caught(tmp_path, group, mutation, expected)
