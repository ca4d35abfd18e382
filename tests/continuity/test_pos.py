"""jieba's part-of-speech cut answered from the lexicon (continuity/checks/pos.py): the same words and
tags as ``jieba.posseg.lcut``, with neither jieba's tag table nor its prefix dictionary loaded."""

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

from continuity.checks import pos

REPO = Path(__file__).resolve().parents[2]


def _stretches() -> list[str]:
    """Clauses and short random stretches (1-12 characters, as the check asks) of three texts, plus
    Latin letters, digits, spaces and line breaks."""
    rng = random.Random(27)
    out = {"U盘里有0点13分的录像", "K神F级，林默", "3.14abc 林默 说", "a b\r\nc", "B超", "", "林冲提着哨棒赶将去"}
    for name in ("shuihu.py", "qingya.txt", "lingdian.txt"):
        text = (REPO / "bench" / "check_sets" / name).read_text(encoding="utf-8")
        out.update(p[:30] for p in re.split(r"[，。！？；：“”「」\n]", text)[:800] if p)
        for _ in range(800):
            k = rng.randrange(len(text))
            out.add(text[k : k + rng.randint(1, 12)])
    return sorted(out)


def test_the_cut_is_jiebas_word_for_word_and_tag_for_tag():
    import jieba.posseg

    stretches = _stretches()
    assert len(stretches) > 3000
    differ = [s for s in stretches if pos.pos_cut(s) != [(p.word, p.flag) for p in jieba.posseg.lcut(s)]]
    assert differ == []
    # a few known cuts: dictionary words, a run the HMM reads, letters and digits
    assert pos.pos_cut("提刀上马") == [(p.word, p.flag) for p in jieba.posseg.lcut("提刀上马")]
    assert ("哨棒", "n") in pos.pos_cut("林冲提着哨棒赶将去")
    assert pos.pos_cut("F级") == [("F", "eng"), ("级", "q")]


def test_the_expressions_are_jiebas():
    import jieba.posseg

    for mine, theirs in [
        (pos.RE_HAN_DETAIL, jieba.posseg.re_han_detail),
        (pos.RE_SKIP_DETAIL, jieba.posseg.re_skip_detail),
        (pos.RE_HAN_INTERNAL, jieba.posseg.re_han_internal),
        (pos.RE_SKIP_INTERNAL, jieba.posseg.re_skip_internal),
        (pos.RE_ENG, jieba.posseg.re_eng),
        (pos.RE_NUM, jieba.posseg.re_num),
    ]:
        assert mine.pattern == theirs.pattern


def test_the_total_is_jiebas():
    import jieba

    jieba.dt.check_initialized()
    from continuity.checks import lexicon

    assert lexicon.total() == jieba.dt.total


def test_a_cut_in_a_fresh_process_loads_neither_the_tagger_nor_the_prefix_dictionary(tmp_path):
    code = (
        "import django, json, sys; django.setup()\n"
        "from continuity.checks import clauses\n"
        "answers = [clauses.has_verb('抡起'), clauses.has_verb('看着'), clauses.is_personal_name('宋江')]\n"
        "import jieba\n"
        "print(json.dumps({'answers': answers, 'initialized': jieba.dt.initialized,"
        " 'tagger': 'jieba.posseg' in sys.modules}))"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "webnovel.settings", "WEBNOVEL_DATA_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {
        "answers": [True, False, True],
        "initialized": False,
        "tagger": False,
    }
