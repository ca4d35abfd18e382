"""A selector module for tests/kernel/test_interfaces.py (declared by its dotted path)."""


def probe(*, book: object) -> dict[str, bool]:
    return {"probe": book is None}
