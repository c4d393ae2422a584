"""ARM under emulation: Debian bookworm userlands (arm64 for aarch64, armhf for 32-bit Raspberry Pi OS)
run through qemu user-mode on an x86 machine, to record LiteRT's ARM answers (LiteRT 2.3.0 aarch64,
tflite-runtime 2.14.0 armv7) and to run pytflite itself there.

environment.py  builds the userland roots (apt-get download + dpkg -x), fetches qemu and the wheels, and
                gives the command line that runs a Python script under qemu
compare.py      the recorded fixtures (tests/fixtures/record_litert_arm.py) against pytflite, natively
                under the ARM profile and (--emulated) under qemu: `python -m tests.arm.compare`

Test tooling, as tests/pyodide is: nothing of it ships with pytflite.
"""
