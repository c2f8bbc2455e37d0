"""What the fast formal subset checks of a group (tests/test_formal*.py): its proof, and
a mutation caught with the property's name and a counterexample VCD."""

import re
from dataclasses import replace
from pathlib import Path

from formal.proofs import AXI_WIDTH, FAST_AXI_OUTSTANDING, PROOFS, axi_proofs
from formal.runner import run_proof

# The AXI groups at W = 8 and 2 outstanding bursts; make formal proves them at every W
# and the engine's 8.
BY_GROUP = {proof.group: proof
            for proof in (*PROOFS, *axi_proofs(AXI_WIDTH, FAST_AXI_OUTSTANDING))}
QUICK_DEPTH = 10        # a mutation's counterexample is a few cycles long


def check_proved(tmp_path, group, depth, properties):
    """The group is proved by k-induction (at `depth`, or its own), with at least
    `properties` properties."""
    proof = BY_GROUP[group]
    if depth is not None:
        proof = replace(proof, mode="prove", depth=depth)
    result = run_proof(proof, root=tmp_path)
    assert result.status == "proved", result.log[-2000:]
    assert result.properties >= properties


def check_mutation_caught(tmp_path, group, mutation, expected):
    """BMC to QUICK_DEPTH fails on the group's `mutation`, naming a property that
    matches `expected`, each failure with its VCD."""
    proof = BY_GROUP[group]
    proof = replace(proof, mode="bmc", depth=QUICK_DEPTH, mutation_depth=0, split=None)
    broken = next(m for m in proof.mutations if m.name == mutation)
    result = run_proof(proof, broken, root=tmp_path)
    assert result.status == "failed", result.log[-2000:]
    names = {name for name, _ in result.failures}
    assert any(re.fullmatch(expected, name) for name in names), names
    assert all(Path(trace).suffix == ".vcd" and Path(trace).is_file()
               for _, trace in result.failures)
