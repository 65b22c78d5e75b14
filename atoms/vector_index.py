"""The worker-built vector index: an HNSW file per (tenant, config), searched by web processes.

Library: usearch (HNSW, pip wheel, no server). It was chosen over faiss (a much larger
binary, no deletes in flat HNSW), hnswlib (unmaintained since 2023) and a plain numpy scan
(exact, but 25-40 ms per signal at 100k x 384 on two cores): usearch adds and removes
single keys, saves a compact file, and can memory-map that file read-only (`view=True`), so
every web process shares one copy through the page cache and opens a new version in
milliseconds.

How it stays correct while it lags:
- A file covers entries with id <= `built_through`. Entries newer than that are scored
  exactly with numpy (at most DELTA_MAX of the newest), so a fresh entry is found at once.
- Deleted entries are filtered by joining hits with the live IndexEntry rows; their vectors
  leave the file at the next refresh (VectorTombstone). A purge rebuilds the file from
  scratch, so erased vectors do not survive in it.
- Keys are `entry_id * MAX_CHUNKS + chunk`, so a hit names its entry without a lookup table.
Workers refresh under an exclusive file lock, write a temporary file and rename it over the
old one: a web process still reading the old mapping keeps a valid (old) inode.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from django.conf import settings
from django.db import transaction
from django.db.models import Max

from atoms.core.embedding import MAX_CHUNKS
from atoms.models import IndexEntry, VectorIndexSnapshot, VectorTombstone
from memoryhub.prepared import prepared_cursor

logger = logging.getLogger("atoms.vector_index")

DELTA_MAX = 20_000  # newest unindexed entries scanned exactly; a refresh keeps this small
DELTA_PAGE = 1_000  # of them per statement
BUILD_BATCH = 2_000
EXPANSION_SEARCH = 128  # HNSW beam width at query time: recall over speed, still < 5 ms


def _file(tenant_id: int, config: str) -> Path | None:
    root = settings.ATOMS_VECTOR_INDEX_ROOT
    if root is None:
        return None
    return Path(root) / str(tenant_id) / f"{config}.usearch"


@contextmanager
def _locked(path: Path, *, wait: bool = True) -> Iterator[bool]:
    """Hold the file's lock; yields False at once, without it, when `wait` is off and
    another process holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _matrix(entry: IndexEntry) -> np.ndarray:
    return entry.matrix()


def _index_class() -> Any:
    """usearch's Index. torch, when installed, is imported before usearch's compiled module:
    with the two loaded the other way round, TorchScript's C++ number formatting throws
    std::bad_cast and the unwinder spins for ever, so the MiniLM provider's trace would hang
    the process (atoms/minilm_runtime.py, docs/atoms.md "Semantic index")."""
    try:  # a plain import: it waits for another thread's import of torch in progress
        import torch  # noqa: F401 - loaded first, on purpose
    except ImportError:  # no torch here: nothing to protect
        pass
    from usearch.index import Index

    return Index


# The file's layout. The file only finds candidates: a read's cosines come from the entries'
# float32 vectors (atoms.services.semantic), and a hit's score from the file only orders the
# hits. Quantized to 8 bits, a search for 2 x 200 keys over 100k MiniLM-wide vectors took
# 44-58 % of the time half floats did, and found nearly as many of the exact top 200
# (docs/benchmarks.md "8-bit vector files and queries in bfloat16"). The cosine metric:
# usearch scales 8-bit vectors by their norms for it, so a hit's score stays the cosine,
# comparable with the exact scores of the entries newer than the file.
FILE_DTYPE = "i8"
FILE_METRIC = "cos"


def _new_index(dimensions: int) -> Any:
    Index = _index_class()
    return Index(ndim=dimensions, metric=FILE_METRIC, dtype=FILE_DTYPE, connectivity=16, expansion_add=128,
                 expansion_search=EXPANSION_SEARCH)


def _header(path: Path | str) -> tuple[Any, Any] | None:
    """(ScalarKind, MetricKind) of the vector file at `path`, or None when usearch cannot
    read its header (a missing or damaged file)."""
    Index = _index_class()  # torch first (`_index_class`)
    try:
        meta = Index.metadata(str(path))
    except (OSError, RuntimeError, ValueError):
        return None
    return (meta["kind_scalar"], meta["kind_metric"]) if meta else None


def file_layout(path: Path | str) -> tuple[str, str] | None:
    """(scalar kind, metric) of the vector file at `path` as usearch names them, lower case
    ("i8", "cos"), or None when its header cannot be read."""
    header = _header(path)
    return None if header is None else (header[0].name.lower(), header[1].name.lower())


