"""The one base of every error Draftbench raises on purpose. It sits in the bottom layer, importing
nothing, so any package can derive from it; the command line catches it to print one line (and
an exception outside it is a bug, answered with a hint to rerun with --debug)."""


class DraftbenchError(Exception):
    """An error Draftbench raises on purpose, with a message meant for the user."""
