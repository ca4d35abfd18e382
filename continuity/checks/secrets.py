"""secret_early and pov_knowledge: a secret's keyword before the reader is told, or known by a
point-of-view character who is no knower."""

from dataclasses import dataclass
from typing import Any

from continuity.canon import Canon
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


def _shows_knowing(draft: Draft, start: int, end: int, cache: dict[tuple[int, int], bool]) -> bool:
    """Whether the keyword at prose[start:end] is narrated (not quoted) in a sentence that shows knowing."""
    value = cache.get((start, end))
    if value is None:
        if draft.in_quote(start):
            value = False
        else:
            s_start, s_end = draft.sentence(start, end)
            value = KNOWS.search(draft.prose[s_start:s_end]) is not None
        cache[(start, end)] = value
    return value


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
                if not _shows_knowing(draft, start, end, shows):
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
