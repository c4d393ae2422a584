"""Delegate: an object that may take over parts of a graph (TfLiteDelegate).

Write one either by subclassing and overriding the methods, or by passing plain functions to the
constructor; both are called C-style, with the delegate passed explicitly:

    prepare(context, delegate)                                   claim nodes during ModifyGraphWithDelegate
    copy_from_buffer_handle(context, delegate, handle, tensor)   device -> tensor.data
    copy_to_buffer_handle(context, delegate, handle, tensor)     tensor.data -> device
    free_buffer_handle(context, delegate, handle)

A callback left as None is absent, as a null function pointer is in C.
"""

from __future__ import annotations

import enum
from typing import Any


class DelegateFlags(enum.IntFlag):
    """TfLiteDelegateFlags."""

    NONE = 0
    ALLOW_DYNAMIC_TENSORS = 1
    REQUIRE_PROPAGATED_SHAPES = 2
    PER_OPERATOR_PROFILING = 4
    HINT_FULLY_DELEGATED_TO_SINGLE_DELEGATE = 8


class Delegate:
    """The delegate interface; see the module docstring for the callback signatures."""

    prepare = None
    copy_from_buffer_handle = None
    copy_to_buffer_handle = None
    free_buffer_handle = None
    flags = DelegateFlags.NONE
    data: Any = None

    def __init__(
        self,
        prepare=None,
        copy_from_buffer_handle=None,
        copy_to_buffer_handle=None,
        free_buffer_handle=None,
        flags: DelegateFlags | int | None = None,
        data: Any = None,
    ):
        callbacks = {
            "prepare": prepare,
            "copy_from_buffer_handle": copy_from_buffer_handle,
            "copy_to_buffer_handle": copy_to_buffer_handle,
            "free_buffer_handle": free_buffer_handle,
        }
        for name, function in callbacks.items():
            if function is not None:
                setattr(self, name, function)
        if flags is not None:
            self.flags = DelegateFlags(flags)
        if data is not None:
            self.data = data

    @property
    def name(self) -> str:
        return type(self).__name__
