"""The overload of debug_print: Numba cannot format strings, so the call drops into object
mode (the GIL, boxed arguments), where str.format formats the values as NumPy prints them."""

from __future__ import annotations

import numba
from numba.extending import overload

from ... import runtime as rt


@overload(rt.debug_print)
def _debug_print(fmt, *args):
    def impl(fmt, *args):
        with numba.objmode():
            rt.debug_show(fmt, args)
    return impl
