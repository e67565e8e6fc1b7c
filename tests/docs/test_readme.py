"""The README stays true: its example runs as printed, every link in it and in docs/ points at a
file that exists, and it stays a page a newcomer reads (at most 100 lines, no internal history)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, re.S)


def test_readme_example_runs_as_printed(tmp_path):
    blocks = _python_blocks(README.read_text())
    assert blocks, "the README has no python example"
    script = tmp_path / "readme_example.py"
    script.write_text(blocks[0])
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "[[3.0, 3.0" in done.stdout


def test_readme_is_short_and_has_no_internal_history():
    text = README.read_text()
    assert len(text.splitlines()) <= 100
    for word in ("seed 0", "(issue", "ops/pending"):
        assert word not in text, word
    assert "make demo" in text and "make test" in text


@pytest.mark.parametrize("doc", [README, *sorted((ROOT / "docs").glob("*.md"))], ids=lambda p: p.name)
def test_relative_links_point_at_existing_files(doc):
    missing = []
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", doc.read_text()):
        if "://" in target or target.startswith("mailto:"):
            continue
        if not (doc.parent / target).exists():
            missing.append(target)
    assert not missing, f"{doc.name} links to missing files: {missing}"


def test_architecture_concept_table_names_existing_files():
    text = (ROOT / "docs" / "architecture.md").read_text()
    table = text.split("## Where each concept lives", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert len(rows) >= 30
    missing = []
    for row in rows:
        paths = re.findall(r"`([^`]+)`", row.split("|")[2])
        assert paths, f"no file named for: {row}"
        missing += [p for p in paths if not (ROOT / p).exists()]
    assert not missing, f"docs/architecture.md names missing files: {missing}"
