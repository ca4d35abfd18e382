"""A `story` process imports only what a read needs: no ninja, pydantic, schema or admin module of ours,
no pypinyin, no continuity check nor context pack machinery (each costs tens to hundreds of milliseconds
of every agent's call). Checked in a fresh
interpreter: Django set up, the `story` command's parser built from the whole read registry."""

import json
import subprocess
import sys

from tests.conftest import REPO

PROBE = """
import json, os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webnovel.settings")
import django
django.setup()
from django.core.management import load_command_class
load_command_class("webnovel", "story").create_parser("manage.py", "story")
ours = ("agents", "bookfiles", "continuity", "core", "dashboard", "entities", "kernel", "memory", "storysystem",
        "threads", "webnovel")
heavy = sorted(
    m for m in sys.modules
    if m.split(".")[0] in ("ninja", "pydantic", "pypinyin", "jieba")
    or (m.split(".")[0] in ours and m.rsplit(".", 1)[-1] in ("schemas", "extraction_schema", "payload", "admin", "api"))
    # the heavy engines, imported by the one read that runs them (selectors declared by dotted path)
    or m.split(".")[:2] in (["continuity", "checks"], ["memory", "orchestrator"], ["bookfiles", "parser"],
                            ["entities", "hierarchy"])
)
print(json.dumps({"heavy": heavy, "reads": "storysystem.interfaces" in sys.modules}))
"""


def test_a_story_process_imports_no_ninja_pydantic_schema_nor_admin_module():
    proc = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, capture_output=True, text=True, check=True)
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"heavy": [], "reads": True}


RUN = """
import json, os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webnovel.settings")
import django
django.setup()
from kernel.interfaces import interfaces_load
spec = interfaces_load()["context"]
before = "memory.orchestrator" in sys.modules
fn = spec.fn
print(json.dumps({"before": before, "after": "memory.orchestrator" in sys.modules, "fn": fn.__qualname__,
                  "app": spec.app, "render": spec.rendering("text").render.__qualname__}))
"""


def test_a_read_declared_by_path_imports_its_module_when_first_used():
    proc = subprocess.run([sys.executable, "-c", RUN], cwd=REPO, capture_output=True, text=True, check=True)
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {
        "before": False,
        "after": True,
        "fn": "context_pack",
        "app": "memory",
        "render": "pack_text",
    }
