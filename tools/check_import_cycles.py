"""File-level import cycles inside each crate of crates/: file A names an item defined in file
B (through `use` or a `crate::`/`super::`/`self::`/child-module path, following `pub use`
re-exports to the file that defines the item) and B, directly or through others, names one of A.

A module naming its own ancestors (`super::X`, `crate::X` defined in lib.rs) is Rust's scoping,
not a dependency between two files, and is not counted. Usage: python tools/check_import_cycles.py
[ROOT]; exits 1 and prints each cycle when there is one."""
from __future__ import annotations

import re
import sys
from pathlib import Path

USE_RE = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", re.M)
MOD_RE = re.compile(r"^\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", re.M)
PATH_RE = re.compile(r"\b((?:crate|super|self)(?:::\w+)+)")
COMMENT_RE = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
STR_RE = re.compile(r'"(?:\\.|[^"\\])*"')


def expand(tree: str) -> list[str]:
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e]."""
    tree = "".join(tree.split())
    i = tree.find("{")
    if i < 0:
        return [tree.split(" as ")[0]]
    head, body = tree[:i], tree[i + 1 : tree.rfind("}")]
    parts, depth, cur = [], 0, ""
    for ch in body:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    if cur:
        parts.append(cur)
    out = []
    for p in parts:
        for e in expand(p):
            out.append(head + e if e != "self" else head.rstrip(":"))
    return out


def module_of(src: Path, f: Path) -> list[str]:
    rel = f.relative_to(src).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return parts


def file_of(src: Path, mods: list[str]) -> Path | None:
    """The file defining the longest prefix of `mods` (at least one component)."""
    for n in range(len(mods), -1, -1):
        base = src.joinpath(*mods[:n]) if n else src
        for cand in ([base.with_suffix(".rs"), base / "mod.rs"] if n else [src / "lib.rs", src / "main.rs"]):
            if cand.is_file():
                return cand
    return None


def clean(f: Path) -> str:
    return STR_RE.sub('""', COMMENT_RE.sub("", f.read_text()))


def absolute(src: Path, f: Path, segs: list[str], children: set[str]) -> list[str] | None:
    """A `use`/path's module components from the crate root, or None when it is external."""
    me = module_of(src, f)
    if not segs:
        return None
    if segs[0] == "crate":
        return segs[1:]
    if segs[0] in ("super", "self"):
        base = list(me)
        while segs and segs[0] in ("super", "self"):
            if segs[0] == "super":
                base = base[:-1]
            segs = segs[1:]
        return base + segs
    if segs[0] in children:
        return me + segs
    return None


def reexports(src: Path, f: Path) -> dict[str, list[str]]:
    """`pub use a::b::Item;` in f: Item -> absolute path of a::b::Item."""
    text = clean(f)
    children = set(MOD_RE.findall(text))
    out: dict[str, list[str]] = {}
    for m in re.finditer(r"^\s*pub(?:\([^)]*\))?\s+use\s+([^;]+);", text, re.M):
        for p in expand(m.group(1)):
            segs = [s for s in p.split("::") if s]
            absp = absolute(src, f, segs, children)
            if absp and segs[-1] != "*":
                out[segs[-1]] = absp
    return out


def resolve(src: Path, mods: list[str], cache: dict, depth: int = 0) -> Path | None:
    target = file_of(src, mods)
    if target is None or depth > 8:
        return target
    here = len(module_of(src, target))
    if len(mods) > here:
        item = mods[here]
        if target not in cache:
            cache[target] = reexports(src, target)
        nxt = cache[target].get(item)
        if nxt is not None and nxt != mods[: len(nxt)]:
            return resolve(src, nxt + mods[here + 1 :], cache, depth + 1) or target
    return target


def crate_edges(src: Path) -> dict[Path, set[Path]]:
    files = sorted(p for p in src.rglob("*.rs"))
    edges: dict[Path, set[Path]] = {f: set() for f in files}
    cache: dict = {}
    for f in files:
        text = clean(f)
        # inline `mod tests { ... }` blocks are part of the file; `mod x;` declares a child file
        me = module_of(src, f)
        children = set(MOD_RE.findall(text))
        paths = []
        for m in USE_RE.finditer(text):
            paths += expand(m.group(1))
        paths += PATH_RE.findall(text)
        for child in children:
            paths += [child + rest for rest in re.findall(rf"(?<!::)\b{child}((?:::\w+)+)", text)]
        for p in paths:
            segs = [s for s in p.split("::") if s]
            mods = absolute(src, f, segs, children)
            if mods is None:
                continue
            target = resolve(src, [m for m in mods if m != "*"], cache)
            if target is None or target == f:
                continue
            # a module naming its own ancestor (`super::X`, `crate::X` defined in lib.rs) is Rust's
            # scoping, not a dependency between two files of the same level
            tmod = module_of(src, target)
            if len(tmod) < len(me) and me[: len(tmod)] == tmod:
                continue
            edges[f].add(target)
    return edges


def cycles(edges: dict[Path, set[Path]]) -> list[list[Path]]:
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v: Path) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in edges:
        if v not in index:
            visit(v)
    return out


def main(root: Path) -> int:
    bad = 0
    for src in sorted(root.glob("crates/*/src")):
        for comp in cycles(crate_edges(src)):
            bad += 1
            print("cycle:", " <-> ".join(str(p.relative_to(root)) for p in comp))
    print(f"{bad} file-level import cycle(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else ".")))
