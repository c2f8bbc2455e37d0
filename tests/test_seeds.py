"""`python -m model.seeds` (`make sim`): every seed program runs and checks out."""

import pytest

from model import seeds


@pytest.mark.parametrize("example", seeds.EXAMPLES, ids=lambda e: e.name)
def test_example_runs_and_its_check_holds(example):
    assert not example.check(seeds.prepare(example))    # the check needs the program's work
    engine, error = seeds.run(example)
    assert error is None
    assert example.check(engine)


def test_main_prints_the_table(capsys):
    assert seeds.main() == 0
    out = capsys.readouterr().out
    assert f"{len(seeds.EXAMPLES)}/{len(seeds.EXAMPLES)} examples OK" in out
    assert sum(line.endswith("  OK") for line in out.splitlines()) == len(seeds.EXAMPLES)


@pytest.mark.parametrize("example", seeds.EXAMPLES, ids=lambda e: e.name)
def test_the_check_sees_one_wrong_byte_at_either_end_of_each_expected_range(example):
    for space, addr, data in example.expect:
        for offset in (0, len(data) - 1):
            engine, _ = seeds.run(example)
            memory = engine.ub if space == "ub" else engine.gm.region_at(addr + offset).data
            base = 0 if space == "ub" else engine.gm.region_at(addr + offset).base
            memory[addr + offset - base] ^= 0xFF
            assert not example.check(engine), (space, hex(addr + offset))