def current_layout(path: Path | str) -> bool:
    """Whether the file at `path` has this version's layout (FILE_DTYPE, FILE_METRIC),
    compared as usearch's own enum values. A file of another one (half floats and inner
    products before) still answers searches; the next refresh builds it whole, and the index
    sweep asks for one (atoms/tasks_index.py), as it does for a missing file."""
    header = _header(path)  # imports torch, then usearch (`_index_class`)
    from usearch.index import MetricKind, ScalarKind

    return header is not None and header == (ScalarKind.I8, MetricKind.Cos)


def refresh(tenant_id: int, config: str, *, full: bool = False, wait: bool = True) -> VectorIndexSnapshot | None:
    """Bring the file of (tenant, config) up to the newest entry; `full` rebuilds it from the
    entries alone (after a purge), and so does a file of an earlier layout. Without `wait`, it
    returns the snapshot row as it stands when another refresh holds the file (the index
    sweep: a rebuild can outlast a sweep's minute). Returns the snapshot row, or None without
    an index root or entries."""
    path = _file(tenant_id, config)
    if path is None:
        return None
    Index = _index_class()

    with _locked(path, wait=wait) as held:
        if not held:  # another refresh is at work on this file: it is the one to wait for
            return VectorIndexSnapshot.objects.filter(tenant_id=tenant_id, config=config).first()
        snapshot = VectorIndexSnapshot.objects.filter(tenant_id=tenant_id, config=config).first()
        entries = IndexEntry.objects.filter(tenant_id=tenant_id, config=config)
        newest = entries.aggregate(top=Max("id"))["top"] or 0
        sample = entries.only("dimensions").first()
        if sample is not None:
            dimensions = sample.dimensions
        elif snapshot is not None:
            dimensions = snapshot.dimensions
        else:
            return None
        incremental = (not full and snapshot is not None and snapshot.dimensions == dimensions and path.exists()
                       and current_layout(path))
        if incremental and snapshot is not None and newest <= snapshot.built_through \
                and not VectorTombstone.objects.filter(tenant_id=tenant_id, config=config).exists():
            return snapshot
        # usearch's own annotations say a restore may give None; its methods are untyped.
        index: Any = Index.restore(str(path)) if incremental else None
        if index is None:  # a full build, or a file usearch cannot read: build it whole
            incremental = False
            index = _new_index(dimensions)
        start = snapshot.built_through if incremental and snapshot is not None else 0
        tombstones = list(VectorTombstone.objects.filter(tenant_id=tenant_id, config=config)
                          .values_list("id", "entry_id", "count"))
        if incremental:
            for _, entry_id, count in tombstones:
                if entry_id <= start:
                    index.remove(np.arange(count, dtype=np.uint64) + np.uint64(entry_id * MAX_CHUNKS))
        # Keyset pages over this tenant's rows: ids are shared by all tenants, so stepping
        # through id ranges would mostly query other tenants' gaps.
        built = start
        while True:
            # An entry with a damaged blob stays out of the file (IndexEntry.INTACT_SQL).
            rows = list(entries.intact().filter(id__gt=built, id__lte=newest).order_by("id")[:BUILD_BATCH])
            if not rows:
                break
            keys = [np.arange(e.count, dtype=np.uint64) + np.uint64(e.id * MAX_CHUNKS) for e in rows if e.count]
            if keys:
                index.add(np.concatenate(keys), np.concatenate([_matrix(e) for e in rows if e.count]), threads=1)
            built = rows[-1].id
        built = max(built, newest)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        index.save(str(temporary))
        os.replace(temporary, path)
        with transaction.atomic():
            if tombstones:
                VectorTombstone.objects.filter(id__lte=max(t[0] for t in tombstones), tenant_id=tenant_id,
                                               config=config).delete()
            snapshot, _ = VectorIndexSnapshot.objects.update_or_create(
                tenant_id=tenant_id, config=config,
                defaults={"path": str(path), "dimensions": dimensions, "built_through": built,
                          "vectors": len(index),
                          "version": (snapshot.version + 1) if snapshot else 1})
        logger.info("vector index of tenant %s refreshed: %s vectors through entry %s", tenant_id, len(index), built)
        return snapshot


_opened: dict[tuple[int, str], tuple[int, object]] = {}
_opened_lock = threading.Lock()


class _Snapshot(NamedTuple):
    """The columns of a VectorIndexSnapshot row that a search needs."""

    tenant_id: int
    config: str
    version: int
    path: str
    built_through: int


def _open(snapshot: _Snapshot) -> Any:
    Index = _index_class()
    key = (snapshot.tenant_id, snapshot.config)
    with _opened_lock:
        cached = _opened.get(key)
        if cached and cached[0] == snapshot.version:
            return cached[1]
        try:
            index: Any = Index.restore(snapshot.path, view=True)
        except (OSError, RuntimeError, ValueError) as exc:
            logger.warning("vector index %s cannot be opened (%s); searching exactly", snapshot.path, exc)
            return None
        if index is None:
            return None
        index.expansion_search = EXPANSION_SEARCH
        _opened[key] = (snapshot.version, index)
        return index


