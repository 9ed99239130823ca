"""Read a searchless-chess Orbax checkpoint (PyTree of arrays) with tensorstore, no reference code.

The released checkpoints unpack as ``<root>/<model>/<step>/{params,params_ema}`` (e.g.
``checkpoints/270M/6400000/params``). Each item directory is an Orbax PyTree checkpoint:

* ``_METADATA`` (JSON: the tree's key paths) and ``checkpoint`` (msgpack: the same tree with
  ``PLACEHOLDER://<storage key>`` leaves) — either may be missing in older/newer Orbax versions;
* the arrays, one zarr array per leaf under the storage key ``<module>.<param>`` (module names keep
  their ``/``), stored in an OCDBT key-value store (``manifest.ocdbt``, ``d/…``,
  ``ocdbt.process_<i>/…``) or, without OCDBT, as plain per-leaf directories; zarr v2 (``.zarray``)
  or zarr v3 (``zarr.json``).

:func:`resolve` turns whatever directory the user names (checkpoint root with one model, model
dir, step dir or item dir) into the item directory; :func:`read_item` returns the leaves as a flat
``{"<module>/<param>": float32 ndarray}`` dict (Haiku names as in ``transformer.py``). Anything that does
not look like this raises :class:`CheckpointError` with what was found.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re

import numpy as np

# tensorstore, msgpack and orbax (requirements-convert.txt, optional) are imported inside the functions that
# read or write checkpoints.

TREES = ("params", "params_ema")


class CheckpointError(ValueError):
    """The directory is not a checkpoint this reader understands (message says what was found)."""


@dataclasses.dataclass(frozen=True)
class Located:
    """Where a checkpoint item lives.

    ``item_dir``: the Orbax item directory (``…/<step>/<tree>``), absolute.
    ``model_dir``: its grandparent (``…/<model>``), or None when the item was given on its own.
    ``step``: the step number from the step directory's name, or None.
    ``tree``: ``params`` or ``params_ema`` (the item directory's name).
    """

    item_dir: str
    model_dir: str | None
    step: int | None
    tree: str

    @property
    def model_name(self) -> str:
        return os.path.basename(self.model_dir) if self.model_dir else ""

    @property
    def relative(self) -> str:
        """``<model>/<step>/<tree>`` (portable description of the source)."""
        parts = [self.model_name, str(self.step) if self.step is not None else "", self.tree]
        return "/".join(p for p in parts if p)


def _is_item_dir(path: str) -> bool:
    names = set(os.listdir(path))
    return bool(names & {"_METADATA", "checkpoint", "manifest.ocdbt", "_CHECKPOINT_METADATA"}) and not (
        names & set(TREES))


def _step_dirs(path: str) -> list[str]:
    return sorted((d for d in os.listdir(path) if d.isdigit() and os.path.isdir(os.path.join(path, d))), key=int)


def resolve(path: str, tree: str = "params", step: int | None = None) -> Located:
    """Find the item directory for ``tree`` under ``path`` (root, model, step or item directory).

    With several step directories the highest is taken unless ``step`` is given. Raises
    :class:`CheckpointError` when nothing matches, listing what the directory holds.
    """
    if tree not in TREES:
        raise CheckpointError(f"PARAMS must be one of {TREES}, not {tree!r}")
    p = os.path.abspath(path)
    if not os.path.isdir(p):
        raise CheckpointError(f"{path}: no such directory")
    # Descend a checkpoints root holding exactly one model directory (e.g. golden tiny_av_checkpoint/).
    for _ in range(2):
        if _is_item_dir(p) or set(os.listdir(p)) & set(TREES) or _step_dirs(p):
            break
        subs = [d for d in os.listdir(p) if os.path.isdir(os.path.join(p, d)) and not d.startswith(".")]
        if len(subs) != 1:
            raise CheckpointError(
                f"{path}: not an Orbax checkpoint (expected <model>/<step>/{{params,params_ema}}); "
                f"it holds {sorted(os.listdir(p))[:12]}"
                + ("; name one model directory" if len(subs) > 1 else ""))
        p = os.path.join(p, subs[0])
    if _is_item_dir(p):
        item = p
        name = os.path.basename(item)
        if name in TREES and name != tree:
            # The user named params/ but asked for params_ema (or vice versa): use the sibling.
            sib = os.path.join(os.path.dirname(item), tree)
            if not os.path.isdir(sib):
                raise CheckpointError(f"{path}: no sibling item '{tree}' next to '{name}'")
            item = sib
        elif name not in TREES:
            if tree != "params":
                raise CheckpointError(f"{path}: a single item directory named '{name}'; cannot pick '{tree}'")
            return Located(item, None, None, name)
    else:
        if not set(os.listdir(p)) & set(TREES):
            steps = _step_dirs(p)
            if not steps:
                raise CheckpointError(f"{path}: no step directories and no params/params_ema item; "
                                      f"it holds {sorted(os.listdir(p))[:12]}")
            if step is None:
                chosen = steps[-1]
            elif str(step) in steps:
                chosen = str(step)
            else:
                raise CheckpointError(f"{path}: step {step} not found (steps: {steps})")
            p = os.path.join(p, chosen)
        item = os.path.join(p, tree)
        if not os.path.isdir(item):
            raise CheckpointError(f"{p}: no '{tree}' item (holds {sorted(os.listdir(p))})")
        if not _is_item_dir(item):
            raise CheckpointError(f"{item}: not an Orbax item directory (holds {sorted(os.listdir(item))[:12]})")
    step_dir = os.path.dirname(item)
    sname = os.path.basename(step_dir)
    st = int(sname) if sname.isdigit() else None
    model_dir = os.path.dirname(step_dir) if st is not None else None
    return Located(item, model_dir, st, os.path.basename(item))


# ----------------------------------------------------------------------------------------------
# Tree structure
# ----------------------------------------------------------------------------------------------


def _tree_from_metadata(item: str) -> list[tuple[tuple[str, ...], str | None]] | None:
    """[(key path, storage key or None)] from ``_METADATA`` (Orbax ≥ 0.5), or None if absent."""
    f = os.path.join(item, "_METADATA")
    if not os.path.exists(f):
        return None
    meta = json.load(open(f))
    tm = meta.get("tree_metadata")
    if not isinstance(tm, dict):
        raise CheckpointError(f"{f}: no 'tree_metadata' object (keys {list(meta)[:8]})")
    out = []
    for _, leaf in tm.items():
        keys = tuple(str(k["key"]) for k in leaf.get("key_metadata", []))
        if not keys:
            raise CheckpointError(f"{f}: a leaf without key_metadata")
        out.append((keys, None))
    return out


def _tree_from_msgpack(item: str) -> list[tuple[tuple[str, ...], str | None]] | None:
    """[(key path, storage key)] from the ``checkpoint`` msgpack file, or None if absent."""
    f = os.path.join(item, "checkpoint")
    if not os.path.exists(f):
        return None
    import msgpack

    tree = msgpack.unpackb(open(f, "rb").read(), strict_map_key=False)
    out = []

    def walk(node, path):
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, path + (k.decode() if isinstance(k, bytes) else str(k),))
        elif isinstance(node, (list, tuple)):
            for i, v in enumerate(node):
                walk(v, path + (str(i),))
        elif isinstance(node, str) and node.startswith("PLACEHOLDER://"):
            out.append((path, node[len("PLACEHOLDER://"):]))
        else:
            # Inline value (scalars saved in the msgpack itself): keep it as an array.
            out.append((path, node))

    walk(tree, ())
    return out


# ----------------------------------------------------------------------------------------------
# Array storage
# ----------------------------------------------------------------------------------------------


def _kvstore_spec(item: str) -> dict:
    base = {"driver": "file", "path": item + "/"}
    if os.path.exists(os.path.join(item, "manifest.ocdbt")):
        return {"driver": "ocdbt", "base": base}
    return base


def _list_arrays(item: str) -> dict[str, str]:
    """Storage key → zarr driver (``zarr`` or ``zarr3``) of every array in the item's kvstore."""
    import tensorstore as ts

    kv = ts.KvStore.open(_kvstore_spec(item)).result()
    found: dict[str, str] = {}
    for k in kv.list().result():
        k = k.decode()
        for suffix, driver in (("/.zarray", "zarr"), ("/zarr.json", "zarr3")):
            if k.endswith(suffix):
                found[k[: -len(suffix)]] = driver
    return found


def _read_array(item: str, key: str, driver: str) -> np.ndarray:
    import tensorstore as ts

    spec = {"driver": driver, "kvstore": dict(_kvstore_spec(item), path=key + "/")}
    if spec["kvstore"]["driver"] == "file":
        spec["kvstore"] = {"driver": "file", "path": os.path.join(item, key) + "/"}
    return np.asarray(ts.open(spec, open=True, read=True).result().read().result())


def read_item(item: str) -> tuple[dict[str, np.ndarray], dict]:
    """Read every leaf of an Orbax item directory.

    Returns (``{"<module>/<param>": float32 array}``, info) where info holds ``stored_dtypes``
    (set of the dtypes found on disk) and ``format`` (``ocdbt`` or ``file``). Leaf names are the
    key path joined with ``/`` (Haiku modules such as ``multi_head_dot_product_attention/linear_1``
    already contain ``/``). Raises :class:`CheckpointError` on missing or unreadable leaves.
    """
    arrays = _list_arrays(item)
    tree = _tree_from_msgpack(item) or _tree_from_metadata(item)
    if tree is None:
        if not arrays:
            raise CheckpointError(f"{item}: neither _METADATA nor checkpoint, and no zarr arrays")
        # No tree files: storage keys '<module>.<param>' (the param name has no '.').
        tree = [(tuple(k.rsplit(".", 1)), k) for k in arrays]
    out: dict[str, np.ndarray] = {}
    dtypes: set[str] = set()
    for keys, storage in tree:
        name = "/".join(keys)
        if storage is None or isinstance(storage, str):
            skey = storage if isinstance(storage, str) else ".".join(keys)
            if skey not in arrays:
                raise CheckpointError(f"{item}: leaf {name} has no stored array '{skey}' "
                                      f"(stored: {sorted(arrays)[:6]}…)")
            a = _read_array(item, skey, arrays[skey])
        else:
            a = np.asarray(storage)
        dtypes.add(str(a.dtype))
        if not np.issubdtype(a.dtype, np.floating) and a.dtype.name != "bfloat16":
            raise CheckpointError(f"{item}: leaf {name} has dtype {a.dtype}, expected floating point")
        out[name] = np.ascontiguousarray(a.astype(np.float32))
    if not out:
        raise CheckpointError(f"{item}: empty tree")
    fmt = "ocdbt" if os.path.exists(os.path.join(item, "manifest.ocdbt")) else "file"
    return out, {"stored_dtypes": sorted(dtypes), "format": fmt}


# ----------------------------------------------------------------------------------------------
# Layout recognition
# ----------------------------------------------------------------------------------------------

_FLAX_HINTS = re.compile(r"(^|/)(Embed_\d+|LayerNorm_\d+|MultiHeadDotProductAttention_\d+|Dense_\d+)(/|$)|"
                         r"/(kernel|embedding)(/value)?$")


def check_haiku_layout(params: dict[str, np.ndarray], where: str) -> None:
    """Raise :class:`CheckpointError` with a diagnosis unless the tree uses the reference's Haiku names."""
    names = sorted(params)
    if "embed/embeddings" in params and "embed_1/embeddings" in params:
        return
    flax = [n for n in names if _FLAX_HINTS.search(n)]
    if flax:
        shapes = {n: tuple(params[n].shape) for n in flax[:6]}
        raise CheckpointError(
            f"{where}: Flax-style parameter tree ({len(names)} leaves, e.g. {shapes}). This is not the "
            "layout the searchless_chess reference code writes (Haiku names embed/embeddings, "
            "layer_norm_i, multi_head_dot_product_attention_i/linear_j, linear_k). The released "
            "9M_state_value / 9M_behavioral_cloning checkpoints are reported to use such a layout; "
            "its mapping is unverified, so Glimpse does not guess. Convert an action-value "
            "checkpoint (9M, 136M, 270M) instead.")
    raise CheckpointError(f"{where}: unknown parameter tree ({len(names)} leaves: {names[:8]}…); "
                          "expected Haiku names embed/embeddings, embed_1/embeddings, …")
