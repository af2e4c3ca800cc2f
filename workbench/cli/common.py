"""What every verb shares: the one-line error, the parser class, the database and file openers, tables."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, NoReturn, TextIO, TypeAlias

from workbench import paths
from workbench.errors import DraftbenchError

if TYPE_CHECKING:  # the store loads only when a verb opens a database, so `--help` stays fast
    from workbench.store import Database


class CliError(DraftbenchError):
    """A one-line message for the user; exit status 2."""


class Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one line (the usage itself stays behind --help)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see --help)\n")


# What each verb module's `register` adds its verb to: the subcommands of a Parser.
Verbs: TypeAlias = "argparse._SubParsersAction[Parser]"


def append(path: str, what: str) -> TextIO:
    try:
        return open(path, "a", buffering=1, encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot write the {what} file {path}: {exc.strerror}") from None


def open_db(db: str | None, readonly: bool = False) -> Database:
    # Deferred: the store pulls in sqlite_utils, which `--help` and `--version` do not need.
    from workbench import store

    try:
        return store.open_db(db or paths.default_db(), readonly=readonly)
    except store.StoreError as exc:
        raise CliError(str(exc)) from None


def table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(lines)
