"""Generated documentation stays in step with the code."""

from __future__ import annotations

from pathlib import Path

from pytflite import BuiltinOperator
from pytflite.tools.flex_table import flex_table
from pytflite.tools.module_index import module_index
from pytflite.tools.ops_table import ops_table

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_ops_table_is_current():
    assert (DOCS / "ops.md").read_text() == ops_table(), (
        "regenerate: python -m pytflite.tools.ops_table > docs/ops.md"
    )


def test_flex_table_is_current():
    assert (DOCS / "flex_ops.md").read_text() == flex_table(), (
        "regenerate: python -m pytflite.tools.flex_table > docs/flex_ops.md"
    )


def test_every_flex_kernel_says_what_it_does():
    from pytflite.flex import registered_kernels

    assert [op for op, kernel in registered_kernels().items() if not kernel.doc] == []


def test_module_index_is_current():
    assert (DOCS / "modules.md").read_text() == module_index(), (
        "regenerate: python -m pytflite.tools.module_index > docs/modules.md"
    )


# ops that take no inputs, so have no input types to declare
_NO_INPUTS = {BuiltinOperator.CALL_ONCE, BuiltinOperator.VAR_HANDLE, BuiltinOperator.HASHTABLE}


def test_every_kernel_declares_its_types():
    from pytflite.ops.registry import kernel_infos

    undeclared = {info.op for info in kernel_infos() if not info.types}
    assert undeclared == _NO_INPUTS & {info.op for info in kernel_infos()}
