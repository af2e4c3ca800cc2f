"""Writes docs/plan-keys.md from the plan schema (workbench.plan.schema)."""

from pathlib import Path

from workbench.plan import keys_doc

if __name__ == "__main__":
    out = Path(__file__).resolve().parent.parent / "docs" / "plan-keys.md"
    out.write_text(keys_doc.document())
    print(f"wrote {out}")
