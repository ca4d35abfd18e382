"""The dictionary table the check asks instead of loading jieba (continuity/checks/lexicon.py): jieba's
own answers, from a sorted file in the data directory's cache, with no ``jieba.initialize``."""

import json
import os
import random
import subprocess
import sys
from pathlib import Path

from continuity.checks import lexicon
from continuity.checks.clauses import is_common_noun, is_function_char

REPO = Path(__file__).resolve().parents[2]


def _table(tmp_path: Path, lines: str, monkeypatch) -> None:
    source = tmp_path / "dict.txt"
    source.write_text(lines, encoding="utf-8")
    target = lexicon.lexicon_build(source=source, target=tmp_path / "cache" / "t.tsv")
    with target.open("rb") as f:
        monkeypatch.setattr(lexicon, "_MAP", lexicon.mmap.mmap(f.fileno(), 0, access=lexicon.mmap.ACCESS_READ))


def test_a_small_dictionary_is_sorted_and_its_last_line_of_a_word_wins(tmp_path, monkeypatch):
    _table(tmp_path, "禅杖 40 n\n将 900 d\n禅师 30 n\n禅杖 41 n\n禅 7 ng\n拂袖 12 v\n", monkeypatch)
    assert lexicon.entry("禅杖") == (41, "n")
    assert lexicon.entry("禅") == (7, "ng")
    assert lexicon.entry("禅杖子") is None
    assert lexicon.entry("拂") is None  # a prefix only: jieba's FREQ holds 0 for it
    assert lexicon.frequency("拂") == 0
    assert lexicon.tag("将") == "d"
    assert [w for w, _, _ in lexicon.prefixed("禅")] == ["禅", "禅师", "禅杖"]
    assert list(lexicon.prefixed("龘")) == []


def test_the_packaged_dictionary_answers_as_jieba_does():
    import jieba
    import jieba.posseg

    jieba.dt.check_initialized()
    freq, tags = jieba.dt.FREQ, jieba.posseg.dt.word_tag_tab
    sample = random.Random(27).sample(sorted(freq), 3000) + ["禅杖", "录音笔", "寒星剑", "将", "之", "婆娑", "拂袖"]
    for word in sample:
        assert lexicon.frequency(word) == (freq.get(word) or 0), word
        assert lexicon.tag(word) == tags.get(word, ""), word
    assert is_common_noun("禅杖") and not is_common_noun("寒星剑")
    assert is_function_char("将") and not is_function_char("林")


def test_a_common_noun_asked_in_a_fresh_process_loads_no_jieba_dictionary(tmp_path):
    code = (
        "import django, json, sys; django.setup()\n"
        "import jieba\n"
        "from continuity.checks import clauses\n"
        "answers = [clauses.is_common_noun(w) for w in ('禅杖', '寒星剑', '录音笔')]\n"
        "print(json.dumps({'answers': answers, 'initialized': jieba.dt.initialized, 'tagger': 'jieba.posseg' in sys.modules}))"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "webnovel.settings", "WEBNOVEL_DATA_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True)
    assert json.loads(done.stdout.splitlines()[-1]) == {
        "answers": [True, False, True],
        "initialized": False,
        "tagger": False,
    }
    import jieba

    names = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert [n.split("-")[:2] for n in names] == [["jieba", jieba.__version__]] * 2
    assert [n.rsplit(".", 1)[1] for n in names] == ["total", "tsv"]  # the table and jieba's total
