"""Scalar code around the DMAs, evaluated while the program is parsed: `arith` integer
ops, `scf.for` (unrolled), `scf.if` (the branch its known condition takes), `scf.yield`,
and the core queries `pto.get_block_idx` / `get_block_num` / `get_subblock_idx` /
`get_subblock_num`, whose values come from the bindings (`--bind block_idx=3`).

Every value is an exact Python int: nothing wraps at a type's width, so a value too wide
for the field it ends in is that command's FIELD_RANGE, at the op that uses it. Loop
bounds must be known once the program's names are bound; a loop is parsed once per
iteration with its induction variable (and `iter_args`) bound to that iteration's values,
up to MAX_UNROLLED iterations in all, beyond which the program is refused.
"""

from dataclasses import dataclass

from .errors import ProgramError

# Loop iterations a program may unroll to, all loops together.
MAX_UNROLLED = 1 << 16


def _divide(a, b):
    """Signed division, rounding toward zero (arith.divsi)."""
    quotient = abs(a) // abs(b)
    return quotient if (a < 0) == (b < 0) else -quotient


def _unsigned(op):
    def checked(a, b):
        if a < 0 or b < 0:
            raise ValueError(f"{op} of a negative value")
        return {"divui": a // b, "remui": a % b}[op] if b else None
    return checked


BINARY = {
    "addi": lambda a, b: a + b, "subi": lambda a, b: a - b, "muli": lambda a, b: a * b,
    "divsi": lambda a, b: _divide(a, b) if b else None,
    "remsi": lambda a, b: a - b * _divide(a, b) if b else None,
    "divui": _unsigned("divui"), "remui": _unsigned("remui"),
    "minsi": min, "maxsi": max, "minui": min, "maxui": max,
}
CASTS = ("index_cast", "index_castui", "extsi", "extui")
COMPARE = {
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
    "slt": lambda a, b: a < b, "sle": lambda a, b: a <= b,
    "sgt": lambda a, b: a > b, "sge": lambda a, b: a >= b,
    "ult": lambda a, b: a < b, "ule": lambda a, b: a <= b,
    "ugt": lambda a, b: a > b, "uge": lambda a, b: a >= b,
}
QUERIES = ("get_block_idx", "get_block_num", "get_subblock_idx", "get_subblock_num")
SCALAR_OPS = ({f"arith.{name}" for name in (*BINARY, *CASTS, "cmpi", "select")}
              | {"scf.for", "scf.if", "scf.yield"} | {f"pto.{q}" for q in QUERIES})


def query_binding(op_name):
    """The --bind name a query's value comes from: pto.get_block_idx -> block_idx."""
    return op_name.removeprefix("pto.").removeprefix("get_")


def _error(token, message):
    return ProgramError(message, token.line, token.column)


@dataclass
class _Region:
    yielded: list | None = None


class ScalarCode:
    """The scalar statements of one parse; `statement` parses and evaluates one."""

    def __init__(self):
        self.unrolled = 0
        self.regions = []          # the regions being parsed, innermost last

    def statement(self, p, op, result):
        name = op.text
        if name == "scf.for":
            return self.scf_for(p, op, result)
        if name == "scf.if":
            return self.scf_if(p, op, result)
        if name == "scf.yield":
            return self.scf_yield(p, op)
        if result is None:
            raise _error(op, f"{name} needs a result name")
        if name.startswith("pto."):
            return p.define(result, self.query(p, op))
        return p.define(result, self.arith(p, op))

    # arith

    def arith(self, p, op):
        name = op.text.removeprefix("arith.")
        predicate = None
        if name == "cmpi":
            predicate = p.expect_kind("ident", "a predicate such as slt")
            if predicate.text not in COMPARE:
                raise _error(predicate, f"unknown cmpi predicate {predicate.text!r} "
                                        f"({', '.join(COMPARE)})")
            p.expect(",")
        operands = p.parse_operand_list()
        want = 3 if name == "select" else 1 if name in CASTS else 2
        if len(operands) != want:
            raise _error(op, f"{op.text} takes {want} operands, found {len(operands)}")
        if p.accept("overflow"):
            p.skip_balanced("<", ">")
        result_type = self.result_type(p, op, name)
        values = [p.integer(t, p.resolve(t)) for t in operands]
        if predicate is not None:
            return p.scalar_value(int(COMPARE[predicate.text](*values)), "i1", op)
        if name == "select":
            return p.scalar_value(values[1] if values[0] else values[2], result_type, op)
        if name in CASTS:
            return p.scalar_value(values[0], result_type, op)
        try:
            number = BINARY[name](*values)
        except ValueError as e:
            raise _error(op, f"{op.text}: {e}") from None
        if number is None:
            raise _error(op, f"{op.text}: division by zero")
        return p.scalar_value(number, result_type, op)

    @staticmethod
    def result_type(p, op, name):
        """`: T`, `: T to U` for casts (the result is U), `: i1, T` for select."""
        if p.at("{"):
            p.skip_balanced("{", "}")
        if not p.accept(":"):
            raise _error(p.peek(), f"expected ':' and a type after {op.text}'s operands")
        types = p.parse_type_list()
        if name in CASTS:
            p.expect("to")
            types = [p.parse_type()]
        return getattr(types[-1], "name", "index")

    def query(self, p, op):
        binding = query_binding(op.text)
        if p.at(":"):
            p.parse_signature()
        if binding not in p.bindings:
            raise _error(op, f"{op.text} takes its value from the bindings: "
                             f"--bind {binding}=N")
        p.bindings_read.add(binding)
        return p.scalar_value(p.bindings[binding], "index", op)

    # scf

    def known(self, p, token, what):
        value = p.resolve(token)
        if isinstance(value.number, float):
            raise _error(token, f"{what} {token.text} is a float")
        return int(value.number)

    def scf_for(self, p, op, result):
        iv = p.expect_kind("value", "an induction variable such as %i")
        p.expect("=")
        low = self.known(p, p.expect_kind("value", "a lower bound"), "lower bound")
        p.expect("to")
        high = self.known(p, p.expect_kind("value", "an upper bound"), "upper bound")
        p.expect("step")
        step_token = p.expect_kind("value", "a step")
        step = self.known(p, step_token, "step")
        if step <= 0:
            raise _error(step_token, f"scf.for step {step} is not positive")
        carried_names, carried = self.iter_args(p)
        if p.accept(":"):
            p.parse_type()
        trips = range(low, high, step)
        self.unrolled += len(trips)
        if self.unrolled > MAX_UNROLLED:
            raise _error(op, f"scf.for loops unroll to more than {MAX_UNROLLED} iterations "
                             "in all")
        body = p.pos
        for i in trips:
            p.pos = body
            names = {iv.text[1:]: p.scalar_value(i, "index", iv)}
            names.update(zip(carried_names, carried))
            carried = self.region(p, op, names, len(carried))
        if not trips:
            p.skip_balanced("{", "}")
        self.finish(p, result, carried, op)

    def iter_args(self, p):
        names, values = [], []
        if not p.accept("iter_args"):
            return names, values
        p.expect("(")
        while True:
            names.append(p.expect_kind("value", "a loop-carried name").text[1:])
            p.expect("=")
            token = p.expect_kind("value", "an initial value")
            values.append(p.resolve(token))
            if not p.accept(","):
                break
        p.expect(")")
        if p.accept("->"):
            p.parse_type_group()
        return names, values

    def scf_if(self, p, op, result):
        """The region the condition takes is parsed, the other skipped unread."""
        condition = self.known(p, p.expect_kind("value", "a condition"), "condition")
        want = len(p.parse_type_group()) if p.accept("->") else 0
        taken = []
        if condition:
            taken = self.region(p, op, {}, want)
        else:
            p.skip_balanced("{", "}")
        if p.accept("else"):
            if condition:
                p.skip_balanced("{", "}")
            else:
                taken = self.region(p, op, {}, want)
        elif want and not condition:
            raise _error(op, "scf.if with results needs an else region")
        self.finish(p, result, taken, op)

    def region(self, p, op, names, want):
        """Parse `{ ... }` once with `names` bound; the values its scf.yield gives."""
        outer = dict(p.values)
        p.values.update(names)
        self.regions.append(_Region())
        p.expect("{")
        p.parse_items(closed_by_brace=True)
        yielded = self.regions.pop().yielded or []
        p.values = outer
        if len(yielded) != want:
            raise _error(op, f"{op.text} yields {len(yielded)} values where it has {want}")
        return yielded

    def scf_yield(self, p, op):
        if not self.regions:
            raise _error(op, "scf.yield outside an scf.for or scf.if region")
        operands = p.parse_operand_list()
        if p.at(":"):
            p.parse_signature()
        self.regions[-1].yielded = [p.resolve(t) for t in operands]

    @staticmethod
    def finish(p, result, values, op):
        if p.at("{"):              # the op's attribute dictionary
            p.skip_balanced("{", "}")
        if result is None:
            return
        if len(values) != 1:
            raise _error(result, f"{op.text} gives {len(values)} values; name one result "
                                 "for one")
        p.define(result, values[0])
