"""`draftbench`: the desktop app with no arguments, headless commands otherwise. The parser is
assembled in workbench.cli.entry from one module per verb; each module's `register` adds its verb
and the handler."""

from workbench.cli.common import CliError, Parser
from workbench.cli.entry import _parser, _resolve_db, main

__all__ = ["CliError", "Parser", "_parser", "_resolve_db", "main"]
