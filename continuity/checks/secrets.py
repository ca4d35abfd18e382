"""secret_early and pov_knowledge: a secret's keyword before the reader is told, or known by a
point-of-view character who is no knower."""

import bisect
import re
from dataclasses import dataclass
from typing import Any

from continuity.canon import CHARACTER, Canon
from continuity.checks.clauses import is_common_noun
from continuity.checks.common import KNOWS, WARNING, Mentions, finding
from continuity.draft import Draft


def _secret_known(secret, number: int) -> bool:
    if secret.reader_told_chapter is not None:
        return secret.reader_told_chapter <= number
    return bool(secret.reader_knows)


def _knowers(canon: Canon, secret, number: int) -> set[int]:
    pks = set()
    for entry in secret.known_to or []:
        name, since = (entry, None) if isinstance(entry, str) else (entry.get("name"), entry.get("since"))
        since = since if since is not None else secret.registered_chapter
        if since is not None and since > number:
            continue
        entity = canon.entity_of(str(name or ""), number=number) or canon.entity_of(str(name or ""), number=10**7)
        if entity is not None:
            pks.add(entity.pk)
    return pks


@dataclass(frozen=True)
class _Undeclared:
    """A point-of-view character the canon has no card for: no knower of any secret but by name."""

    name: str
    pk: None = None


def _named_knower(secret, name: str) -> bool:
    return any((entry if isinstance(entry, str) else entry.get("name")) == name for entry in secret.known_to or [])


def _is_name(canon: Canon, keyword: str, number: int) -> bool:
    """Whether the keyword is a name the reader already uses at ``number``: an entity's name or a
    (non-generic) alias inside its window."""
    entries = canon.matcher.names.get(keyword)
    if not entries:
        return False
    timeless = all(e[2] is None and e[3] is None for e in entries)
    if timeless and keyword in canon.name_keywords:
        return canon.name_keywords[keyword]
    value = any(not generic and pk in canon.entities for pk, _, generic in canon.matcher.candidates(keyword, number))
    if timeless:
        canon.name_keywords[keyword] = value
    return value


def _secret_evidence(canon: Canon, secret, keyword: str) -> dict[str, Any]:
    line = canon.source_line(secret.source_path, "reader_told") or canon.source_line(secret.source_path, keyword)
    return {"chapter": None, "file": secret.source_path, "line": line}


def _names_only(canon: Canon, secret, number: int) -> bool:
    """Whether every keyword of the secret is a name at ``number`` (then names are its only evidence)."""
    return all(_is_name(canon, k, number) for k in canon.keywords_of(secret))


def _cooccurring(draft: Draft, keyword: str, starts: list[int], keywords: list[str]) -> list[int]:
    """The hits of ``keyword`` in a sentence with another of ``keywords``."""
    out = []
    for start in starts:
        s_start, s_end = draft.sentence(start, start + len(keyword))
        sentence = draft.prose[s_start:s_end]
        if any(other != keyword and other in sentence for other in keywords):
            out.append(start)
    return out


def _keyword_hits(draft: Draft, canon: Canon) -> dict[str, list[int]]:
    """keyword → start offsets (non-overlapping, like ``re.finditer``), in one pass over the draft."""
    automaton = canon.secret_keywords()
    hits: dict[str, list[int]] = {}
    if automaton is None:
        return hits
    last_end: dict[str, int] = {}
    for end, keyword in automaton.iter(draft.prose):
        start = end - len(keyword) + 1
        if start < last_end.get(keyword, 0):
            continue
        last_end[keyword] = end + 1
        hits.setdefault(keyword, []).append(start)
    return hits


# a verb of knowing right after a name, after at most one character but a negation (方知, 亦知, 早晓得, 心知;
# not 不知, and not 只觉: feeling is no knowing)
KNOWING_AFTER_NAME = re.compile(r"^[^不未没无莫，。！？；：:“”「」、\n]?[知晓悟]")


