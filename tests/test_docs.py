"""Generated documentation stays in step with the code."""

from __future__ import annotations

from pathlib import Path

from pytflite.tools.ops_table import ops_table

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_ops_table_is_current():
    assert (DOCS / "ops.md").read_text() == ops_table(), (
        "regenerate: python -m pytflite.tools.ops_table > docs/ops.md"
    )


def test_every_kernel_declares_its_types():
    from pytflite.ops.registry import kernel_infos

    assert all(info.types for info in kernel_infos())
