"""The import layering of the project (issue 61): every import in model/, hdl/, tb/,
formal/ and cli/, module-level or inside a function, relative ones resolved, goes to the
importing module's own package or to a layer below it, and no two packages import each
other, however indirectly. The checker reads the source with `ast` (nothing is
imported), and is itself tested on synthetic trees that break each rule."""

import ast
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]
TOP_PACKAGES = ("model", "hdl", "tb", "formal", "cli")

# The layers, lowest first, numbered as in docs/architecture.md: a module imports only
# from its own package or from the packages of an earlier layer (packages of one layer
# do not import each other). An entry covers its modules and subpackages, unless other
# entries name some of them: then it covers its own __init__.py alone ("hdl" is
# hdl/__init__.py, the map of the tree, which imports no more than the model does).
# hdl/__init__.py's docstring says the same in words; this table is the check.
LAYERS = (
    ("model", "hdl"),
    ("hdl.lib",),
    ("hdl.layouts",),
    ("hdl.ub",),
    ("hdl.datapath",),
    ("hdl.intake",),
    ("hdl.pipe",),
    ("hdl.top",),
    ("hdl.soc",),
    ("hdl.gen", "hdl.fpga"),
    ("tb", "formal"),
    ("cli",),
)


class Import(NamedTuple):
    source: str         # the importing module, e.g. "hdl.datapath.aligner"
    where: str          # its file and the import's line, e.g. "hdl/datapath/aligner.py:12"
    target: str         # the module or package imported


