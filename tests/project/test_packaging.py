"""What a release contains: the sdist and the wheel built from a clean copy of the tree.

The wheel once left out the PostgreSQL migrations (package data was a hand-kept list),
so ``memoryd serve --database-url`` from an installed wheel failed while every editable
test passed. These tests build both artefacts the way ``.ci/run`` does, from the files
git tracks, and hold them against the tree: every tracked file under ``memoryd/`` must
ship, and nothing else may.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from memoryd import __version__

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def _tracked() -> list[str]:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the tracked file list is unknown")
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout.decode()
    return [p for p in out.split("\0") if p and (ROOT / p).is_file()]


@pytest.fixture(scope="module")
def artefacts(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(sdist, wheel) built as CI builds them: the wheel from the unpacked sdist."""
    tree = tmp_path_factory.mktemp("checkout")
    for rel in _tracked():
        target = tree / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, target)
    # A stray cache in the tree must not ship (a developer's build is not clean).
    (tree / "memoryd" / "__pycache__").mkdir(exist_ok=True)
    (tree / "memoryd" / "__pycache__" / "stray.cpython-311.pyc").write_bytes(b"\0")
    out = tmp_path_factory.mktemp("dist")
    # Generous: the isolated build env installs setuptools from the package index.
    built = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(tree)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (sdist,) = out.glob("memoryd-*.tar.gz")
    (wheel,) = out.glob("memoryd-*.whl")
    return sdist, wheel


def _package_files() -> set[str]:
    return {p for p in _tracked() if p.startswith("memoryd/")}


def test_the_wheel_carries_every_tracked_package_file_and_nothing_else(
    artefacts: tuple[Path, Path],
) -> None:
    _, wheel = artefacts
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {n for n in names if n.startswith("memoryd/")}
    expected = _package_files()
    assert not expected - shipped, f"missing from the wheel: {sorted(expected - shipped)}"
    assert not shipped - expected, f"not in the tree: {sorted(shipped - expected)}"
    # The files the bug left out, by name, so this reads as what it guards.
    for folder in ("storage/postgres/migrations", "storage/sqlite/migrations"):
        assert any(n.startswith(f"memoryd/{folder}/0001_") for n in shipped), folder
    assert "memoryd/py.typed" in shipped
    assert "memoryd/dashboard/static/studio.css" in shipped


def test_the_wheel_names_the_version_the_package_reports(artefacts: tuple[Path, Path]) -> None:
    _, wheel = artefacts
    assert wheel.name.startswith(f"memoryd-{__version__}-py3-none-any")
    with zipfile.ZipFile(wheel) as zf:
        meta = zf.read(f"memoryd-{__version__}.dist-info/METADATA").decode()
        entry_points = zf.read(f"memoryd-{__version__}.dist-info/entry_points.txt").decode()
        licences = [n for n in zf.namelist() if "/licenses/" in n]
    assert f"\nVersion: {__version__}\n" in meta
    assert "memoryd = memoryd.cli:main" in entry_points
    assert licences, "the licence text ships in the wheel"


def test_the_sdist_rebuilds_the_release(artefacts: tuple[Path, Path]) -> None:
    sdist, _ = artefacts
    with tarfile.open(sdist) as tf:
        names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    for rel in (*_package_files(), "pyproject.toml", "README.md", "LICENSE", "MANIFEST.in"):
        assert rel in names, f"{rel} missing from the sdist"
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


def test_the_package_finds_its_data_when_run_from_the_wheel(
    artefacts: tuple[Path, Path], tmp_path: Path
) -> None:
    """The loaders the server uses (both stores' migrations, the dashboard's templates
    and assets) find every file from the unpacked wheel, with no source tree around."""
    _, wheel = artefacts
    zipfile.ZipFile(wheel).extractall(tmp_path)
    probe = (
        "import json, memoryd\n"
        "from memoryd.storage.sqlite import migrations as lite\n"
        "from memoryd.storage.postgres.database import discover as pg\n"
        "from memoryd.dashboard.routes import HERE\n"
        "print(json.dumps({'at': memoryd.__file__, 'sqlite': len(lite.discover()),\n"
        "  'postgres': len(pg()), 'templates': len(list((HERE / 'templates').rglob('*.html'))),\n"
        "  'static': len([p for p in (HERE / 'static').rglob('*') if p.is_file()])}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(tmp_path)!r})\n{probe}"],
        cwd=tmp_path,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    found = json.loads(out)
    assert Path(found["at"]).is_relative_to(tmp_path)

    def count(folder: str, suffix: str = "") -> int:
        return sum(1 for p in _package_files() if p.startswith(folder) and p.endswith(suffix))

    assert found["sqlite"] == count("memoryd/storage/sqlite/migrations/", ".sql") > 0
    assert found["postgres"] == count("memoryd/storage/postgres/migrations/", ".sql") > 0
    assert found["templates"] == count("memoryd/dashboard/templates/", ".html") > 0
    assert found["static"] == count("memoryd/dashboard/static/") > 0
