"""Grading an answer against its task's reference (pure: no I/O).

A lossless speculative run answers as its baseline does; the task accuracy of both says whether
a difference matters. Two answer forms are graded, as the benchmarks pose them:

- GSM8K and the built-in math word problems: the final number. The first after '####' when the
  answer has it (GSM8K's own format, which the GSM8K prompt asks for), else the last number in the
  answer; thousands separators, a currency sign and a trailing '.0' do not count.
- MATH500 and the built-in competition problems: the content of the last \\boxed{...}, compared
  after removing spacing, `\\left`/`\\right`, `\\dfrac`/`\\tfrac` spelled as `\\frac`, dollar signs and
  a leading 'x =' ; when both sides read as numbers (fractions included) they are compared as numbers.

Code tasks (HumanEval, MBPP) would need their tests run: they are not graded (None).
"""

from __future__ import annotations

import math
import re

NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?|-?\.\d+")
GRADED_FAMILIES = {"math_word": "number", "competition_math": "boxed"}


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", "").replace("$", "").strip())
    except ValueError:
        return None


def final_number(answer: str) -> float | None:
    """The answer's final number: the first after the last '####' when there is one (GSM8K's
    format: whatever follows it is commentary), else the last number."""
    if "####" in answer:
        found = NUMBER.findall(answer.rpartition("####")[2])
        return _number(found[0]) if found else None
    found = NUMBER.findall(answer)
    return _number(found[-1]) if found else None


def last_boxed(answer: str) -> str | None:
    """The content of the last \\boxed{...} (braces balanced), or None."""
    start = answer.rfind("\\boxed{")
    if start < 0:
        return None
    i, depth = start + len("\\boxed{"), 1
    for j in range(i, len(answer)):
        if answer[j] == "{":
            depth += 1
        elif answer[j] == "}":
            depth -= 1
            if depth == 0:
                return answer[i:j]
    return None


def _normal(expr: str) -> str:
    expr = expr.replace("\\left", "").replace("\\right", "").replace("\\dfrac", "\\frac")
    expr = expr.replace("\\tfrac", "\\frac").replace("\\!", "").replace("$", "")
    expr = re.sub(r"\s+", "", expr).rstrip(".")
    return re.sub(r"^[a-z]=", "", expr)


def _value(expr: str) -> float | None:
    """A number, a \\frac{a}{b} or a/b, as a float."""
    m = re.fullmatch(r"(-?)\\frac\{(-?[\d.]+)\}\{(-?[\d.]+)\}", expr) or re.fullmatch(r"(-?)([\d.]+)/([\d.]+)", expr)
    if m:
        den = float(m.group(3))
        return None if den == 0 else (-1 if m.group(1) else 1) * float(m.group(2)) / den
    return _number(expr)


def boxed_matches(answer: str, reference: str) -> bool:
    got = last_boxed(answer)
    if got is None:
        return False
    a, b = _normal(got), _normal(reference)
    if a == b:
        return True
    x, y = _value(a), _value(b)
    return x is not None and y is not None and math.isclose(x, y, rel_tol=1e-6, abs_tol=1e-9)


def correct(family: str | None, reference: str | None, answer: str) -> bool | None:
    """Whether `answer` gets the task right; None when the task is not graded."""
    if reference is None:
        return None
    form = GRADED_FAMILIES.get(family or "")
    if form == "number":
        want, got = _number(reference), final_number(answer)
        return want is not None and got is not None and math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9)
    if form == "boxed":
        return boxed_matches(answer, reference)
    return None
