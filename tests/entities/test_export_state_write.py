"""export_state --write / --output go through the one write helper (issue 19 item 3)."""

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from core.models import Book

pytestmark = pytest.mark.django_db


@pytest.fixture
def book(tmp_path):
    root = tmp_path / "book"
    root.mkdir()
    return Book.objects.create(slug="doupo", title="斗破", root=str(root))


def test_write_creates_the_file_then_backs_it_up(book):
    root = Path(book.root)
    out = io.StringIO()
    call_command("export_state", "doupo", "--write", stdout=out)
    state = root / ".webnovel" / "state.json"
    assert json.loads(out.getvalue())["written"] == str(state)
    first = state.read_text(encoding="utf-8")
    call_command("export_state", "doupo", "--write", stdout=io.StringIO())
    backups = sorted(p.name for p in state.parent.iterdir() if p.name.startswith("state.json.bak-"))
    assert len(backups) == 1 and (state.parent / backups[0]).read_text(encoding="utf-8") == first


def test_write_through_a_planted_symlink_is_refused(book, tmp_path):
    root = Path(book.root)
    outside = tmp_path / "site-packages"
    outside.mkdir()
    (root / ".webnovel").symlink_to(outside)
    with pytest.raises(CommandError, match=r"拒绝写入：\.webnovel 是符号链接"):
        call_command("export_state", "doupo", "--write", stdout=io.StringIO())
    assert list(outside.iterdir()) == []


def test_output_onto_a_symlink_is_refused(book, tmp_path):
    victim = tmp_path / "victim.py"
    victim.write_text("SAFE = True\n", encoding="utf-8")
    (tmp_path / "state.json").symlink_to(victim)
    with pytest.raises(CommandError, match="拒绝写入：state.json 是符号链接"):
        call_command("export_state", "doupo", "--output", str(tmp_path / "state.json"), stdout=io.StringIO())
    assert victim.read_text(encoding="utf-8") == "SAFE = True\n"
