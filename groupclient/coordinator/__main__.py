"""``python -m groupclient.coordinator``: the same as ``groupclient coordinator``."""

from __future__ import annotations

import sys

from ..cli import main

if __name__ == "__main__":
    sys.exit(main(["coordinator", *sys.argv[1:]]))
