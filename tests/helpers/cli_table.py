"""The speedup table `draftbench show` prints, read back as cells."""

from __future__ import annotations

from workbench.cli.runs import SPEEDUP_TITLE


def shown_table(stdout: str) -> list[list[str]]:
    """The rows of the table under the title, cut at the columns its dashed line marks."""
    lines = stdout.splitlines()
    start = lines.index(SPEEDUP_TITLE) + 1
    header, dashes, *rest = lines[start:]
    spans, col = [], 0
    for part in dashes.split("  "):
        spans.append((col, col + len(part)))
        col += len(part) + 2
    body = []
    for line in rest:
        if not line.strip():
            break
        body.append([line[a:b].strip() for a, b in spans])
    return [[header[a:b].strip() for a, b in spans]] + body
