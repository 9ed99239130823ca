"""Registry of model kinds: one module per kind, each ending in a ``KIND = Kind(...)`` record (``base.py``).

| module | ``glimpse.kind`` | presets |
|---|---|---|
| ``action_value`` | ``action_value`` (+ the reference's ``state_value``, ``behavioral_cloning``) | ``smoke``, ``small``, ``base``, ``medium``, ``9m`` |
| ``multi_action_value`` | ``multi_action_value`` (one-pass) | ``mav-*`` |

Look-ups: ``get(onnx_kind)``, ``for_preset(name)`` (a preset, or a name starting with a kind's
``preset_prefix``), ``for_run(run_dir)`` (``config.json``'s ``kind``; a
run without one is an action-value run), ``for_onnx(path)`` (the file's ``glimpse.kind``) and
``for_argv(argv)`` (what ``train.py``/``export.py`` are asked for: ``--config`` preset or ``--run``).
To add a kind: write ``kinds/<name>.py`` with a ``KIND`` record and add the module to ``_MODULES``.
"""

from __future__ import annotations

import json
import os

from ..onnx_graph import onnx_kind
from . import action_value, multi_action_value
from .base import Kind

_MODULES = (action_value, multi_action_value)

#: every kind, by its primary name
KINDS: dict[str, Kind] = {m.KIND.name: m.KIND for m in _MODULES}
#: every ``glimpse.kind`` string -> the kind that builds and reads it
BY_ONNX_KIND: dict[str, Kind] = {k: m.KIND for m in _MODULES for k in m.KIND.onnx_kinds}
#: every preset name -> its kind
BY_PRESET: dict[str, Kind] = {p: m.KIND for m in _MODULES for p in m.KIND.presets}
DEFAULT = action_value.KIND

assert len(BY_PRESET) == sum(len(m.KIND.presets) for m in _MODULES), "preset names must be unique across kinds"
assert len(BY_ONNX_KIND) == sum(len(m.KIND.onnx_kinds) for m in _MODULES), "a glimpse.kind belongs to one kind"


def get(kind: str) -> Kind:
    """The kind that builds ``glimpse.kind`` = ``kind``; ``KeyError`` names the known ones."""
    try:
        return BY_ONNX_KIND[kind]
    except KeyError:
        raise KeyError(f"unknown model kind {kind!r} (known: {', '.join(BY_ONNX_KIND)})") from None


def for_preset(name: str) -> Kind | None:
    """The kind of preset ``name``, or of its prefix (``mav-anything``: the one-pass kind), else None."""
    if name in BY_PRESET:
        return BY_PRESET[name]
    for k in KINDS.values():
        if k.preset_prefix and name.startswith(k.preset_prefix):
            return k
    return None


def for_run(run_dir: str) -> Kind | None:
    """The kind recorded in ``run_dir/config.json`` (no ``kind`` field: action value); None without a config."""
    path = os.path.join(run_dir, "config.json")
    if not os.path.exists(path):
        return None
    try:
        kind = json.load(open(path)).get("kind", action_value.KIND_AV)
    except (OSError, ValueError):
        return None
    return BY_ONNX_KIND.get(kind)


def for_onnx(path: str) -> Kind:
    """The kind of an ONNX file by its ``glimpse.kind`` metadata (none: action value)."""
    return get(onnx_kind(path) or action_value.KIND_AV)


def _flag(argv: list[str], flag: str) -> str | None:
    for i, a in enumerate(argv):
        if a == flag and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return None


def for_argv(argv: list[str]) -> Kind:
    """The kind a ``train``/``export`` command line is about: a ``--config`` preset of a kind, or the kind
    recorded in the ``--run`` (or ``--config``) run folder under ``--runs-dir``; action value otherwise."""
    preset = _flag(argv, "--config")
    by_prefix = [k for k in KINDS.values() if k.preset_prefix and preset and preset.startswith(k.preset_prefix)]
    if by_prefix:
        return by_prefix[0]
    run = _flag(argv, "--run") or preset
    if run:
        kind = for_run(os.path.join(_flag(argv, "--runs-dir") or "runs", run))
        if kind is not None:
            return kind
    return (for_preset(preset) if preset else None) or DEFAULT
