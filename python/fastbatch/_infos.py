"""gymnasium's vector info layout, shared by both backends and the process workers.

Each key of an env's info becomes an array over the batch (an object array for values that are
not numbers, a nested dict for dicts) with a boolean mask under ``"_" + key``, as gymnasium's
``VectorEnv._add_info`` builds it. Episode statistics follow ``RecordEpisodeStatistics``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["add_info", "block_info", "episode_info", "merge_block_info", "numeric_info"]


def episode_info(done, ret, length, elapsed, stats_key: str | None) -> dict[str, Any]:
    """The ``info`` entries of finished episodes, as gymnasium's ``RecordEpisodeStatistics``."""
    if stats_key is None:
        return {}
    return {stats_key: {"r": ret, "l": length, "t": elapsed}, "_" + stats_key: done}


def numeric_info(
    infos: dict[str, Any], values: np.ndarray | None, layout: dict[str, int]
) -> dict[str, Any]:
    """Adds a native env's numeric infos (contract version 3) to ``infos`` in gymnasium's layout.

    ``values``: the fresh float64 [rows, info row] array the pool hands out (None: no infos);
    ``layout``: name -> values per env, in row order. Each entry becomes ``infos[name]`` ([rows],
    or [rows, size]) with its mask ``infos["_" + name]``; NaN marks an absent value (mask False,
    value 0, as `add_info` leaves a row that lacks a key), and an entry absent in every row is left
    out, as gymnasium does. One array per entry and step, no Python object per env."""
    if values is None:
        return infos
    rows = values.shape[0]
    total = values.sum()
    if total == total:  # no NaN (nothing absent): the common case, a few numpy calls in all
        columns = values.T.copy()  # row k: value k of every env, contiguous
        masks = np.ones((len(layout), rows), dtype=np.bool_)
        col = 0
        for k, (name, size) in enumerate(layout.items()):
            infos[name] = columns[col] if size == 1 else columns[col : col + size].T.copy()
            infos["_" + name] = masks[k]
            col += size
        return infos
    absent = np.isnan(values)
    col = 0
    for name, size in layout.items():
        block = values[:, col] if size == 1 else values[:, col : col + size]
        present = ~absent[:, col] if size == 1 else ~absent[:, col : col + size].all(axis=1)
        col += size
        if present.any():
            keep = present if size == 1 else present[:, None]
            infos[name] = np.where(keep, block, 0.0)
            infos["_" + name] = present
    return infos


def add_info(infos: dict[str, Any], info: dict[str, Any], row: int, rows: int) -> dict[str, Any]:
    """Adds one env's ``info`` at ``row`` in gymnasium's vector convention: each key becomes an
    array over the batch (an object array for non-numeric values, a nested dict for dicts) with
    a boolean mask under ``"_" + key``. ``final_obs`` is always an object array."""
    for key, value in info.items():
        if isinstance(value, dict) and key != "final_obs":
            array = add_info(infos.get(key, {}), value, row, rows)
        else:
            array = infos.get(key)
            if array is None:
                if key == "final_obs":
                    array = np.full(rows, None, dtype=object)
                elif isinstance(value, (bool, int, float, np.number)):
                    array = np.zeros(rows, dtype=type(value))
                elif isinstance(value, np.ndarray):
                    array = np.zeros((rows, *value.shape), dtype=value.dtype)
                else:
                    array = np.full(rows, None, dtype=object)
            array[row] = value
        mask = infos.get("_" + key)
        if mask is None:
            mask = np.zeros(rows, dtype=np.bool_)
        mask[row] = True
        infos[key], infos["_" + key] = array, mask
    return infos


def block_info(entries, first: int, rows: int) -> dict[str, Any]:
    """The infos of one block of envs [first, first + rows) in gymnasium's vector layout.

    `entries` holds (env index, final or None, info) for envs with something to say; a final is
    (final observation, final info): the env's own objects, as ``SyncVectorEnv`` keeps them."""
    fast = _uniform_scalar_info(entries, first, rows)
    if fast is not None:
        return fast
    infos: dict[str, Any] = {}
    for i, final, info in entries:
        if final is not None:
            infos = add_info(
                infos, {"final_obs": final[0], "final_info": final[1]}, i - first, rows
            )
        infos = add_info(infos, info, i - first, rows)
    return infos


_SCALARS = (bool, int, float, np.number)
_scalar_types: set[type] = set()  # types seen to be _SCALARS (what add_info stores in arrays)


def _all_scalars(values: list) -> bool:
    types = set(map(type, values))
    if types <= _scalar_types:
        return True
    if all(issubclass(t, _SCALARS) for t in types):
        _scalar_types.update(types)
        return True
    return False


def _uniform_scalar_info(entries, first: int, rows: int) -> dict[str, Any] | None:
    """`block_info` for the common case of every entry carrying the same keys with scalar
    values and no final info (e.g. MuJoCo envs' per-step info): one array per key, built in one
    call, equal to what `add_info` builds entry by entry. None when the case does not apply."""
    if not entries:
        return None
    keys = entries[0][2].keys()
    if "final_obs" in keys or any(
        not isinstance(k, str) or k.startswith("_") for k in keys
    ):  # "_x": a mask?
        return None
    for _, final, info in entries:
        if final is not None or info.keys() != keys:
            return None
    columns = {key: [info[key] for _, _, info in entries] for key in keys}
    if not all(_all_scalars(column) for column in columns.values()):
        return None
    index = [i - first for i, _, _ in entries]
    full = len(index) == rows and index[0] == 0 and index[-1] == rows - 1  # rows are ascending
    mask = np.ones(rows, dtype=np.bool_)
    if not full:
        mask[:] = False
        mask[index] = True
    infos: dict[str, Any] = {}
    for key, column in columns.items():
        values = np.array(column, dtype=type(column[0]))
        if full:
            infos[key] = values
        else:
            infos[key] = np.zeros(rows, dtype=values.dtype)
            infos[key][index] = values
        infos["_" + key] = mask.copy()
    return infos


def merge_block_info(
    infos: dict[str, Any], block: dict[str, Any], offset: int, rows: int
) -> dict[str, Any]:
    """Places a block's infos (from `block_info`) at rows [offset, offset + block rows) of a batch
    of `rows`: array for array, mask for mask, nested dicts alike."""
    for key, value in block.items():
        if isinstance(value, dict):
            infos[key] = merge_block_info(infos.get(key, {}), value, offset, rows)
            continue
        target = infos.get(key)
        if target is None:
            if value.dtype == object:
                target = np.full(rows, None, dtype=object)
            else:
                target = np.zeros((rows, *value.shape[1:]), dtype=value.dtype)
            infos[key] = target
        target[offset : offset + len(value)] = value
    return infos
