"""docs/api.md and docs/cli.md document every read interface with its REST path and an example."""

from kernel.interfaces import interfaces_load
from tests.conftest import REPO

API = (REPO / "docs" / "api.md").read_text(encoding="utf-8")
CLI = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")


def test_api_md_has_a_section_with_request_and_response_for_every_interface():
    registry = interfaces_load()
    missing = []
    for name in sorted(registry):
        spec = registry[name]
        start = API.find(f"#### `{name}` — ")
        section = API[start : API.find("\n#### ", start + 1)]
        if start < 0 or spec.rest.split(" ", 1)[1] not in section or f"story {name} demo-book" not in section:
            missing.append(name)
        elif "```json" not in section and "```text" not in section:
            missing.append(name)
    assert missing == []


def test_cli_md_lists_every_interface():
    assert [name for name in sorted(interfaces_load()) if f"`story {name} <book>" not in CLI] == []


def test_openapi_documents_every_read_path(client, db):
    assert client.get("/api/docs").status_code == 200
    paths = client.get("/api/openapi.json").json()["paths"]
    registry = interfaces_load()
    expected = {spec.rest.split(" ", 1)[1] for spec in registry.values()}
    documented = {p.replace("{int:", "{") for p in paths}
    assert sorted(expected - documented) == []
