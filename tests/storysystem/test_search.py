import pytest

from kernel.exceptions import InvalidInput
from storysystem.models import ReferenceEntry
from storysystem.search import index_get, tokenize
from storysystem.selectors import reference_search
from storysystem.services import entry_save, references_import

pytestmark = pytest.mark.django_db


def test_tokenize_whole_terms_bigrams_and_latin():
    assert tokenize("玄幻退婚流|退婚流，打脸怎么写！ABC def") == [
        "玄幻退婚流",
        "玄幻",
        "幻退",
        "退婚",
        "婚流",
        "退婚流",
        "退婚",
        "婚流",
        "打脸怎么写",
        "打脸",
        "脸怎",
        "abc",
        "def",
    ]
    assert tokenize("爆") == ["爆"]
    assert tokenize("  ||  ") == []


def test_search_envelope_and_ranking_on_the_seed():
    result = reference_search(query="退婚打脸", max_results=3)
    assert list(result) == ["query", "filters", "max_results", "total", "results"]
    assert result["filters"] == {"table": None, "skill": None, "genre": None}
    assert result["total"] == 7
    assert [(r["rank"], r["code"]) for r in result["results"]] == [(1, "S-GR-001"), (2, "S-TR-002"), (3, "S-TR-001")]
    top = result["results"][1]
    assert top["table"] == "桥段套路" and top["library"] == "seed"
    assert top["keywords"] == ["打脸", "当众打脸", "反转"]
    assert top["matched_terms"] == ["打脸"]
    assert top["fields"]["桥段名称"] == "当众打脸"
    # 反套路变种 is content (kept as a field), never an anti-pattern
    assert top["fields"]["反套路变种"] == "主角不出手，让对手自己的话变成证据"
    assert "毒点" not in top["fields"]
    assert [a["text"] for a in top["anti_patterns"]] == ["打脸没有补刀", "对手认输太快", "旁观者没有反应"]
    assert {a["source_code"] for a in top["anti_patterns"]} == {"S-TR-002"}


def test_filters_by_table_skill_genre_and_max_results():
    assert [r["code"] for r in reference_search(query="打脸", table="桥段套路")["results"]] == ["S-TR-002"]
    assert [r["code"] for r in reference_search(query="对话")["results"]] == ["S-WT-001", "S-SP-003"]
    assert reference_search(query="对话", skill="init")["total"] == 0
    assert [r["code"] for r in reference_search(query="修仙", genre="仙侠")["results"]] == ["S-GR-002"]
    assert reference_search(query="境界", genre="都市")["total"] == 0
    two = reference_search(query="压抑一点后面爆", max_results=2)
    assert (two["total"], [r["code"] for r in two["results"]]) == (4, ["S-PA-001", "S-GR-014"])


def test_bad_search_input_is_a_clear_error():
    with pytest.raises(InvalidInput, match="检索词不能为空"):
        reference_search(query="  ")
    with pytest.raises(InvalidInput, match="max_results 必须在 1–100 之间"):
        reference_search(query="打脸", max_results=0)


def test_field_weights_intent_over_keywords_over_summary_over_detail(tmp_path):
    header = "编号,适用技能,分类,层级,关键词,意图与同义词,适用题材,大模型指令,核心摘要,详细展开\n"
    rows = {
        "W-DETAIL": ("无关文字", "无关文字", "无关文字", "青铜门"),
        "W-INTENT": ("无关文字", "青铜门", "无关文字", "无关文字"),
        "W-KEYWORD": ("青铜门", "无关文字", "无关文字", "无关文字"),
        "W-SUMMARY": ("无关文字", "无关文字", "青铜门", "无关文字"),
    }
    lines = [f"{code},write,测试,知识补充,{k},{i},全部,,{s},{d}\n" for code, (k, i, s, d) in rows.items()]
    (tmp_path / "权重测试.csv").write_text(header + "".join(lines), encoding="utf-8")
    references_import(directory=tmp_path, library="weights")
    result = reference_search(query="青铜门", table="权重测试")
    assert [r["code"] for r in result["results"]] == ["W-INTENT", "W-KEYWORD", "W-SUMMARY", "W-DETAIL"]


def test_index_is_rebuilt_when_an_entry_changes():
    before = index_get()
    assert reference_search(query="量子纠缠")["total"] == 0
    entry = ReferenceEntry.objects.get(table__library__name="seed", code="S-SY-003")
    entry.keywords += "|量子纠缠"
    entry_save(entry=entry)
    assert index_get() is not before
    assert [r["code"] for r in reference_search(query="量子纠缠")["results"]] == ["S-SY-003"]
    assert ReferenceEntry.objects.get(pk=entry.pk).raw[4] == "系统|任务系统|签到|量子纠缠"


def test_disabling_a_library_removes_it_from_search():
    from storysystem.models import ReferenceLibrary

    lib = ReferenceLibrary.objects.get(name="seed")
    lib.enabled = False
    lib.save()
    assert reference_search(query="退婚打脸")["total"] == 0


def test_refcsv_search_regressions(refcsv_only):
    """Queries in our own words against the full shared library (see bench/bench_storysystem.py)."""
    assert [r["code"] for r in reference_search(query="被退婚之后立下三年约定", max_results=3)["results"]] == [
        "TR-001",
        "GR-001",
        "SP-085",
    ]
    assert reference_search(query="拍卖竞价暗中较劲", max_results=1)["results"][0]["code"] == "SP-045"
    assert reference_search(query="每个角色说话口吻不一样", max_results=1)["results"][0]["code"] == "WT-001"
    only_tr = reference_search(query="拍卖", table="桥段套路", max_results=3)
    assert {r["table"] for r in only_tr["results"]} == {"桥段套路"}
    assert [r["code"] for r in only_tr["results"]] == ["TR-047", "TR-013", "TR-019"]


def test_refcsv_retrieval_hit_rates(refcsv_only):
    from bench.bench_storysystem import retrieval_check

    result = retrieval_check()
    assert (result["hit_at_1"], result["hit_at_3"]) == (0.8, 0.95)
