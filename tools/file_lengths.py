"""The one-job-a-file gate of .ci/run: warns for a source file over 400 lines and fails for one
over 500, unless the file says why it is long: a line "Long file: <reason>" in its docstring or
header comment (the first 40 lines).

Usage: python tools/file_lengths.py FILE... (exit status 1 when a file fails).
"""

from __future__ import annotations

import sys
from pathlib import Path

WARN, FAIL = 400, 500
REASON = "Long file:"


def main(paths: list[str]) -> int:
    failed = False
    for name in paths:
        lines = Path(name).read_text(errors="replace").splitlines()
        if len(lines) <= WARN:
            continue
        explained = any(REASON in line for line in lines[:40])
        if len(lines) > FAIL and not explained:
            print(f"{name}: {len(lines)} lines (over {FAIL}, and no '{REASON}' line saying why)")
            failed = True
        else:
            why = " (it says why)" if explained else ""
            print(f"warning: {name}: {len(lines)} lines (over {WARN}){why}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
