"""Plain-row writes for the bulk paths (rebuild, memory derivation, mention scan).

Why not ``bulk_create`` / ``bulk_update``: for tens of thousands of rows they spend most of their
time building model instances and compiling SQL value by value (``bulk_update`` builds one
``CASE WHEN`` per field per batch), several seconds for a 3,000-chapter book. These helpers issue
one ``executemany`` per batch instead. They apply no Python-side defaults, fire no signals and set
no ``auto_now`` fields: the caller gives every value, and a missing column fails loudly.
"""

from django.db import connection, models

BATCH = 2000


def _adapters(fields: list[models.Field]) -> list[tuple[int, object]]:
    """(position, adapter) for the values that the driver cannot take as they are."""
    ops = connection.ops
    out = []
    for i, f in enumerate(fields):
        if isinstance(f, models.JSONField):
            out.append((i, lambda v, enc=f.encoder: ops.adapt_json_value(v, enc)))
        elif isinstance(f, models.DateTimeField):
            out.append((i, ops.adapt_datetimefield_value))
    return out


def _params(fields: list[models.Field], rows: list[dict], names: list[str]) -> list[list]:
    adapters = _adapters(fields)
    params = []
    for row in rows:
        values = [row[name] for name in names]
        for i, adapt in adapters:
            values[i] = adapt(values[i])
        params.append(values)
    return params


def _executemany(sql: str, params: list[list]) -> None:
    with connection.cursor() as cursor:
        for start in range(0, len(params), BATCH):
            cursor.executemany(sql, params[start : start + BATCH])


def rows_insert(model: type[models.Model], rows: list[dict]) -> int:
    """INSERT plain rows (dicts keyed by attname, e.g. ``book_id``) with one executemany per batch.
    Every concrete column but the primary key must be given."""
    if not rows:
        return 0
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    names = [f.attname for f in fields]
    missing = set(names) - set(rows[0])
    if missing:
        raise ValueError(f"rows_insert({model.__name__}): missing columns {sorted(missing)}")
    qn = connection.ops.quote_name
    sql = (
        f"INSERT INTO {qn(model._meta.db_table)} ({', '.join(qn(f.column) for f in fields)}) "
        f"VALUES ({', '.join(['%s'] * len(fields))})"
    )
    _executemany(sql, _params(fields, rows, names))
    return len(rows)


def rows_update(model: type[models.Model], rows: list[dict], fields: list[str]) -> int:
    """UPDATE the ``fields`` (attnames) of rows identified by their primary key (``"pk"`` in each
    row), with one executemany per batch."""
    if not rows:
        return 0
    meta = model._meta
    targets = [meta.get_field(name) for name in fields]
    qn = connection.ops.quote_name
    sql = (
        f"UPDATE {qn(meta.db_table)} SET {', '.join(f'{qn(f.column)} = %s' for f in targets)} "
        f"WHERE {qn(meta.pk.column)} = %s"
    )
    params = _params(targets, rows, [f.attname for f in targets])
    for values, row in zip(params, rows, strict=True):
        values.append(row["pk"])
    _executemany(sql, params)
    return len(rows)
