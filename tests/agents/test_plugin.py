"""The Claude Code plugin in plugin/: its manifest, its MCP server entry, and skills that only name
tools the server has (a renamed tool breaks this, not an author's session)."""

import json
import re

import yaml

from agents.writes import write_tools
from kernel.interfaces import interfaces_load
from tests.conftest import REPO

PLUGIN = REPO / "plugin"
SKILLS = ("prepare", "check", "finalize", "extract", "ingest", "query", "import", "curation")


def test_the_manifest_and_the_stdio_server_entry():
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text(encoding="utf-8"))
    assert manifest["name"] == "webnovel"
    server = json.loads((PLUGIN / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"]["webnovel"]
    assert server["args"][:3] == ["${CLAUDE_PLUGIN_ROOT}/../manage.py", "mcp", "--book"]
    assert (REPO / "manage.py").is_file()


def test_every_skill_has_front_matter_and_names_only_real_tools():
    tools = set(interfaces_load()) | set(write_tools())
    found = sorted(p.parent.name for p in (PLUGIN / "skills").glob("*/SKILL.md"))
    assert found == sorted(SKILLS)
    unknown = {}
    for name in SKILLS:
        text = (PLUGIN / "skills" / name / "SKILL.md").read_text(encoding="utf-8")
        head = yaml.safe_load(text.split("---")[1])
        assert head["name"] == f"webnovel-{name}" and len(head["description"]) > 20
        named = {m for m in re.findall(r"`([a-z][a-z0-9]*(?:-[a-z0-9]+)+)`", text) if not m.startswith("webnovel-")}
        if named - tools:
            unknown[name] = sorted(named - tools)
    assert unknown == {}


def test_the_extract_skill_points_at_the_schema():
    text = (PLUGIN / "skills" / "extract" / "SKILL.md").read_text(encoding="utf-8")
    assert "docs/extraction.schema.json" in text and "extraction-ingest" in text
