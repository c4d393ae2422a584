"""The x86 CPUID and XGETBV instructions, run from Python.

LiteRT decides host-dependent behaviour from these two instructions: Eigen reads its cache sizes with
CPUID, ruy (through the cpuinfo library) picks its kernels from CPUID feature bits and XGETBV's record of
which register states the operating system saves. pytflite reads the same bits the same way: a few bytes
of x86-64 machine code in an executable page, called through ctypes. Where that cannot run (another
architecture, a 32-bit process, a system that refuses executable memory, a Python built without ctypes,
which is loaded only here, on first use) the functions return None and the caller falls back to what the
operating system reports.
"""

from __future__ import annotations

import functools
import mmap
import platform
import sys

# push rbx; mov r8, rdx; mov eax, edi; mov ecx, esi; cpuid;
# mov [r8], eax; mov [r8+4], ebx; mov [r8+8], ecx; mov [r8+12], edx; pop rbx; ret
_CPUID_SYSV = "53 4989d0 89f8 89f1 0fa2 418900 41895804 41894808 4189500c 5b c3"
# the same with the Windows x64 convention (leaf in ecx, subleaf in edx, the output pointer in r8)
_CPUID_WIN64 = "53 89c8 89d1 0fa2 418900 41895804 41894808 4189500c 5b c3"
# mov ecx, edi (System V only); xgetbv; shl rdx, 32; or rax, rdx; ret
_XGETBV_SYSV = "89f9 0f01d0 48c1e220 4809d0 c3"
_XGETBV_WIN64 = "0f01d0 48c1e220 4809d0 c3"


def _is_x86_64_process() -> bool:
    machine = platform.machine().lower()
    return machine in ("x86_64", "amd64") and sys.maxsize > 2**32


class _Machine:
    """The two routines in one executable page, kept alive as long as the process."""

    def __init__(self, ctypes) -> None:
        windows = sys.platform == "win32"
        cpuid = bytes.fromhex((_CPUID_WIN64 if windows else _CPUID_SYSV).replace(" ", ""))
        xgetbv = bytes.fromhex((_XGETBV_WIN64 if windows else _XGETBV_SYSV).replace(" ", ""))
        if windows:
            self._page = self._windows_page(ctypes, len(cpuid) + len(xgetbv))
            ctypes.memmove(self._page, cpuid + xgetbv, len(cpuid) + len(xgetbv))
            base = self._page
        else:
            self._page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
            self._page.write(cpuid + xgetbv)
            base = ctypes.addressof(ctypes.c_char.from_buffer(self._page))
        self._registers = ctypes.c_uint32 * 4
        self._byref = ctypes.byref
        self._cpuid = ctypes.CFUNCTYPE(
            None, ctypes.c_uint32, ctypes.c_uint32, ctypes.POINTER(self._registers)
        )(base)
        self.xgetbv = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_uint32)(base + len(cpuid))

    def cpuid(self, leaf: int, subleaf: int) -> tuple[int, int, int, int]:
        registers = self._registers()
        self._cpuid(leaf, subleaf, self._byref(registers))
        return tuple(int(r) for r in registers)  # type: ignore[return-value]

    @staticmethod
    def _windows_page(ctypes, size: int) -> int:
        kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined]
        kernel32.VirtualAlloc.restype = ctypes.c_void_p
        kernel32.VirtualAlloc.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint32, ctypes.c_uint32)
        address = kernel32.VirtualAlloc(None, size, 0x3000, 0x40)  # commit | reserve, read-write-execute
        if not address:
            raise OSError("VirtualAlloc refused an executable page")
        return address


@functools.cache
def _machine() -> _Machine | None:
    if not _is_x86_64_process():
        return None
    try:
        import ctypes
    except ImportError:  # a Python built without ctypes (or without libffi for it)
        return None
    try:
        return _Machine(ctypes)
    except (OSError, ValueError, AttributeError, TypeError):
        return None


def available() -> bool:
    """Whether CPUID can be executed in this process."""
    return _machine() is not None


def cpuid(leaf: int, subleaf: int = 0) -> tuple[int, int, int, int] | None:
    """(eax, ebx, ecx, edx) of CPUID for `leaf`/`subleaf`, or None where it cannot run."""
    machine = _machine()
    return None if machine is None else machine.cpuid(leaf, subleaf)


def xgetbv(index: int = 0) -> int | None:
    """XCR`index` (which register states the OS saves), or None where it cannot run; the caller must
    check CPUID's OSXSAVE bit first (XGETBV faults without it)."""
    machine = _machine()
    return None if machine is None else int(machine.xgetbv(index))
