"""`python -m formal`: proves every property group, one line each, then the total.

Exit status 0 when every group is proved and every mutation caught, else 1."""

import argparse
import sys
from dataclasses import replace

from .proofs import PROOFS
from .runner import run_proof


def _line(result):
    if result.status == "proved":
        parts = f", {result.parts} parts" if result.parts else ""
        parts += f", {result.reused} proved before" if result.reused else ""
        verdict = f"proved (k-induction, depth {result.depth}{parts})"
    elif result.status == "bmc":
        verdict = f"bmc depth {result.depth}: no counterexample"
    elif result.status == "unclosed":
        verdict = f"induction did not close by depth {result.depth}"
    else:
        verdict = result.status
    return f"{result.group:32s} {verdict:44s} {result.seconds:7.1f} s"


def report_failures(result, out=sys.stdout):
    for name, trace in result.failures:
        print(f"    property {name} fails: counterexample {trace}", file=out)
    if result.induction_stop:
        name, trace = result.induction_stop
        print(f"    induction stops at property {name}: trace {trace}", file=out)
    if result.status in ("error", "unclosed"):
        print(f"    log: {result.log.strip().splitlines()[-1] if result.log else ''}",
              file=out)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m formal", description=__doc__)
    parser.add_argument("--only", nargs="*", default=None,
                        help="groups to run (names or prefixes); default all")
    parser.add_argument("--depth", type=int, default=None,
                        help="override every group's depth (quicker, weaker)")
    parser.add_argument("--resume", action="store_true",
                        help="a group proved in parts takes each part an earlier run "
                             "proved on the same harness (a long proof run on after a stop)")
    args = parser.parse_args(argv)
    proofs = [p for p in PROOFS
              if args.only is None or any(p.group.startswith(o) for o in args.only)]
    if not proofs:
        parser.error(f"no group matches {args.only}; groups: "
                     + ", ".join(p.group for p in PROOFS))
    properties = caught = mutations = 0
    ok = True
    for proof in proofs:
        if args.depth:
            proof = replace(proof, depth=args.depth, mutation_depth=0)
        result = run_proof(proof, resume=args.resume)
        print(_line(result), flush=True)
        if result.passed:
            properties += result.properties
        else:
            ok = False
            report_failures(result)
        for mutation in proof.mutations:
            mutated = run_proof(proof, mutation)
            hit = mutated.status == "failed"
            caught += hit
            mutations += 1
            names = ", ".join(sorted({name for name, _ in mutated.failures}))
            print(f"  mutation {mutation.name:28s} "
                  f"{'caught by ' + names if hit else 'NOT caught (' + mutated.status + ')'}"
                  f"  {mutated.seconds:.1f} s", flush=True)
            ok &= hit
    print(f"formal: {properties} properties proved, {caught} of {mutations} mutations caught")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
