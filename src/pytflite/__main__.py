"""`python -m pytflite ...` runs the `pytflite` command-line tools."""

import sys

from .tools.cli import main

sys.exit(main())