def modules(root):
    """{module name: path relative to root} of every .py under the top packages."""
    found = {}
    for top in TOP_PACKAGES:
        for path in sorted((root / top).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path.relative_to(root).as_posix()
    return found


def _base(source, path, node):
    """The module a `from` import names, relative levels resolved against `source`."""
    if not node.level:
        return node.module
    package = source if path.endswith("__init__.py") else source.rpartition(".")[0]
    parts = package.split(".")
    base = ".".join(parts[:len(parts) - (node.level - 1)])
    return f"{base}.{node.module}" if node.module else base


def _targets(source, path, node, known):
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = _base(source, path, node)
    # `from hdl.soc import csr` imports the module hdl.soc.csr; `from hdl.soc.csr import
    # Csr` imports hdl.soc.csr itself
    return [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
            for alias in node.names]


def imports(root):
    """Every import of a top package's module by a top package's module, anywhere in
    the file (module level, functions, branches)."""
    known = modules(root)
    out = []
    for source, path in known.items():
        tree = ast.parse((root / path).read_text(), path)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                out += [Import(source, f"{path}:{node.lineno}", target)
                        for target in _targets(source, path, node, known)
                        if target.split(".")[0] in TOP_PACKAGES]
    return out


def unit_of(module, layers=LAYERS):
    """The table entry covering `module`, or None."""
    entries = [entry for layer in layers for entry in layer]
    covering = [entry for entry in entries if module == entry or (
        module.startswith(entry + ".")
        and not any(other.startswith(entry + ".") for other in entries))]
    return max(covering, key=len, default=None)


def layering_problems(root, layers=LAYERS):
    """One line per module in no layer, per import of a module the tree does not hold,
    and per import that goes sideways or up."""
    rank = {entry: index for index, layer in enumerate(layers) for entry in layer}
    known = modules(root)
    problems = [f"{path}: {name} is in no layer of the table"
                for name, path in known.items() if unit_of(name, layers) is None]
    for imp in imports(root):
        source, target = unit_of(imp.source, layers), unit_of(imp.target, layers)
        if imp.target not in known:
            problems.append(f"{imp.where}: imports {imp.target}, which is no module here")
        elif None not in (source, target) and source != target \
                and rank[target] >= rank[source]:
            problems.append(f"{imp.where}: {source} (layer {rank[source] + 1}) imports "
                            f"{imp.target} ({target}, layer {rank[target] + 1})")
    return problems


def package_cycles(root, layers=LAYERS):
    """The import cycles between table entries: a depth-first walk reports one cycle per
    import that leads back into the walk's path, as that cycle's imports ("file:line: A
    imports B"), one line per cycle."""
    edges = {}                          # (from entry, to entry) -> first import's place
    for imp in imports(root):
        source, target = unit_of(imp.source, layers), unit_of(imp.target, layers)
        if None not in (source, target) and source != target:
            edges.setdefault((source, target), imp.where)
    successors = {}
    for source, target in sorted(edges):
        successors.setdefault(source, []).append(target)
    cycles, done = [], set()

    def walk(path):
        for following in successors.get(path[-1], ()):
            if following in path:
                cycle = path[path.index(following):] + [following]
                cycles.append("; ".join(f"{edges[a, b]}: {a} imports {b}"
                                        for a, b in zip(cycle, cycle[1:])))
            elif following not in done:
                walk(path + [following])
        done.add(path[-1])

    for start in sorted(successors):
        if start not in done:
            walk([start])
    return cycles


# --- the project's tree ------------------------------------------------------------

def test_every_import_goes_to_its_own_package_or_a_lower_layer():
    assert layering_problems(ROOT) == []


def test_no_two_packages_import_each_other():
    assert package_cycles(ROOT) == []


def test_every_table_entry_covers_modules_of_the_tree():
    known = modules(ROOT)
    covered = {unit_of(name) for name in known}
    assert [entry for layer in LAYERS for entry in layer if entry not in covered] == []
    # the walk sees the imports the layering rests on
    found = {(imp.source, imp.target) for imp in imports(ROOT)}
    assert ("tb.rtl_engine", "model.run") in found
    assert ("cli.run", "model.run") in found


# --- the checker on synthetic trees ------------------------------------------------

def tree(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        for package in path.relative_to(root).parents[:-1]:
            (root / package / "__init__.py").touch()
    return root


def test_a_clean_synthetic_tree_has_no_problem(tmp_path):
    root = tree(tmp_path, {"model/a.py": "import os\nfrom . import b\n",
                           "model/b.py": "",
                           "hdl/lib/q.py": "from model.a import x\n",
                           "hdl/datapath/d.py": "from ..lib import q\nfrom ..lib.q import Q\n",
                           "tb/t.py": "import hdl.datapath.d\nimport model\n",
                           "cli/__init__.py": "def main():\n    from tb import t\n"})
    assert layering_problems(root) == []
    assert package_cycles(root) == []


def test_an_upward_import_is_reported_at_its_file_and_line(tmp_path):
    root = tree(tmp_path, {"model/a.py": "import os\nfrom tb.t import run\n",
                           "tb/t.py": "run = 1\n"})
    assert layering_problems(root) == [
        "model/a.py:2: model (layer 1) imports tb.t (tb, layer 11)"]


def test_an_upward_import_inside_a_function_is_reported(tmp_path):
    root = tree(tmp_path, {"model/a.py": "def f():\n    if True:\n        import cli\n",
                           "cli/__init__.py": ""})
    assert layering_problems(root) == [
        "model/a.py:3: model (layer 1) imports cli (cli, layer 12)"]


def test_a_relative_upward_import_is_resolved_and_reported(tmp_path):
    root = tree(tmp_path, {"hdl/datapath/d.py": "from ..pipe import addrgen\n",
                           "hdl/pipe/addrgen.py": ""})
    assert layering_problems(root) == [
        "hdl/datapath/d.py:1: hdl.datapath (layer 5) imports hdl.pipe.addrgen "
        "(hdl.pipe, layer 7)"]


def test_packages_of_one_layer_do_not_import_each_other(tmp_path):
    root = tree(tmp_path, {"tb/t.py": "from formal import f\n", "formal/f.py": ""})
    assert layering_problems(root) == [
        "tb/t.py:1: tb (layer 11) imports formal.f (formal, layer 11)"]


def test_the_hdl_map_imports_no_stage_and_the_model_no_hdl(tmp_path):
    root = tree(tmp_path, {"hdl/__init__.py": '"""The map."""\nfrom .lib import queue\n',
                           "hdl/lib/queue.py": "",
                           "model/isa.py": "import hdl\n"})
    assert layering_problems(root) == [
        "model/isa.py:1: model (layer 1) imports hdl (hdl, layer 1)",
        "hdl/__init__.py:2: hdl (layer 1) imports hdl.lib.queue (hdl.lib, layer 2)"]


def test_a_module_outside_the_table_and_a_stale_import_are_reported(tmp_path):
    root = tree(tmp_path, {"hdl/c_header.py": "",
                           "cli/asm.py": "def header():\n    from hdl.soc.c_header import h\n"})
    assert layering_problems(root) == [
        "hdl/c_header.py: hdl.c_header is in no layer of the table",
        "cli/asm.py:2: imports hdl.soc.c_header, which is no module here"]


def test_a_cycle_between_packages_is_reported_with_each_import(tmp_path):
    root = tree(tmp_path, {"model/cli.py": "import sys\nfrom tb.rtl import run\n",
                           "tb/rtl.py": "def run():\n    from model.cli import Result\n"})
    assert package_cycles(root) == [
        "model/cli.py:2: model imports tb; tb/rtl.py:2: tb imports model"]
    assert "model/cli.py:2: model (layer 1) imports tb.rtl (tb, layer 11)" in \
        layering_problems(root)


def test_a_longer_cycle_is_reported_once(tmp_path):
    root = tree(tmp_path, {"hdl/lib/q.py": "from hdl.soc import csr\n",
                           "hdl/soc/csr.py": "from hdl.pipe import p\n",
                           "hdl/pipe/p.py": "from hdl.lib import q\n"})
    assert package_cycles(root) == [
        "hdl/lib/q.py:1: hdl.lib imports hdl.soc; hdl/soc/csr.py:1: hdl.soc imports "
        "hdl.pipe; hdl/pipe/p.py:1: hdl.pipe imports hdl.lib"]
