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
