"""No function in model/, hdl/, tb/, formal/ or cli/ runs over 100 lines (issue 61: a
function is read at once, so a long one is split into named helpers). Lines are counted
from the `def` to the last line of the body, by `ast`; a nested function counts within
its parent."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECKED = ("model", "hdl", "tb", "formal", "cli")
MAX_LINES = 100


def long_functions(root, packages=CHECKED, limit=MAX_LINES):
    """["path:line: name has N lines"] of every function over `limit` lines."""
    found = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            where = path.relative_to(root).as_posix()
            functions = [node for node in ast.walk(ast.parse(path.read_text(), where))
                         if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
            for node in sorted(functions, key=lambda node: node.lineno):
                lines = node.end_lineno - node.lineno + 1
                if lines > limit:
                    found.append(f"{where}:{node.lineno}: {node.name} has {lines} lines")
    return found


def test_no_function_runs_over_100_lines():
    assert long_functions(ROOT) == []


def test_the_check_reads_every_package_it_names():
    assert all(any((ROOT / package).rglob("*.py")) for package in CHECKED)


def _body(lines, indent="    "):
    return "".join(f"{indent}x{i} = {i}\n" for i in range(lines))


def test_a_long_function_and_a_long_method_are_reported(tmp_path):
    (tmp_path / "cli").mkdir()
    (tmp_path / "cli" / "a.py").write_text(
        "import os\n\n"
        f"def at_the_limit():\n{_body(99)}\n"                 # lines 3-102: 100 lines
        f"class C:\n    def long(self):\n{_body(100, ' ' * 8)}\n"  # lines 105-205
        f"async def longer():\n{_body(101)}")                  # lines 207-308
    assert long_functions(tmp_path, ("cli",)) == [
        "cli/a.py:105: long has 101 lines", "cli/a.py:207: longer has 102 lines"]