def _shows_knowing(
    draft: Draft, start: int, end: int, cache: dict[tuple[int, int], bool], names: tuple[str, ...] = ()
) -> bool:
    """Whether the keyword at prose[start:end] is narrated (not quoted) in a sentence that shows knowing:
    a verb of knowing (知道, 心知), or one of ``names`` (the point of view's) heading a knowing verb in
    any register (苏婉方知, 杜衡亦知)."""
    value = cache.get((start, end))
    if value is None:
        if draft.in_quote(start):
            value = False
        else:
            s_start, s_end = draft.sentence(start, end)
            sentence = draft.prose[s_start:s_end]
            value = KNOWS.search(sentence) is not None or any(
                KNOWING_AFTER_NAME.match(sentence[at + len(name) :])
                for name in names
                for at in _finds(sentence, name)
                if not draft.in_quote(s_start + at)
            )
        cache[(start, end)] = value
    return value


def _finds(text: str, word: str) -> list[int]:
    out, at = [], text.find(word)
    while at != -1:
        out.append(at)
        at = text.find(word, at + len(word))
    return out


COPULAS = frozenset("是乃为即")


def _subjects(canon: Canon, keyword: str) -> frozenset[str]:
    """Every name of the characters whose identity the secrets of ``keyword`` are: a title that says a
    character is the keyword (裴元是宇文通安插在云阳的细作: who the 细作 is). Empty when a secret of it
    says anything else (潘金莲以砒霜毒杀武大郎: the 砒霜 itself is the secret)."""
    cache = canon.__dict__.setdefault("_secret_subjects", {})
    if keyword not in cache:
        names: set[str] = set()
        for index in canon.keyword_owners.get(keyword, []):
            title = (canon.secrets[index].title or "").rstrip("。！.")
            subject = next(
                (
                    entity
                    for entity in canon.entities.values()
                    if entity.type == CHARACTER
                    and any(
                        title.startswith(n) and title[len(n) : len(n) + 1] in COPULAS
                        for n in entity.names
                        if len(n) >= 2
                    )
                ),
                None,
            )
            if subject is None or not title.endswith(keyword):
                names = set()
                break
            names.update(n for n in subject.names if len(n) >= 2)
        cache[keyword] = frozenset(names)
    return cache[keyword]


def _about_subject(draft: Draft, mentions: Mentions, keyword: str, starts: list[int], subjects) -> list[int]:
    """The hits of a common-noun keyword (细作, 内应) in a sentence that names whom its secret is about:
    军中必有细作 says there is one, not who (the secret)."""
    kept = []
    spans, firsts = mentions.spans, [s for s, _, _ in mentions.spans]
    for start in starts:
        s_start, s_end = draft.sentence(start, start + len(keyword))
        k = bisect.bisect_left(firsts, s_start)
        while k < len(spans) and spans[k][1] <= s_end:
            if spans[k][2] in subjects:
                kept.append(start)
                break
            k += 1
    return kept


