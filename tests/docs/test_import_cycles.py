"""No file-level import cycles inside a crate (issue: architecture), checked by
tools/check_import_cycles.py; the checker itself is tested on small made-up crates."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("check_import_cycles", ROOT / "tools" / "check_import_cycles.py")
assert _spec is not None and _spec.loader is not None
cic = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cic)


def _crate(tmp_path: Path, files: dict[str, str]) -> Path:
    src = tmp_path / "crates" / "demo" / "src"
    for name, text in files.items():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        (src / name).write_text(text)
    return src


def _cycles(src: Path) -> list[set[str]]:
    return [{str(p.relative_to(src)) for p in c} for c in cic.cycles(cic.crate_edges(src))]


def test_the_crates_have_no_file_level_import_cycles() -> None:
    for src in sorted(ROOT.glob("crates/*/src")):
        found = cic.cycles(cic.crate_edges(src))
        assert not found, f"{src.parent.name}: " + "; ".join(
            " <-> ".join(str(p.relative_to(ROOT)) for p in c) for c in found
        )


def test_two_siblings_naming_each_other_are_a_cycle(tmp_path: Path) -> None:
    src = _crate(tmp_path, {
        "lib.rs": "pub mod a;\npub mod b;\n",
        "a.rs": "use crate::b::B;\npub struct A;\n",
        "b.rs": "pub struct B;\nfn f() -> crate::a::A { crate::a::A }\n",
    })
    assert _cycles(src) == [{"a.rs", "b.rs"}]


def test_a_cycle_through_a_re_export_is_found(tmp_path: Path) -> None:
    # b names A through lib.rs's `pub use`, which leads to a.rs where A is defined
    src = _crate(tmp_path, {
        "lib.rs": "pub mod a;\npub mod b;\npub mod c;\npub use a::A;\n",
        "a.rs": "use crate::c::{self, C};\npub struct A;\n",
        "b.rs": "use crate::A;\npub struct B;\n",
        "c.rs": "use crate::b::B;\npub struct C;\n",
    })
    assert _cycles(src) == [{"a.rs", "b.rs", "c.rs"}]


def test_a_module_using_its_parent_is_not_a_cycle(tmp_path: Path) -> None:
    src = _crate(tmp_path, {
        "lib.rs": "pub mod fam;\n",
        "fam/mod.rs": "mod one;\npub use one::run;\npub struct Ctx;\n",
        "fam/one.rs": "use super::Ctx;\npub fn run(_: &Ctx) {}\n",
    })
    assert _cycles(src) == []
    # ... but comments and strings naming a module are not uses either
    src2 = _crate(tmp_path / "x", {
        "lib.rs": "pub mod a;\npub mod b;\n",
        "a.rs": "// see crate::b::B\npub struct A;\nconst S: &str = \"crate::b::B\";\n",
        "b.rs": "use crate::a::A;\npub struct B;\n",
    })
    assert _cycles(src2) == []
