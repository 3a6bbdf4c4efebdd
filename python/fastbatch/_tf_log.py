"""Importing a module that imports TensorFlow, with TensorFlow's C++ start-up log hidden.

Below both `fastbatch.cli` (which imports the trainer through `quiet_import`) and
`fastbatch.ppo.launch` (which also filters a worker's log with `TF_STARTUP_NOTICE`); it imports
nothing of fastbatch: the module to import is the caller's argument.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
import tempfile

__all__ = ["TF_STARTUP_NOTICE", "quiet_import"]

# What TensorFlow's C++ side prints while it loads on a machine without a GPU, before its log
# level applies (absl's preamble and INFO lines such as "Could not find cuda drivers").
TF_STARTUP_NOTICE = re.compile(
    r"WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR"
    r"|I\d{4} \d+:\d+:[\d.]+ +\d+ \S+:\d+\] .*"  # INFO; before the log starts the clock is raw
)


def quiet_import(module: str) -> None:
    """Imports `module` (one that imports TensorFlow) with TensorFlow's C++ logging quiet: level 3
    (which also hides the alarming but harmless "failed call to cuInit" of CPU machines), and
    the notices printed before that level applies filtered out of stderr. An explicit
    TF_CPP_MIN_LOG_LEVEL wins, and then nothing is filtered."""
    if "TF_CPP_MIN_LOG_LEVEL" in os.environ or "tensorflow" in sys.modules:
        importlib.import_module(module)
        return
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        failed = True
        try:
            importlib.import_module(module)
            failed = False
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            for line in captured.read().decode(errors="replace").splitlines(keepends=True):
                if failed or not TF_STARTUP_NOTICE.fullmatch(line.rstrip("\n")):
                    sys.stderr.write(line)
