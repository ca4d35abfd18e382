"""``manage.py pending``: the curator's queue from the command line, through the same services as REST
and the admin (the roster written, the rejection file, merge), many items at once by pk or by band."""

import io
import json
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError

from bookfiles.rebuilder import book_rebuild
from entities.discovery.services import REJECTED, ROSTER, book_discover, rejected_read
from entities.models import Entity, PendingItem
from tests.entities.test_discovery import _queued, synth  # noqa: F401 — the fixture


def run(*args) -> str:
    out = io.StringIO()
    call_command("pending", "synth", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_list_confirm_many_and_reject_write_the_folder(synth):  # noqa: F811
    book_discover(book=synth, min_count=3, types=["角色"])
    queued = _queued(synth)
    rows = json.loads(run("list", "--json"))
    assert {r["pk"] for r in rows} == {i.pk for i in queued.values()}
    text = run("list")
    assert f"#{queued['林青云'].pk}\tentity_discovered\t林青云\t置信度" in text
    # two at once, by pk: both become roster entries (the service's line-by-line write)
    result = json.loads(run("confirm", str(queued["林青云"].pk), str(queued["苏婉儿"].pk), "--json"))
    assert result == {"done": 2, "failed": 0, "errors": []}
    roster = yaml.safe_load((Path(synth.root) / ROSTER).read_text(encoding="utf-8"))
    assert {"林青云", "苏婉儿"} <= {e["name"] for e in roster["角色"]}
    # a second confirm of the same item fails with the service's Chinese reason, the rest goes on
    again = run("confirm", str(queued["林青云"].pk), str(queued["赵铁山"].pk))
    assert (
        "成功 1 项，失败 1 项" in again and f"#{queued['林青云'].pk}: 待确认项 #{queued['林青云'].pk} 已处理" in again
    )
    run("reject", str(queued["王大人"].pk))
    assert [r["name"] for r in rejected_read(root=Path(synth.root))] == ["王大人"]
    assert (Path(synth.root) / REJECTED).is_file()
    assert PendingItem.objects.get(pk=queued["王大人"].pk).status == "rejected"


@pytest.mark.django_db
def test_by_band_merge_and_confirm_as(synth):  # noqa: F811
    book_discover(book=synth, min_count=3, types=["角色"])
    queued = _queued(synth)
    bands = {i.payload["band"] for i in queued.values()}
    band = sorted(bands)[0]
    in_band = {i.pk for i in queued.values() if i.payload["band"] == band}
    listed = json.loads(run("list", "--band", band, "--json"))
    assert {r["pk"] for r in listed} == in_band
    # no pk and no band: refused, nothing done
    with pytest.raises(CommandError, match="请给出待确认项编号"):
        run("reject")
    merged = json.loads(run("merge", str(queued["林青云"].pk), str(queued["苏婉儿"].pk), "--json"))
    assert merged["merged"] and PendingItem.objects.get(pk=merged["merged"][0]).status == "rejected"
    with pytest.raises(CommandError, match="合并需要至少选择两个"):
        run("merge", str(queued["赵铁山"].pk))
    with pytest.raises(CommandError, match="不存在"):
        run("confirm", "999999")
    # confirm-as an existing entity: the proposal's names become its aliases
    run("confirm", str(merged["pk"]))
    assert book_rebuild(root=Path(synth.root))["ok"]
    target = PendingItem.objects.get(pk=merged["pk"]).payload["name"]
    rest = json.loads(run("confirm-as", target, str(queued["赵铁山"].pk), "--json"))
    assert rest["done"] == 1
    entity = Entity.objects.get(book=synth, canonical_name=target)
    assert "赵铁山" in set(entity.aliases.values_list("alias", flat=True))
    # the rest of the band, at once
    still = PendingItem.objects.filter(book=synth, status="pending", pk__in=in_band).count()
    left = json.loads(run("reject", "--band", band, "--json"))
    assert left == {"done": still, "failed": 0, "errors": []}
    assert not PendingItem.objects.filter(book=synth, status="pending", pk__in=in_band).exists()
