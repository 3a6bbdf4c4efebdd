"""Native Atari envs for fastbatch: gymnasium's ``ALE/<Name>-v5`` ids, stepped by fastbatch's
C++ pool over ALE's C++ interface (the emulator is compiled into this package's library).

Installed, ``fastbatch.make("ALE/Pong-v5", n)`` steps the game natively: fastbatch finds this
package through its ``fastbatch.envs`` entry point and calls `register` on the first ``make``
of an ``ALE/`` id (``backend="process"`` still steps ale-py's own env in worker processes), and
`native_kwargs` on each ``make``'s keyword arguments.
The env equals ale-py's ``AtariEnv`` for the same seed and actions, step for step
(``src/atari_env.h`` has the params and the seeding rule).

Licence: this package links the Arcade Learning Environment and is GPL-2.0-only; fastbatch
itself is MIT and imports this package only when it is installed.
"""

from __future__ import annotations

import ctypes
import numbers
import os
import warnings
from pathlib import Path
from typing import Any

__all__ = ["ALE_VERSION", "ID_PREFIXES", "library_path", "native_kwargs", "register", "rom_dir"]

ID_PREFIXES = ("ALE/",)
"""How the ids of this package's envs start (fastbatch routes such ids here)."""
ALE_VERSION = "0.12.1"
"""The ALE version compiled in; the ROMs come from the ale-py wheel of this version."""

_registered: list[str] | None = None


def library_path() -> Path:
    """The plugin library (``fastbatch.register_native_env`` takes it)."""
    return Path(__file__).with_name("libfastbatch_atari.so")


def rom_dir() -> str:
    """The directory of the installed ale-py's ROMs. Raises ``ImportError`` naming the
    ``pip install`` when ale-py is missing."""
    try:
        import ale_py  # also registers gymnasium's own ALE ids, which fastbatch leaves alone
    except ImportError as exc:
        raise ImportError(
            f"fastbatch-atari takes its ROMs from ale-py, which is not installed: "
            f"pip install ale-py=={ALE_VERSION}"
        ) from exc
    return str(Path(ale_py.__file__).parent / "roms")


def register() -> list[str]:
    """Registers every game's ``ALE/<Name>-v5`` id with fastbatch (once a process); returns the
    ids. gymnasium's ids of the same names stay ale-py's envs."""
    global _registered
    if _registered is not None:
        return list(_registered)
    roms = rom_dir()  # first: its error names the install when ale-py is missing
    import ale_py

    import fastbatch

    library = ctypes.CDLL(os.fspath(library_path()))
    library.fastbatch_atari_ale_version.restype = ctypes.c_char_p
    built = library.fastbatch_atari_ale_version().decode()
    if ale_py.__version__ != built:
        warnings.warn(
            f"fastbatch-atari's emulator is ALE {built} but the installed ale-py (the ROMs) is "
            f"{ale_py.__version__}: pip install ale-py=={built}",
            stacklevel=2,
        )
    library.fastbatch_atari_set_rom_dir.argtypes = [ctypes.c_char_p]
    library.fastbatch_atari_set_rom_dir(os.fsencode(roms))
    _registered = fastbatch.register_native_env(None, library_path(), replace=True)
    return list(_registered)


def native_kwargs(spec: Any, kwargs: dict[str, Any]) -> dict[str, Any]:
    """gymnasium's keyword arguments as this package's params (``fastbatch.make`` calls it):
    AtariPreprocessing's ``screen_size=(width, height)`` becomes ``screen_width`` and
    ``screen_height`` (frames of shape (height, width)); an int ``screen_size`` stays as it is
    (square frames). ``spec``: the id's ``fastbatch.NativeEnvSpec``. ValueError naming the env
    for a ``screen_size`` that is neither."""
    size = kwargs.get("screen_size")
    if not isinstance(size, (tuple, list)):
        return kwargs
    whole = [isinstance(v, numbers.Integral) and not isinstance(v, bool) and v > 0 for v in size]
    if len(size) != 2 or not all(whole):
        raise ValueError(
            f"{spec.id} parameter 'screen_size' must be an int or a pair (width, height) of "
            f"positive ints, as AtariPreprocessing takes it, got {size!r}"
        )
    out = {k: v for k, v in kwargs.items() if k != "screen_size"}
    out["screen_width"], out["screen_height"] = int(size[0]), int(size[1])
    return out
