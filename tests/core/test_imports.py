"""No import circles in the package, lazy ones (imports inside functions) included."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import import_cycles

sys.path.pop(0)


def test_the_package_has_no_import_circle():
    edges = import_cycles.graph()
    assert "pytest_benchmarks.policies.hub" in edges["pytest_benchmarks.policies.backbone"]
    assert import_cycles.cycles(edges) == []


def test_a_circle_through_a_lazy_import_is_found(tmp_path: Path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg import b\n")
    (package / "b.py").write_text("def later():\n    from pkg.c import thing\n")
    (package / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                  "    from pkg import b\nfrom . import a\nthing = 1\n")  # fmt: skip
    modules = {"pkg", "pkg.a", "pkg.b", "pkg.c"}
    edges = {}
    for name in sorted(modules - {"pkg"}):
        path = package / f"{name.split('.')[1]}.py"
        edges[name] = import_cycles.imports(path, modules, root=tmp_path)
    assert edges == {"pkg.a": {"pkg.b"}, "pkg.b": {"pkg.c"}, "pkg.c": {"pkg.a"}}
    assert import_cycles.cycles(edges) == [["pkg.a", "pkg.b", "pkg.c"]]