def check_secrets(draft: Draft, canon: Canon, mentions: Mentions) -> list[dict]:
    """A keyword of a secret the reader is not told yet (secret_early); a keyword the point-of-view
    character shows knowledge of without being a knower (pov_knowledge).

    A keyword that is only a character's (or a place's …) name says who or where a secret is about,
    not what it is: 东方易勇 in a chapter does not tell that 东方易勇身怀异宝. Such a name counts
    only for a secret whose keywords are all names, and then only in a sentence with another of them."""
    chapter = mentions.chapter
    found = []
    pov = mentions.who(draft.perspective) if draft.perspective else None
    if pov is None and draft.perspective:
        # a point of view without a card is no declared knower (known_to names knowers; it may name
        # this one without a card)
        pov = _Undeclared(draft.perspective)
    hits = _keyword_hits(draft, canon)
    for keyword in [k for k in hits if is_common_noun(k)]:
        subjects = _subjects(canon, keyword)
        if subjects:
            hits[keyword] = _about_subject(draft, mentions, keyword, hits[keyword], subjects)
            if not hits[keyword]:
                del hits[keyword]
    pov_names = tuple(n for n in getattr(pov, "names", None) or ((pov.name,) if pov else ()) if len(n) >= 2)
    # keyword → (first evidence offset, count, evidence, the indexes of the secrets it leaks): one finding per keyword
    early: dict[str, tuple[int, int, dict[str, Any], list[int]]] = {}
    knowers: dict[int, set[int]] = {}
    shows: dict[tuple[int, int], bool] = {}  # (start, end) → _shows_knowing, the same for every secret of a keyword
    told_at = canon.told_at()
    for keyword in sorted(hits, key=lambda k: canon.keyword_owners[k][0]):
        owners = canon.keyword_owners[keyword]
        if pov is None:
            # without a point of view only the secrets the reader does not know yet matter
            owners = [index for index in owners if told_at[index] > chapter]
            if not owners:
                continue
        name = _is_name(canon, keyword, chapter)
        if not name:
            # the common case, without a Python step per secret: every secret the reader does not know
            # yet leaks at every hit (the first one's evidence); the known ones matter only for a point of view
            unknown = owners if pov is None else [index for index in owners if told_at[index] > chapter]
            if unknown:
                early[keyword] = (
                    hits[keyword][0],
                    len(hits[keyword]),
                    _secret_evidence(canon, canon.secrets[unknown[0]], keyword),
                    unknown,
                )
            if pov is None or len(unknown) == len(owners):
                continue
        for index in owners:
            secret = canon.secrets[index]
            reader_knows = told_at[index] <= chapter
            starts = hits[keyword]
            if not name and not reader_knows:
                continue  # already in ``early``
            if name:
                if not _names_only(canon, secret, chapter):
                    continue
                starts = _cooccurring(draft, keyword, starts, canon.keywords_of(secret))
                if not starts:
                    continue
            if not reader_knows:
                if keyword in early:
                    early[keyword][3].append(index)
                else:
                    early[keyword] = (starts[0], len(starts), _secret_evidence(canon, secret, keyword), [index])
                continue
            for start in starts:
                end = start + len(keyword)
                if not _shows_knowing(draft, start, end, shows, pov_names):
                    continue
                if index not in knowers:
                    knowers[index] = _knowers(canon, secret, chapter)
                if pov.pk in knowers[index] or (pov.pk is None and _named_knower(secret, pov.name)):
                    break
                evidence = _secret_evidence(canon, secret, keyword)
                evidence["line"] = canon.source_line(secret.source_path, "known_to")
                evidence["fact"] = f"{secret.secret_id}「{secret.title}」的知情者不含 {pov.name}（截至第{chapter}章）"
                found.append(
                    finding(
                        kind="pov_knowledge",
                        severity=WARNING,
                        draft=draft,
                        start=start,
                        end=end,
                        term=keyword,
                        message=f"视角人物 {pov.name} 尚不知 {secret.secret_id}，叙述却显出知情",
                        evidence=evidence,
                        suggestion=f"改为{pov.name}的猜测或由知情者说出，或在信息差的 known_to 中补上 {pov.name}",
                    )
                )
    for keyword, (start, count, evidence, indexes) in early.items():
        key = (keyword, tuple(indexes))
        texts = canon.leak_texts.get(key)
        if texts is None:
            secrets = [canon.secrets[index] for index in indexes]
            texts = canon.leak_texts[key] = (
                "、".join(secret.secret_id for secret in secrets),
                "；".join(
                    f"{secret.secret_id}「{secret.title}」读者得知于"
                    + (f"第{secret.reader_told_chapter}章" if secret.reader_told_chapter else "（尚未安排）")
                    for secret in secrets
                ),
            )
        ids, evidence["fact"] = texts
        found.append(
            finding(
                kind="secret_early",
                severity=WARNING,
                draft=draft,
                start=start,
                end=start + len(keyword),
                term=keyword,
                message=f"关键词「{keyword}」泄露信息差 {ids}，读者此时尚不知情（本章 {count} 处）",
                evidence=evidence,
                suggestion="删去或改写关键词；若本章就是揭晓之章，请更新信息差的 reader_told",
            )
        )
    return found
