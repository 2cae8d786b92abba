"""One page of rows, as the reference pages every list: sort keys, directions, id markers."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from oslo_db.sqlalchemy import utils as oslo_utils
from sqlalchemy import orm

from masakari import exception

# A page is read as plain rows (the table's columns, attribute access by column name), not
# ORM instances: no identity map nor instance state per row, about 3x less work for a list.
Row = sa.Row[Any]

DEFAULT_SORT_KEYS = ("created_at", "id")
DEFAULT_SORT_DIR = "desc"
SORT_DIRS = ("asc", "desc")

_INTEGER = re.compile(r"[+-]?\d+")
_MAX_ID = 2**63 - 1


def sort_params(sort_keys: Sequence[str], sort_dirs: Sequence[str]) -> tuple[list[str], list[str]]:
    """Complete the client's keys with created_at and id, directions with the first one given.

    InvalidInput for an unknown direction or more directions than keys (the reference's
    messages).
    """
    default_dir = sort_dirs[0] if sort_dirs else DEFAULT_SORT_DIR
    keys = list(sort_keys)
    for sort_dir in sort_dirs:
        if sort_dir not in SORT_DIRS:
            raise exception.InvalidInput(reason="Unknown sort direction, must be 'asc' or 'desc'")
    dirs = list(sort_dirs) if sort_dirs else [default_dir for _ in keys]
    while len(dirs) < len(keys):
        dirs.append(default_dir)
    if len(dirs) > len(keys):
        raise exception.InvalidInput(reason="Sort direction size exceeds sort key size")
    for key in DEFAULT_SORT_KEYS:
        if key not in keys:
            keys.append(key)
            dirs.append(default_dir)
    return keys, dirs


Criteria = Sequence[tuple[str, Any]]
"""(name, condition): the name stands for the condition's form, whose values are bound
parameters, so that the statement of a list can be built once per form and reused."""

# Built statements of pages without a marker, by (model, criteria names, keys, directions);
# building and hashing a statement costs more than running it for a small page. Bounded:
# sort keys come from clients.
_STATEMENTS: dict[tuple[Any, ...], sa.Select[Any]] = {}
_STATEMENTS_MAX = 512
_LIMIT = sa.bindparam("page_limit", type_=sa.Integer)


def paginate(
    session: orm.Session,
    model: Any,
    criteria: Criteria,
    params: Mapping[str, Any],
    sort_keys: Sequence[str],
    sort_dirs: Sequence[str],
    limit: int | None,
    marker: str | None,
) -> list[Row]:
    """One page of live rows matching ``criteria`` (``params`` give their bound values),
    after the row whose id is ``marker``.

    The reference's order of checks: limit 0 answers at once, then the directions, then
    the marker (any live row of the table, whatever the criteria), then the keys, which
    must be columns. Ordering and the marker condition are oslo.db's paginate_query.
    """
    if limit == 0:
        return []
    keys, dirs = sort_params(sort_keys, sort_dirs)
    marker_row = None
    if marker is not None:
        marker_row = _marker_row(session, model, marker)
    columns = _column_names(model)
    for key in keys:
        if key not in columns:
            # The reference also takes relationships here, and then fails with a 500.
            raise exception.InvalidSortKey(
                message="InvalidSortKey({!r})".format(f"Sort key supplied is invalid: {key}")
            )
    values = dict(params)
    if limit is not None:
        values["page_limit"] = limit
    # Through the session's connection: the session would wrap each row for the ORM first,
    # which costs more than fetching it.
    connection = session.connection()
    if marker_row is not None:
        # The marker's values are literals in the statement: not worth keeping.
        return list(
            connection.execute(
                _statement(model, criteria, keys, dirs, marker_row, limit), values
            ).all()
        )
    cache_key = (
        model,
        tuple(name for name, _ in criteria),
        tuple(keys),
        tuple(dirs),
        limit is None,
    )
    statement = _STATEMENTS.get(cache_key)
    if statement is None:
        statement = _statement(model, criteria, keys, dirs, None, limit)
        if len(_STATEMENTS) >= _STATEMENTS_MAX:
            _STATEMENTS.clear()
        _STATEMENTS[cache_key] = statement
    return list(connection.execute(statement, values).all())


def _statement(
    model: Any,
    criteria: Criteria,
    keys: Sequence[str],
    dirs: Sequence[str],
    marker_row: Any,
    limit: int | None,
) -> sa.Select[Any]:
    table: Any = model
    query = sa.select(*_columns(model)).where(
        table.deleted == 0, *(condition for _, condition in criteria)
    )
    # paginate_query only calls order_by and filter, which a Core select has too.
    query = oslo_utils.paginate_query(
        query, model, None, list(keys), marker=marker_row, sort_dirs=list(dirs)
    )
    if marker_row is not None:
        query = query.where(*_first_key_bound(model, keys[0], dirs[0], marker_row))
    return query if limit is None else query.limit(_LIMIT)


def _first_key_bound(model: Any, key: str, direction: str, marker_row: Any) -> list[Any]:
    """The first sort key's range implied by paginate_query's marker condition.

    Its condition is an OR (first key beyond the marker's, or equal and the next key
    beyond...), which no database turns into an index range: a page deep in a big table
    then reads every row before the marker. The same rows satisfy this bound, which an
    index on the key (or on the list's filters, then the key) can seek to. A null marker
    value has no bound; booleans are compared cast by paginate_query, and not bounded.
    """
    value = getattr(marker_row, key)
    column = getattr(model, key)
    if value is None or isinstance(column.type, sa.Boolean):
        return []
    return [column <= value if direction == "desc" else column >= value]


@functools.cache
def _columns(model: Any) -> tuple[Any, ...]:
    # An enum column is read as the string it holds: its result processor only looks the
    # string up again, per row.
    return tuple(
        sa.type_coerce(column, sa.String).label(column.name)
        if isinstance(column.type, sa.Enum)
        else column
        for column in sa.inspect(model).local_table.columns
    )


@functools.cache
def _column_names(model: Any) -> frozenset[str]:
    return frozenset(sa.inspect(model).columns.keys())


def _marker_row(session: orm.Session, model: Any, marker: str) -> Any:
    # An id compared with a string matches nothing on PostgreSQL and the digits on SQLite:
    # only an integer literal can name a row.
    row = None
    if _INTEGER.fullmatch(marker) and abs(int(marker)) <= _MAX_ID:
        row = session.execute(
            sa.select(*_columns(model)).where(model.id == int(marker), model.deleted == 0)
        ).first()
    if row is None:
        raise exception.MarkerNotFound(marker=marker)
    return row
