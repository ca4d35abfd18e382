"""The package as an agent host installs it: pyproject.toml's dependencies are requirements.txt's pins, and the
wheel, installed with pip into a fresh virtual environment outside the checkout, runs ``webnovel-mcp`` on the
demo book over stdio for the SDK's own client — from a copy in its data directory, never the shipped example.

Offline: the wheel is built without build isolation (hatchling is pinned in requirements.txt) and the new
environment sees the shared venv's packages through a ``.pth`` file (the wheels a machine already has);
``pip install --no-index`` still resolves every declared dependency, so a missing or contrary pin fails here."""

import os
import re
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest
from anyio.from_thread import start_blocking_portal

from tests.conftest import DEMO_BOOK_SOURCE, REPO

RUNTIME_ONLY = {"pytest", "pytest-django", "hypothesis", "ruff", "import-linter", "playwright", "greenlet", "hatchling"}


def _pins(lines: list[str]) -> dict[str, str]:
    pins = {}
    for line in lines:
        match = re.match(r"\s*([A-Za-z0-9_.\-\[\]]+)==([^\s#]+)", line)
        if match:
            pins[match.group(1).split("[")[0].lower()] = match.group(2)
    return pins


def test_the_declared_dependencies_are_the_runtime_pins():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    declared = _pins(project["project"]["dependencies"])
    pinned = _pins((REPO / "requirements.txt").read_text(encoding="utf-8").splitlines())
    assert declared == {name: v for name, v in pinned.items() if name not in RUNTIME_ONLY}
    assert project["project"]["scripts"] == {"webnovel": "webnovel.cli:manage", "webnovel-mcp": "webnovel.cli:mcp"}


def _run(*args: str, cwd: Path) -> str:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and ".journal" not in p.parts}


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh venv with the built wheel installed, outside the checkout: (bin folder, data folder, prefix)."""
    tmp = tmp_path_factory.mktemp("package")
    _run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
         "-w", str(tmp / "dist"), str(REPO), cwd=tmp)  # fmt: skip
    (wheel,) = (tmp / "dist").glob("webnovel-*.whl")
    venv = tmp / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", str(venv), cwd=tmp)
    python = venv / "bin" / "python"
    purelib = Path(_run(str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))", cwd=tmp).strip())
    (purelib / "shared-venv.pth").write_text(sysconfig.get_path("purelib") + "\n", encoding="utf-8")
    _run(sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-index", str(wheel), cwd=tmp)
    where = _run(str(python), "-c", "import webnovel, agents; print(webnovel.__file__)", cwd=tmp)
    assert where.startswith(str(purelib)), where  # the installed package, not the checkout
    return venv / "bin", tmp / "data", venv


@pytest.mark.slow
def test_the_wheel_installs_the_scripts_and_the_whole_demo_book(installed):
    bin_dir, _, venv = installed
    assert (bin_dir / "webnovel").is_file() and (bin_dir / "webnovel-mcp").is_file()
    shipped = venv / "share" / "webnovel" / "examples" / "demo-book"
    assert _files(shipped) == _files(DEMO_BOOK_SOURCE) and "book.yaml" in _files(shipped)
    out = _run(str(bin_dir / "webnovel"), "help", "rebuild", cwd=venv.parent)
    assert "书籍文件夹" in out


@pytest.mark.slow
def test_webnovel_mcp_serves_the_demo_book_from_a_copy_in_the_data_dir(installed):
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    bin_dir, data, venv = installed
    example_before = _files(DEMO_BOOK_SOURCE)
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "SQLITE_PATH", "DJANGO_SETTINGS_MODULE"}}
    params = StdioServerParameters(
        command=str(bin_dir / "webnovel-mcp"), args=["--data-dir", str(data)], cwd=str(venv.parent), env=env
    )
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(Client(params)) as client:
        tools = {t.name: t for t in portal.call(client.list_tools).tools}
        thread = portal.call(client.call_tool, "thread", {"thread_id": "伏笔-001"})
        built = portal.call(client.call_tool, "story-system-build", {"query": "少年剑修", "persist": True})
    assert len(tools) == 81 and "extraction-ingest" in tools and "entity-within" in tools  # 73 reads + 8 writes
    assert (thread.is_error, thread.structured_content["id"]) == (False, "伏笔-001")
    assert thread.structured_content["title"]
    assert built.is_error is False
    copy = data / "books" / "demo-book"
    assert (data / "db.sqlite3").is_file() and (copy / "book.yaml").is_file()
    assert (copy / ".story-system").is_dir()  # the server's write went to the copy …
    assert _files(DEMO_BOOK_SOURCE) == example_before  # … and nothing into the checkout's example
    assert not (DEMO_BOOK_SOURCE / ".story-system").exists()
