# What every store of the Host kit shares (the journals, delivery logs and
# Run bindings of both backends, and the SQLite checkpoint store, whose repr
# is its own): one database, ``_db`` (a ``_sqlite.Database``
# or a ``postgres._pg.Database``, which both say ``path``, ``read_only`` and
# ``closed``), named by ``path`` in errors and reprs, and closed by hand or
# as a context manager.

from __future__ import annotations

from typing import Any, Self

__all__ = ["Store"]


class Store:
    _db: Any
    _repr_read_only = True  # whether the repr says "read-only" (the bindings' never did)

    @property
    def path(self) -> str:
        """The database: a SQLite store's file, a PostgreSQL store's URL without its password."""
        return self._db.path

    @property
    def read_only(self) -> bool:
        """Whether the store was opened with ``read_only=True`` (writes raise ``ReadOnlyStoreError``)."""
        return self._db.read_only

    def close(self) -> None:
        """Close every connection; later calls raise ValueError. Closing twice is harmless."""
        self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = " closed" if self._db.closed else " read-only" if self._db.read_only and self._repr_read_only else ""
        return f"<{type(self).__name__} {self.path!r}{state}>"
