"""A wheel built from the tree holds every module, template, testbench and board profile, and works
when installed without the source tree (the non-editable case)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("wheel")
    # pip builds in the source folder and setuptools leaves build/ and *.egg-info there (a stale
    # build/lib can even put deleted modules in later wheels): build from a copy instead.
    source = folder / "source"
    for name in ("pyproject.toml", "README.md"):
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, source / name)
    for name in ("fpgagen", "templates", "sim"):
        shutil.copytree(ROOT / name, source / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-q", "-w", str(folder)],
        capture_output=True, check=False, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return next(folder.glob("fpgagen-*.whl"))


def test_wheel_holds_every_source_file(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {
        f"fpgagen/{path.relative_to(ROOT / 'fpgagen').as_posix()}"
        for path in (ROOT / "fpgagen").rglob("*")
        if path.is_file()
        and path.suffix in (".py", ".yaml")
        and "__pycache__" not in path.parts
        and not {"templates", "testbench"} & set(path.relative_to(ROOT / "fpgagen").parts)
    }
    expected |= {
        f"fpgagen/templates/{path.relative_to(ROOT / 'templates').as_posix()}"
        for path in (ROOT / "templates").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    expected |= {f"fpgagen/testbench/{path.name}" for path in (ROOT / "sim").glob("*.py")}
    missing = sorted(expected - names)
    assert not missing, f"the wheel lacks {missing}"


def test_installed_wheel_finds_its_templates_and_testbench(wheel, tmp_path):
    zipfile.ZipFile(wheel).extractall(tmp_path / "site")
    check = (
        "from importlib import resources; import fpgagen, fpgagen.testbench.tb_engine; "
        "assert 'site' in fpgagen.__file__; "
        "assert (resources.files('fpgagen.templates') / 'rtl' / 'lib' / 'fg_pe.v').is_file(); "
        "assert (resources.files('fpgagen.templates') / 'hls' / 'fpgagen_engine.h').is_file(); "
        "from fpgagen.schedule.boards import builtin_boards; assert 'u280' in builtin_boards()"
    )
    done = subprocess.run(
        [sys.executable, "-c", check], cwd=tmp_path, env={"PYTHONPATH": str(tmp_path / "site")},
        capture_output=True, check=False, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
