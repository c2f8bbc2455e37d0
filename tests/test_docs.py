"""The README and docs/ name only files that exist: every relative markdown link, every
source path written in backticks, every project module run with `python -m`, and every
make target."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

LINK = re.compile(r"\]\(([^)\s]+)\)")
# A path into the repository's own source folders; generated files (sim_build/) and
# patterns (`<profile>`, `*`) are not checked.
SOURCE_PATH = re.compile(r"`((?:model|hdl|tb|tests|formal|cli|docs|\.ci)/[\w./-]*)(?:::\w+)?`")
MODULE = re.compile(r"python -m ((?:model|hdl|tb|formal|cli)(?:\.\w+)*)")
MAKE_TARGET = re.compile(r"`make ([a-z][\w-]*)")


def _module_exists(root, module):
    path = root.joinpath(*module.split("."))
    return path.with_suffix(".py").exists() or (path / "__main__.py").exists()


def broken_references(doc, root=ROOT):
    """The links, backticked source paths, `python -m` modules and make targets in `doc`
    that name nothing that exists."""
    text = doc.read_text()
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        if not (doc.parent / target.split("#")[0]).exists():
            broken.append(target)
    broken += [path for path in SOURCE_PATH.findall(text) if not (root / path).exists()]
    broken += [module for module in MODULE.findall(text) if not _module_exists(root, module)]
    makefile = (root / "Makefile").read_text()
    broken += [f"make {target}" for target in MAKE_TARGET.findall(text)
               if not re.search(rf"^{re.escape(target)}:", makefile, re.MULTILINE)]
    return broken


@pytest.mark.parametrize("doc", DOCS, ids=lambda doc: doc.relative_to(ROOT).as_posix())
def test_doc_names_only_what_exists(doc):
    assert broken_references(doc) == []


def test_each_kind_of_broken_reference_is_reported(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "there.md").write_text("")
    (tmp_path / "hdl").mkdir()
    (tmp_path / "hdl" / "top.py").write_text("")
    (tmp_path / "hdl" / "fpga").mkdir()
    (tmp_path / "hdl" / "fpga" / "build.py").write_text("")
    (tmp_path / "Makefile").write_text("sim: venv\n\tpython -m tb.run\n")
    doc = tmp_path / "docs" / "page.md"
    doc.write_text("[ok](there.md#a) [gone](missing.md) [web](https://example.org)\n"
                   "`hdl/top.py` `hdl/gone.py` `sim_build/out.v` `tests/test_x.py::test_y`\n"
                   "python -m hdl.fpga.build, python -m hdl.fpga_build, python -m pstats\n"
                   "`make sim SEED=2` `make simulate`\n")
    assert broken_references(doc, root=tmp_path) == ["missing.md", "hdl/gone.py",
                                                     "tests/test_x.py", "hdl.fpga_build",
                                                     "make simulate"]
