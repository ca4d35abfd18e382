"""The Claude Code plugin in plugin/ and the marketplace at the repository's root: the manifests, the MCP server
entry (the installed ``webnovel-mcp``, not a path into a checkout: a marketplace install copies plugin/ alone),
skills named as Claude Code names them (``webnovel:<folder>``) and texts that name only real tools with real
arguments (read from the tools' schemas: a renamed tool or argument breaks this, not an author's session)."""

import json
import re

import pytest
import yaml

from agents.server import Access, tools_for
from tests.conftest import REPO

PLUGIN = REPO / "plugin"
SKILLS = ("prepare", "check", "finalize", "extract", "ingest", "query", "import", "curation")
SPAN = re.compile(r"`([^`\n]+)`")
TOOL_NAME = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)+")


@pytest.fixture(scope="module")
def schemas() -> dict[str, set[str]]:
    """Every tool the stdio server offers (reads and writes) → the names of its arguments."""
    tools = tools_for(Access(book=lambda: None, write=True))
    return {t.name: set(t.input_schema.get("properties", {})) for t in tools}


def test_the_marketplace_lists_the_plugin_folder():
    market = json.loads((REPO / ".claude-plugin" / "marketplace.json").read_text(encoding="utf-8"))
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text(encoding="utf-8"))
    (entry,) = market["plugins"]
    assert (market["name"], entry["name"], entry["source"]) == ("webnovel", "webnovel", "./plugin")
    assert (manifest["name"], manifest["version"], manifest["license"]) == ("webnovel", entry["version"], "MIT")
    assert (PLUGIN / "LICENSE").read_text(encoding="utf-8") == (REPO / "LICENSE").read_text(encoding="utf-8")


def test_the_server_entry_runs_the_console_script_of_the_package():
    server = json.loads((PLUGIN / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"]["webnovel"]
    assert server == {"command": "webnovel-mcp", "args": ["--book", "${WEBNOVEL_BOOK:-demo-book}"]}
    assert "CLAUDE_PLUGIN_ROOT" not in json.dumps(server)  # nothing outside the copied folder


def _head(name: str) -> tuple[dict, str]:
    text = (PLUGIN / "skills" / name / "SKILL.md").read_text(encoding="utf-8")
    return yaml.safe_load(text.split("---")[1]), text


def test_skills_are_named_after_their_folders_and_point_at_each_other_by_claude_code_s_names():
    assert sorted(p.parent.name for p in (PLUGIN / "skills").glob("*/SKILL.md")) == sorted(SKILLS)
    pointed = set()
    for name in SKILLS:
        head, text = _head(name)
        assert head["name"] == name and len(head["description"]) > 20
        pointed |= set(re.findall(r"`webnovel:([a-z-]+)`", text))
        assert not re.findall(r"`webnovel-(?:" + "|".join(SKILLS) + r")`", text)  # the names Claude Code lacks
    assert pointed <= set(SKILLS) and {"prepare", "finalize", "extract", "ingest", "curation"} <= pointed


def _top_keys(span: str) -> list[str]:
    """The keys of a JSON object (or a fragment like ``"task": "review"``) at its outermost level."""
    depth, keys = 0, []
    base = 1 if span.lstrip().startswith("{") else 0
    for match in re.finditer(r'[{}]|"(\w+)"\s*:', span):
        if match.group(0) == "{":
            depth += 1
        elif match.group(0) == "}":
            depth -= 1
        elif depth == base:
            keys.append(match.group(1))
    return keys


def skill_mistakes(text: str, schemas: dict[str, set[str]]) -> list[str]:
    """Tools a skill names that the server lacks, and arguments given to a tool that it does not take.

    The arguments of a tool are the JSON keys in the code spans after it, up to the next tool named, within one
    paragraph or list item (a blank line or a new item at the margin ends it)."""
    mistakes, tool = [], None
    for line in text.splitlines():
        if not line.strip() or re.match(r"(\d+\.|-|\|) ", line):
            tool = None
        for span in SPAN.findall(line):
            if span in schemas or (TOOL_NAME.fullmatch(span) and not span.startswith("webnovel-")):
                if span not in schemas:
                    mistakes.append(f"没有这个工具：{span}")
                tool = span
            elif '":' in span and tool in schemas:
                mistakes += [f"{tool} 没有参数 {key}" for key in _top_keys(span) if key not in schemas[tool]]
    return mistakes


def test_the_checker_catches_a_wrong_argument_and_a_wrong_tool(schemas):
    assert skill_mistakes('调用 `context`，参数 `{"number": 5}`；太长时给 `{"budget": 3000}`。', schemas) == [
        "context 没有参数 budget"
    ]
    assert skill_mistakes(
        '`thread-lists` 与 `pending-reject` `{"pk": 1, "note": "x", "extra": {"a": 1}}`', schemas
    ) == [
        "没有这个工具：thread-lists",
        "pending-reject 没有参数 extra",
    ]


def test_every_skill_names_only_real_tools_with_real_arguments(schemas):
    found = {name: skill_mistakes(_head(name)[1], schemas) for name in SKILLS}
    assert {name: m for name, m in found.items() if m} == {}
    prepare = _head("prepare")[1]
    assert '"budget_tokens": 3000' in prepare and "`budget`" not in prepare


def test_the_extract_skill_points_at_the_schema():
    text = (PLUGIN / "skills" / "extract" / "SKILL.md").read_text(encoding="utf-8")
    assert "docs/extraction.schema.json" in text and "extraction-ingest" in text