def nearest(tenant_id: int, config: str, queries: np.ndarray, k: int) -> dict[int, float]:
    """Up to `k` entries per query vector, merged: entry id → its best cosine over the
    queries. Approximate for the part in the file, exact for the newer entries."""
    best: dict[int, float] = {}
    for hits in nearest_each(tenant_id, config, queries, k)[0]:
        for entry_id, score in hits.items():
            if score > best.get(entry_id, -2.0):
                best[entry_id] = score
    return dict(sorted(best.items(), key=lambda item: (-item[1], item[0])))


def forget_opened() -> None:
    """Drop every mapped file (tests, and after a purge in this process)."""
    with _opened_lock:
        _opened.clear()


def nearest_each(tenant_id: int, config: str, queries: np.ndarray, k: int) -> tuple[list[dict[int, float]], bool, int]:
    """For each query vector, up to `k` entries with their best cosine (entry id → score;
    approximate from the file, exact for the newer entries), plus whether the file (an approximate HNSW search) was used and how many entries
    the search could reach at most (file vectors + newer entries scanned exactly)."""
    out: list[dict[int, float]] = [{} for _ in range(len(queries))]
    if len(queries) == 0 or k <= 0:
        return out, False, 0

    def keep(row: int, entry_id: int, score: float) -> None:
        if score > out[row].get(entry_id, -2.0):
            out[row][entry_id] = score

    built = 0
    reachable = 0
    snapshot = _snapshot(tenant_id, config)
    index = _open(snapshot) if snapshot is not None and Path(snapshot.path).exists() else None
    if index is not None and snapshot is not None:
        built = snapshot.built_through
        reachable = len(index)
        found = index.search(queries.astype(np.float32), k * 2)  # chunks of one entry share the beam
        keys = np.atleast_2d(found.keys)
        distances = np.atleast_2d(found.distances)
        counts = np.atleast_1d(getattr(found, "counts", len(found.keys)))
        for row in range(len(counts)):
            # Converted as whole rows (the same doubles as float() of each element): a search
            # of 2 x 200 keys converted element by element cost a third of a millisecond.
            entry_ids = (keys[row][:counts[row]] // MAX_CHUNKS).tolist()
            scores = (1.0 - distances[row][:counts[row]].astype(np.float64)).tolist()
            for entry_id, score in zip(entry_ids, scores, strict=True):
                keep(row, entry_id, score)
    for entry_id, count, dimensions, vectors in _newer_entries(tenant_id, config, built):
        reachable += count
        scores = IndexEntry.unpack(vectors, count, dimensions) @ queries.T  # (chunks, queries)
        for row, best in enumerate(scores.max(axis=0)):
            keep(row, entry_id, float(best))
    trimmed = [dict(sorted(hits.items(), key=lambda item: (-item[1], item[0]))[:k]) for hits in out]
    return trimmed, index is not None, reachable


def _snapshot(tenant_id: int, config: str) -> _Snapshot | None:
    """The file's snapshot row, in plain SQL through a prepared statement: every hybrid read
    and search asks (docs/atoms.md "Read path costs")."""
    table = VectorIndexSnapshot._meta.db_table
    with prepared_cursor() as cursor:
        cursor.execute(f"SELECT version, path, built_through FROM {table} "  # noqa: S608 - the model's table
                       f"WHERE tenant_id = %s AND config = %s", [tenant_id, config])
        row = cursor.fetchone()
    return None if row is None else _Snapshot(tenant_id, config, *row)


def _newer_entries(tenant_id: int, config: str, built: int) -> Iterator[tuple[int, int, int, bytes]]:
    """(id, count, dimensions, vectors) of the newest intact entries with vectors and an id
    above `built`, newest first, at most DELTA_MAX: pages of DELTA_PAGE through one prepared
    statement (PostgreSQL's binary rows), so that the usual case, a file that is up to date,
    costs one short statement and a lagging one holds one page in memory at a time."""
    table = IndexEntry._meta.db_table
    sql = (f"SELECT id, count, dimensions, vectors FROM {table} "  # noqa: S608 - the model's table
           f"WHERE tenant_id = %s AND config = %s AND id > %s AND id < %s AND count > 0 "
           f"AND {IndexEntry.INTACT_SQL.format(e='')} ORDER BY id DESC LIMIT %s")
    below = 2**63 - 1  # above every id (a signed 64-bit column): the first page has no upper bound
    left = DELTA_MAX
    while left > 0:
        size = min(DELTA_PAGE, left)
        with prepared_cursor(binary=True) as cursor:
            cursor.execute(sql, [tenant_id, config, built, below, size])
            page = cursor.fetchall()
        yield from page
        if len(page) < size:
            return
        left -= len(page)
        below = page[-1][0]
