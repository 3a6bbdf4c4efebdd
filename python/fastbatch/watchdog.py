"""`Deadline`: a watchdog that ends the process when a wait outlives its time.

Runs in C++ on a thread of its own, so it fires while Python is stuck (a wait that holds the
GIL, as TensorFlow's cluster start-up does). The trainer's data-parallel start-up uses it
(`fastbatch.ppo.distribute.connect`); so can any program that must never hang.
"""

from __future__ import annotations

from fastbatch import _core

__all__ = ["Deadline"]


class Deadline(_core._Deadline):
    """Ends the process with ``exit_code`` after ``seconds``, printing ``message`` on stderr,
    unless `cancel` is called first; `extend` moves the end (and may replace the message).
    ``Deadline(seconds, message, exit_code)``."""
