"""formal/bitwuzla_smt2.py, the `bitwuzla` smtbmc runs: whole commands read, answers
given before the next command is sent, an end on (exit) with stdin still open."""

import subprocess
import sys

from formal.bitwuzla_smt2 import commands


def test_commands_end_where_their_parentheses_close():
    lines = ['(declare-fun |a (b| () (_ BitVec 4)) ; ( in a comment\n',
             '(assert (= |a (b|\n', ' #b0101))(push 1)\n',
             '(echo "a ) in a string")\n']
    assert list(commands(lines)) == [lines[0], lines[1] + lines[2], lines[3]]


def _solver():
    return subprocess.Popen([sys.executable, "-m", "formal.bitwuzla_smt2", "--lang", "smt2"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def _ask(solver, command):
    solver.stdin.write(command + "\n")
    solver.stdin.flush()
    return solver.stdout.readline().strip()


def test_answers_each_query_as_it_is_asked_and_ends_on_exit():
    solver = _solver()
    try:
        for command in ("(set-option :produce-models true)", "(set-logic QF_BV)",
                        "(declare-fun |a b| () (_ BitVec 4))",
                        "(assert (= (bvadd |a b| #b0001) #b0110))"):
            solver.stdin.write(command + "\n")
        assert _ask(solver, "(check-sat)") == "sat"
        assert _ask(solver, "(get-value (|a b|))") == "((|a b| #b0101))"
        assert _ask(solver, "(push 1)\n(assert (distinct |a b| #b0101))\n(check-sat)") \
            == "unsat"
        assert _ask(solver, "(pop 1)\n(check-sat)") == "sat"
        solver.stdin.write("(exit)\n")
        solver.stdin.flush()
        assert solver.wait(timeout=30) == 0
    finally:
        solver.kill()


def test_an_error_is_an_smt2_error_and_ends_the_solver():
    solver = _solver()
    try:
        answer = _ask(solver, "(assert (= x #b1))")
        assert answer.startswith("(error ") and "x" in answer
        assert solver.wait(timeout=30) == 1
    finally:
        solver.kill()


def test_usage_names_the_language_option_smtbmc_looks_for():
    usage = subprocess.run([sys.executable, "-m", "formal.bitwuzla_smt2", "--help"],
                           capture_output=True, text=True, check=True).stdout
    assert "--lang" in usage
    wrong = subprocess.run([sys.executable, "-m", "formal.bitwuzla_smt2", "--smt2"],
                           capture_output=True, text=True)
    assert wrong.returncode == 2 and "--lang" in wrong.stderr
