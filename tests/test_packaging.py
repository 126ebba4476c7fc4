"""The built wheel: one top-level import name (``tessera``), its data files, its entry points,
and (slow) a fresh venv that runs the model demo from an empty directory."""

import configparser
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    # build from a copy: setuptools' build/ directory must neither land in the checkout nor
    # carry stale modules of an earlier build into this wheel
    src = tmp_path_factory.mktemp("src") / "tessera-src"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "*.egg-info", "__pycache__", ".pytest_cache"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                    "--disable-pip-version-check", "-w", str(out), str(src)],
                   check=True, capture_output=True, text=True)
    (whl,) = out.glob("tessera-*.whl")
    return whl


def test_wheel_has_one_top_level_package(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"tessera"}
    (top_level,) = [n for n in names if n.endswith(".dist-info/top_level.txt")]
    assert zipfile.ZipFile(wheel).read(top_level).decode().split() == ["tessera"]


def test_wheel_carries_the_toolchain_files(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    tc = REPO / "tessera" / "toolchain"
    wanted = [tc / "crt0.S", tc / "link.ld", tc / "programs" / "vecsum.c",
              *sorted((tc / "codelets").glob("*.c")), *sorted((tc / "codelets").glob("*.h")),
              *sorted((tc / "codelets").glob("*.c.in"))]
    missing = [str(p.relative_to(REPO)) for p in wanted
               if p.relative_to(REPO).as_posix() not in names]
    assert not missing, f"not in the wheel: {missing}"


def test_wheel_carries_the_fast_engine_source(wheel):
    # the golden model's fast engine is compiled from this file on first use
    assert "tessera/golden_model/fast/engine.c" in set(zipfile.ZipFile(wheel).namelist())


def test_wheel_entry_points(wheel):
    z = zipfile.ZipFile(wheel)
    (ep,) = [n for n in z.namelist() if n.endswith(".dist-info/entry_points.txt")]
    cp = configparser.ConfigParser()
    cp.read_string(z.read(ep).decode())
    assert cp["console_scripts"]["tessera"].strip() == "tessera.cli:main"
    assert dict(cp["tessera.backends"]) == {"model": "tessera.golden_model.backend",
                                            "rtl": "tessera.tb.backend",
                                            "both": "tessera.tb.backend"}


@pytest.mark.slow
def test_wheel_in_a_fresh_venv_runs_the_model_demo(wheel, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                    str(wheel)], check=True, capture_output=True, text=True)
    empty = tmp_path / "empty"
    empty.mkdir()
    # a user's environment: none of the suite's own settings (conftest sets TESSERA_CHECKED,
    # whose retire-trace replay runs on the vectorized engine)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV") and not k.startswith("TESSERA_")}
    env["TESSERA_CACHE"] = str(tmp_path / "cache")
    r = subprocess.run([str(venv / "bin" / "tessera"), "demo", "--backend", "model",
                        "--images", "20", "--no-progress"], cwd=empty, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "match: yes" in r.stdout
    assert list(empty.iterdir()) == []          # nothing written where the user stands
    # the demo ran on the fast engine, compiled into the user cache
    assert list((tmp_path / "cache" / "fastmodel").glob("*/engine.so"))
