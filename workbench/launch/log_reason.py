"""Why vLLM stopped, read from its output."""

from __future__ import annotations

import re

# Lines that say why vLLM stopped, most specific first: asked only after the engine's own fatal
# error and the last traceback (see reason_from_log).
_REASONS = [re.compile(p) for p in (
    r"(?:ValueError|RuntimeError|TypeError|KeyError|OSError|AssertionError|pydantic[\w.]*ValidationError)[:\s].*",
    r"Address already in use.*",
    r"ERROR .*",
)]
# Lines that only mention an error: whatever is logged as a warning (vLLM's level field, Python's
# logging and warnings, torch's `[W...]`) and advice. On a host whose fd limit cannot be raised
# vLLM warns at start-up that this "can cause fd limit errors like `OSError: [Errno 24] Too many
# open files`": nothing failed there.
_MENTION = re.compile(r"(?:^|\) )WARNING(?: \d\d-\d\d |:)|^\[W\d{4} |:\d+: \w*Warning: |\bcan cause\b")
# What vLLM's engine-core process logs, with the traceback of its exception, when it dies.
_ENGINE_FATAL = re.compile(r"EngineCore (?:failed to start|encountered a fatal error)\.")
_TRACEBACK = "Traceback (most recent call last):"
# The last line of a traceback: the exception's (possibly dotted) name, then its message.
_EXCEPTION = re.compile(r"(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt)(?::\s.*)?")


def _exception_after(lines: list[str], start: int, prefix: str) -> str | None:
    """The exception line that ends the traceback beginning after lines[start], looking only at
    lines with the same log prefix (other processes' lines interleave with it)."""
    for line in lines[start + 1:]:
        if not line.startswith(prefix):
            continue
        text = line[len(prefix):]
        if not text or text[0].isspace() or text.startswith(_TRACEBACK):
            continue  # a frame, its source line, its ^^^ marks, a chained traceback
        if _EXCEPTION.fullmatch(text.rstrip()):
            return text.strip()
    return None


def reason_from_log(lines: list[str]) -> str | None:
    """One line that says why vLLM stopped, from its output: the exception the engine core died of,
    else the exception that ended the last traceback, else the most specific error line. Lines
    that only mention an error (see _MENTION) are never the reason."""
    lines = [line for line in lines if not _MENTION.search(line)]
    for i in range(len(lines) - 1, -1, -1):
        m = _ENGINE_FATAL.search(lines[i])
        if m:
            return (_exception_after(lines, i, lines[i][:m.start()]) or m.group(0))[:400]
    for i in range(len(lines) - 1, -1, -1):
        at = lines[i].find(_TRACEBACK)
        if at >= 0:
            why = _exception_after(lines, i, lines[i][:at])
            if why:
                return why[:400]
            break
    for pattern in _REASONS:
        for line in reversed(lines):
            m = pattern.search(line)
            if m:
                return m.group(0).strip()[:400]
    return None
