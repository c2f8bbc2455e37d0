"""Run one program on the model and on the byte-by-byte reference, and compare memories."""

from dataclasses import dataclass

import numpy as np

from model.engine import Engine
from model.errors import MteError
from reference import ReferenceBusError, ReferenceMachine


def load_engine(profile, regions, ub=None):
    engine = Engine(profile)
    for base, data in regions:
        engine.gm.map(base, data)
    if ub is not None:
        engine.ub[:] = np.frombuffer(ub, dtype=np.uint8)
    return engine


@dataclass
class Outcome:
    engine: Engine
    reference: ReferenceMachine
    error: MteError | None                      # what the model raised
    reference_error: ReferenceBusError | None   # what the reference raised
    reference_line: int | None                  # at which command


def run_both(profile, regions, instrs, ub=None):
    """Both machines from the same memories through the same program; errors are caught."""
    engine = load_engine(profile, regions, ub)
    reference = ReferenceMachine(profile, regions, ub)
    error = reference_error = reference_line = None
    try:
        engine.run(instrs)
    except MteError as e:
        error = e
    for instr in instrs:
        try:
            reference.execute(instr.mnemonic, instr.values)
        except ReferenceBusError as e:
            reference_error, reference_line = e, instr.line
            break
    return Outcome(engine, reference, error, reference_error, reference_line)


def run_scenario(scenario):
    return run_both(scenario.profile, scenario.regions, scenario.instrs, scenario.ub)


def assert_same_memories(outcome, regions):
    """The whole UB and every mapped GM region agree byte for byte."""
    engine, reference = outcome.engine, outcome.reference
    ub = engine.ub.tobytes()
    if ub != bytes(reference.ub):
        first = next(i for i, (a, b) in enumerate(zip(ub, reference.ub)) if a != b)
        raise AssertionError(f"UB differs first at {first:#x}: model {ub[first]:#04x}, "
                             f"reference {reference.ub[first]:#04x}")
    for base, data in regions:
        model = engine.gm.read(base, len(data)).tobytes()
        expected = reference.gm_bytes(base, len(data))
        if model != expected:
            first = next(i for i, (a, b) in enumerate(zip(model, expected)) if a != b)
            raise AssertionError(f"GM differs first at {base + first:#x}: model "
                                 f"{model[first]:#04x}, reference {expected[first]:#04x}")


def assert_same_run(outcome, regions):
    """Same memories, and the same bus error (address and command) or none."""
    assert_same_memories(outcome, regions)
    if outcome.reference_error is None:
        assert outcome.error is None, outcome.error
    else:
        assert outcome.error is not None, f"model missed {outcome.reference_error}"
        assert outcome.error.address == outcome.reference_error.address
        assert outcome.error.line == outcome.reference_line


def snapshot(engine):
    """Everything a command may change: UB, every GM region, the pipe registers."""
    regions = {r.base: r.data.tobytes() for r in engine.gm.regions}
    registers = {pipe: dict(regs) for pipe, regs in engine.regs.items()}
    return engine.ub.tobytes(), regions, registers
