"""The wrappers the process backend puts around each env in its worker: the user's ``wrappers``
(in order), then gymnasium's ``FrameStackObservation`` for ``frame_stack``.

A wrapper is a callable ``env -> env`` (a gymnasium wrapper class taking only the env, or a
function), or its import path ``"module:name"``: a path keeps a training config JSON (PPOConfig's
``env_kwargs={"wrappers": ["fastbatch.atari:preprocess"]}``), so resume, ``fastbatch eval`` and
its ``--video`` build the same env. `chain` checks them (and ``frame_stack``) in the caller,
before any worker starts; `wrapped_factory` is what the workers call; `apply` wraps an env made
here (`fastbatch.api.make_single`, which the video plays).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Iterable
from typing import Any

from fastbatch._args import frame_stack_size

__all__ = ["apply", "chain", "resolve", "wrapped_factory"]

Wrapper = Callable[[Any], Any]


def chain(wrappers: Iterable[Wrapper | str] | None, frame_stack: Any) -> tuple[tuple, int]:
    """The process backend's ``wrappers`` and ``frame_stack`` arguments, checked: the wrappers
    as callables (`resolve`) and the frames stacked (1: none), as `apply` takes them."""
    return resolve(wrappers), frame_stack_size(frame_stack)


def resolve(wrappers: Iterable[Wrapper | str] | None) -> tuple[Wrapper, ...]:
    """The wrappers as callables: import paths imported. TypeError for a value that is neither
    a callable nor a ``"module:name"`` string; ImportError naming the path that does not load."""
    if wrappers is None:
        return ()
    if isinstance(wrappers, str) or callable(wrappers):
        wrappers = [wrappers]  # one wrapper given alone
    resolved = []
    for wrapper in wrappers:
        if isinstance(wrapper, str):
            wrapper = _imported(wrapper)
        if not callable(wrapper):
            raise TypeError(
                "wrappers takes callables env -> env or their import paths 'module:name', "
                f"got {wrapper!r}"
            )
        resolved.append(wrapper)
    return tuple(resolved)


def _imported(path: str) -> Wrapper:
    module_name, sep, name = path.partition(":")
    if not sep or not module_name or not name:
        raise TypeError(f"a wrapper's import path is 'module:name', got {path!r}")
    try:
        value = importlib.import_module(module_name)
    except ImportError as exc:
        raise ImportError(
            f"wrapper {path!r}: module {module_name!r} does not import ({exc})"
        ) from exc
    for part in name.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise ImportError(f"wrapper {path!r}: {module_name} has no {name!r}") from None
    return value


def apply(env: Any, wrappers: tuple[Wrapper, ...], frame_stack: int) -> Any:
    """`env` inside `wrappers` (the first innermost), then stacked by ``FrameStackObservation``
    when `frame_stack` > 1."""
    for wrapper in wrappers:
        env = wrapper(env)
    if frame_stack > 1:
        from gymnasium.wrappers import FrameStackObservation

        env = FrameStackObservation(env, frame_stack)
    return env


def wrapped_factory(
    env_fn: Callable[[], Any], wrappers: tuple[Wrapper, ...], frame_stack: int
) -> Callable[[], Any]:
    """`env_fn` whose env comes wrapped (`apply`); `env_fn` itself when there is nothing to do.
    A partial of module-level functions, so it pickles to the workers."""
    if not wrappers and frame_stack <= 1:
        return env_fn
    return functools.partial(_make_wrapped, env_fn, wrappers, frame_stack)


def _make_wrapped(env_fn: Callable[[], Any], wrappers: tuple[Wrapper, ...], frames: int) -> Any:
    return apply(env_fn(), wrappers, frames)
