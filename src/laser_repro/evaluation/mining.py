"""Margin-based bitext mining (Artetxe & Schwenk, 2019; LASER's ``source/mine_bitexts.py``).

For a candidate pair (x, y) of L2-normalised sentence embeddings::

    a = cos(x, y)
    b = mean(cos(x, z) for z in kNN_y(x)) / 2 + mean(cos(y, z) for z in kNN_x(y)) / 2
    ratio = a / b        distance = a - b        absolute = a

The k nearest neighbours of every source sentence among the targets (forward) and of every
target among the sources (backward) are exact cosine neighbours. The candidates of a source
are its k forward neighbours; it keeps the one with the best margin (first one on a tie, in
neighbour order), and symmetrically for targets. Retrieval modes, as LASER's ``--retrieval``:

* ``forward``: every source with its best target;
* ``backward``: every target with its best source;
* ``intersection``: the forward pairs whose target picks that source back;
* ``max``: forward and backward pairs pooled, by score descending, kept greedily 1:1 (a pair
  whose source or target was already taken is skipped).

Same arithmetic as LASER, so scores are equal bit for bit: rows L2-normalised by faiss,
float32 neighbour similarities from the same sgemm blocking as faiss's ``IndexFlatIP`` search
(bit-identical to it in our checks), means with
``mean(axis=1)``, ``(fwd_mean + bwd_mean) / 2`` and the margin in float32, ``a`` recomputed as a
dot product of the two rows (:func:`candidate_dots`), scores handed out as float64 (LASER's
arrays). Deviations, on purpose:

* equal scores: a stable order by default (forward entries by source row, then backward ones
  by target row); LASER's unstable ``np.argsort`` order on request (``ties="laser"``);
* LASER's ``fwd``/``bwd`` mining modes fail (they need the mean of the direction they skip);
  here every mode computes both directions;
* ``threshold`` (LASER's ``--threshold``, scores strictly above) applies to every mode, not only
  to ``max``; :func:`mine` applies none unless asked (the ``bucc-mine`` CLI: LASER's 0).

Memory is bounded: embeddings are read ``shard_rows`` rows at a time (they may be memory-mapped
or :func:`open_npy` readers), normalised per block, and only one block-by-block similarity
matrix exists at a time. On CPU each block product serves both directions (one matrix product
where LASER's two ``IndexFlatIP`` searches compute every similarity twice); the top-k are kept
in faiss's own heaps, fed in ascending id order, so ties are resolved exactly as faiss's flat
index search resolves them and results do not depend on ``shard_rows``.
"""
from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)


class _ImportedOnUse:
    """A module imported at its first attribute read: the CLI registers bucc-mine's options from this module,
    and a machine without faiss (a GPU node running only ``doctor`` or training) must still start the CLI."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str):
        import importlib

        return getattr(importlib.import_module(self._name), attr)


faiss = _ImportedOnUse("faiss")

MARGINS = ("ratio", "distance", "absolute")
MODES = ("forward", "backward", "intersection", "max")
# LASER's --retrieval names
MODE_ALIASES = {"fwd": "forward", "bwd": "backward", "intersect": "intersection"}
TIES = ("stable", "laser")
# config evaluation.knn_device: where exact kNN runs (auto: GPU when faiss sees one)
KNN_DEVICES = ("auto", "cpu", "gpu")
# Rows per block. Not a power of two: transposing a 2^k-wide float32 matrix thrashes the
# cache (same-set strides); 8000 x 8000 similarities are 256 MB.
DEFAULT_SHARD_ROWS = 8000
# Rows of a similarity block transposed at once for the backward heaps (fits in L2/L3).
_STRIPE = 1024
# Candidate pairs whose rows are gathered at once to recompute their dot products.
_DOT_CHUNK = 8192


@dataclass(frozen=True)
class Neighbours:
    """k nearest neighbours of each query: ``sims`` float32 [n, k] (descending), ``idx`` int64."""

    sims: np.ndarray
    idx: np.ndarray


@dataclass(frozen=True)
class Candidates:
    """Mined pairs, best first: ``score`` float64, ``src`` / ``trg`` int64 rows of the inputs."""

    score: np.ndarray
    src: np.ndarray
    trg: np.ndarray

    def __len__(self) -> int:
        return len(self.score)


# --------------------------------------------------------------------------- inputs


class NpyRows:
    """Row blocks of a 2-D ``.npy`` file read on demand: unlike a memory map, the pages read are
    not kept in the process's resident memory, so mining 500k x 1024 stays small."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        try:  # the header only: np.load parses it, no page of the map is touched
            header = np.load(self.path, mmap_mode="r")
        except (ValueError, OSError) as err:
            raise ValueError(f"{self.path}: not a readable .npy file: {err}") from None
        if header.ndim != 2 or header.dtype.kind != "f" or not header.flags.c_contiguous:
            raise ValueError(f"{self.path}: expected a C-ordered 2-D float array, found shape "
                             f"{header.shape}, dtype {header.dtype}")
        self.shape, self.dtype, self.ndim = tuple(header.shape), header.dtype, 2
        self._offset = int(header.offset)
        del header

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, rows: slice) -> np.ndarray:
        if not isinstance(rows, slice) or rows.step not in (None, 1):
            raise TypeError("NpyRows supports contiguous row slices only")
        start, stop, _ = rows.indices(self.shape[0])
        stop = max(start, stop)
        count = (stop - start) * self.shape[1]
        offset = self._offset + start * self.shape[1] * self.dtype.itemsize
        rows = np.fromfile(self.path, dtype=self.dtype, count=count, offset=offset)
        if rows.size != count:
            raise ValueError(f"{self.path}: truncated while reading rows {start}-{stop}")
        return rows.reshape(stop - start, self.shape[1])


def open_npy(path: str | os.PathLike) -> NpyRows:
    """Embeddings of a ``.npy`` file, read block by block (see :class:`NpyRows`)."""
    return NpyRows(path)


def _check_embeddings(name: str, emb) -> tuple[int, int]:
    shape = getattr(emb, "shape", None)
    if shape is None or len(shape) != 2:
        raise ValueError(f"{name} embeddings must be a 2-D array [sentences, dim], got shape {shape}")
    if shape[0] == 0 or shape[1] == 0:
        raise ValueError(f"{name} embeddings are empty (shape {tuple(shape)})")
    dtype = np.dtype(getattr(emb, "dtype", np.float32))
    if dtype.kind != "f":
        raise ValueError(f"{name} embeddings must be floating point, got {dtype}")
    return int(shape[0]), int(shape[1])


def _block(emb, start: int, stop: int, name: str) -> np.ndarray:
    """Rows start:stop as a fresh C-contiguous float32 array, L2-normalised by faiss (as LASER)."""
    rows = emb[start:stop]
    if isinstance(emb, NpyRows):  # already a private buffer
        block = np.ascontiguousarray(rows, dtype=np.float32)
    else:
        block = np.array(rows, dtype=np.float32, order="C", copy=True)
    if not np.isfinite(block).all():
        bad = start + int(np.nonzero(~np.isfinite(block).all(axis=1))[0][0])
        raise ValueError(f"{name} embeddings: row {bad} contains NaN or infinity")
    faiss.normalize_L2(block)
    return block


def _blocks(emb, rows: int, name: str) -> Iterator[tuple[int, np.ndarray]]:
    n = emb.shape[0]
    for start in range(0, n, rows):
        yield start, _block(emb, start, min(start + rows, n), name)


# --------------------------------------------------------------------------- threads


@contextlib.contextmanager
def _threads(threads: int | None):
    """Limit faiss (OpenMP) and numpy's BLAS to `threads` inside the block; None: leave as is."""
    if threads is None:
        yield
        return
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(threads)
    try:
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:  # numpy's BLAS then uses its own default
            limits = contextlib.nullcontext()
        else:
            limits = threadpool_limits(limits=threads)
        with limits:
            yield
    finally:
        faiss.omp_set_num_threads(before)


# --------------------------------------------------------------------------- top-k


class _TopK:
    """Per-row top-k of similarities in faiss's min-heaps (the structure IndexFlatIP uses)."""

    def __init__(self, rows: int, k: int):
        self.vals = np.empty((rows, k), dtype=np.float32)
        self.ids = np.empty((rows, k), dtype=np.int64)
        self.heap = faiss.float_minheap_array_t()
        self.heap.nh, self.heap.k = rows, k
        self.heap.val, self.heap.ids = faiss.swig_ptr(self.vals), faiss.swig_ptr(self.ids)
        self.heap.heapify()

    def add_block(self, sims: np.ndarray, row0: int, id0: int) -> None:
        """Offer sims[i, j] with id id0 + j to heap row0 + i (sims C-contiguous float32)."""
        ni, nj = sims.shape
        self.heap.addn(nj, faiss.swig_ptr(sims), id0, row0, ni)

    def tops(self, row0: int, row1: int) -> np.ndarray:
        """Current k-th best value of heaps row0:row1 (the heap top; -FLT_MAX while not full),
        copied: comparisons against a contiguous array vectorise."""
        return np.ascontiguousarray(self.vals[row0:row1, 0])

    def add_sparse(self, rows: np.ndarray, ids: np.ndarray, vals: np.ndarray) -> None:
        """Offer vals[t] with id ids[t] to heap rows[t]; one heap's entries keep their order."""
        order = np.argsort(rows, kind="stable")
        rows, ids, vals = rows[order], ids[order], vals[order]
        starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
        counts = np.diff(np.r_[starts, len(rows)])
        line = np.repeat(np.arange(len(starts)), counts)
        col = np.arange(len(rows)) - np.repeat(starts, counts)
        width = int(counts.max())
        v = np.full((len(starts), width), -np.inf, dtype=np.float32)  # padding is never inserted
        v[line, col] = vals
        i = np.zeros((len(starts), width), dtype=np.int64)
        i[line, col] = ids
        heads = np.ascontiguousarray(rows[starts], dtype=np.int64)
        self.heap.addn_query_subset_with_ids(len(heads), faiss.swig_ptr(heads), width, faiss.swig_ptr(v),
                                             faiss.swig_ptr(i), width)

    def add_results(self, sims: np.ndarray, ids: np.ndarray, row0: int) -> None:
        """Offer search results (sims, ids) [ni, kk] to heaps row0:row0+ni."""
        sims = np.ascontiguousarray(sims, dtype=np.float32)
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        ni, nj = sims.shape
        self.heap.addn_with_ids(nj, faiss.swig_ptr(sims), faiss.swig_ptr(ids), nj, row0, ni)

    def result(self) -> Neighbours:
        self.heap.reorder()  # best first, as faiss returns search results
        return Neighbours(self.vals, self.ids)


def _check_knn_args(k: int, shard_rows: int) -> None:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    if isinstance(shard_rows, bool) or not isinstance(shard_rows, (int, np.integer)) or shard_rows < 1:
        raise ValueError(f"shard_rows must be a positive integer, got {shard_rows!r}")


def faiss_gpus() -> int:
    """GPUs faiss can use: 0 for a faiss without GPU support (faiss-cpu) or where none is visible."""
    return faiss.get_num_gpus() if hasattr(faiss, "get_num_gpus") else 0


def knn_engine(device: str) -> str:
    """Where the exact kNN searches run ("cpu" or "gpu") for a ``knn_device`` setting: ``cpu``;
    ``gpu`` (an error without a faiss GPU); ``auto``: GPU when faiss sees one."""
    if device not in KNN_DEVICES:
        raise ValueError(f"unknown knn device {device!r}; choose one of {', '.join(KNN_DEVICES)}")
    if device == "cpu":
        return "cpu"
    ngpu = faiss_gpus()
    if device == "gpu" and ngpu == 0:
        build = "has no GPU support (faiss-cpu installed; bash scripts/setup.sh --gpu --cuda X installs faiss-gpu-cu12)" \
            if not hasattr(faiss, "StandardGpuResources") else "sees no GPU (CUDA_VISIBLE_DEVICES, the job's GPUs)"
        raise RuntimeError(f"knn_device gpu: faiss {faiss.__version__} {build}")
    if ngpu == 0:
        log.info("no GPU visible to faiss: exact kNN runs on CPU")
    return "gpu" if ngpu else "cpu"


def flat_ip_index(dim: int, engine: str, gpu_resources: list | None = None):
    """The exact inner-product index of every kNN search: ``IndexFlatIP`` on CPU; on GPU the same
    index on every GPU faiss sees (replicas: the queries are split among them). `gpu_resources`:
    one ``StandardGpuResources`` per GPU (:func:`gpu_resources`), shared by the indexes of a search
    (each set holds cuBLAS handles and scratch memory); None: a new set for this index."""
    index = faiss.IndexFlatIP(dim)
    if engine == "cpu":
        return index
    if engine != "gpu":
        raise ValueError(f"unknown kNN engine {engine!r}; choose cpu or gpu")
    if gpu_resources is None:
        return faiss.index_cpu_to_all_gpus(index)
    return faiss.index_cpu_to_gpu_multiple_py(gpu_resources, index)


def gpu_resources() -> list:
    """One faiss ``StandardGpuResources`` per GPU faiss sees."""
    return [faiss.StandardGpuResources() for _ in range(faiss_gpus())]


def _gpu_search(queries, database, k: int, shard_rows: int, resources: list) -> Neighbours:
    return _knn_search(queries, database, k, shard_rows, lambda dim: flat_ip_index(dim, "gpu", resources))


def _add_columns(top: _TopK, sims: np.ndarray, q0: int, d0: int, stripe_buf: np.ndarray) -> None:
    """Offer column j of `sims` (row r has id q0 + r) to heap d0 + j, a stripe of rows at a time.

    A stripe whose values mostly beat the heap tops (the first rows a heap sees) is transposed
    and scanned; otherwise only the values above the tops are gathered (few once the heaps hold
    a few thousand rows' best). Ids still reach each heap in ascending order."""
    for s0 in range(0, len(sims), _STRIPE):
        part = sims[s0 : s0 + _STRIPE]
        # flatnonzero: np.nonzero of a 2-D mask is ten times slower
        passed = np.flatnonzero(part > top.tops(d0, d0 + part.shape[1]))
        if len(passed) * 16 > part.size:
            t = stripe_buf[: part.size].reshape(part.shape[1], part.shape[0])
            t[...] = part.T
            top.add_block(t, d0, q0 + s0)
        elif len(passed):
            rr, cc = np.divmod(passed, part.shape[1])
            top.add_sparse(cc + d0, rr + (q0 + s0), part.ravel()[passed])


def _knn_blocks(queries, database, k: int, shard_rows: int, both: bool
                ) -> tuple[Neighbours, Neighbours | None]:
    """CPU engine: block products ``Q_b @ D_b.T``; their rows feed the query heaps and, when
    `both`, their columns (transposed a stripe at a time) the database heaps. Ids reach every
    heap in ascending order whatever the block size, so results do not depend on it."""
    nq, _ = _check_embeddings("query", queries)
    nd, _ = _check_embeddings("database", database)
    fwd = _TopK(nq, min(k, nd))
    bwd = _TopK(nd, min(k, nq)) if both else None
    sims_buf = np.empty(min(shard_rows, nq) * min(shard_rows, nd), dtype=np.float32)
    stripe_buf = np.empty(min(shard_rows, nd) * min(_STRIPE, shard_rows, nq), dtype=np.float32)
    single_db = nd <= shard_rows
    db_cache = _block(database, 0, nd, "database") if single_db else None
    for q0, qb in _blocks(queries, shard_rows, "query"):
        db_iter = [(0, db_cache)] if single_db else _blocks(database, shard_rows, "database")
        for d0, db in db_iter:
            sims = sims_buf[: len(qb) * len(db)].reshape(len(qb), len(db))
            np.matmul(qb, db.T, out=sims)
            fwd.add_block(sims, q0, d0)
            if bwd is not None:
                _add_columns(bwd, sims, q0, d0, stripe_buf)
            del db  # freed before the next block is read
        del qb
    return fwd.result(), (bwd.result() if bwd is not None else None)


def _knn_search(queries, database, k: int, shard_rows: int,
                make_index: Callable[[int], object]) -> Neighbours:
    """Index-search engine (the GPU path; LASER's knnGPU): one flat index per database shard,
    each shard's top-k merged into faiss heaps. Ties across shards may resolve differently from
    the CPU engine (results arrive best first, not in id order)."""
    nq, dim = _check_embeddings("query", queries)
    nd, _ = _check_embeddings("database", database)
    top = _TopK(nq, min(k, nd))
    for d0, db in _blocks(database, shard_rows, "database"):
        index = make_index(dim)
        index.add(db)
        for q0, qb in _blocks(queries, shard_rows, "query"):
            sims, ids = index.search(qb, min(k, len(db)))
            top.add_results(sims, ids + d0, q0)
        del index
    return top.result()


def knn(queries, database, k: int, *, shard_rows: int = DEFAULT_SHARD_ROWS,
        threads: int | None = None, device: str = "cpu") -> tuple[np.ndarray, np.ndarray]:
    """Exact cosine k nearest neighbours of every query row among the database rows.

    Inputs are any 2-D float arrays (np.memmap and :class:`NpyRows` included); rows are
    L2-normalised here. Returns (sims float32 [n, min(k, len(database))], idx int64), best
    first. Ties resolve as faiss's ``IndexFlatIP`` search does, independently of `shard_rows`.
    `device`: one of :data:`KNN_DEVICES` (see :func:`knn_engine`).
    """
    _check_knn_args(k, shard_rows)
    if _check_embeddings("query", queries)[1] != _check_embeddings("database", database)[1]:
        raise ValueError(f"dimension mismatch: queries {queries.shape[1]}, database {database.shape[1]}")
    engine = knn_engine(device)
    with _threads(threads):
        if engine == "gpu":
            res = _gpu_search(queries, database, int(k), int(shard_rows), gpu_resources())
        else:
            res = _knn_blocks(queries, database, int(k), int(shard_rows), both=False)[0]
    return res.sims, res.idx


def knn_both(src, trg, k: int, *, shard_rows: int = DEFAULT_SHARD_ROWS, threads: int | None = None,
             device: str = "cpu") -> tuple[Neighbours, Neighbours]:
    """Forward (src -> trg) and backward (trg -> src) neighbours; on CPU from one pass of products,
    on GPU (`device`, see :func:`knn_engine`) two index searches (LASER's knnGPU)."""
    _check_knn_args(k, shard_rows)
    if _check_embeddings("source", src)[1] != _check_embeddings("target", trg)[1]:
        raise ValueError(f"dimension mismatch: source {src.shape[1]}, target {trg.shape[1]}")
    engine = knn_engine(device)
    with _threads(threads):
        if engine == "gpu":
            resources = gpu_resources()
            return (_gpu_search(src, trg, int(k), int(shard_rows), resources),
                    _gpu_search(trg, src, int(k), int(shard_rows), resources))
        fwd, bwd = _knn_blocks(src, trg, int(k), int(shard_rows), both=True)
    return fwd, bwd


def dot_tolerance(dim: int) -> float:
    """Bound on the difference of two float32 cosines of the same unit vectors summed in different
    orders (CPU BLAS and cuBLAS): ``dim`` roundings of at most eps/2 of a sum bounded by 1 (Cauchy-Schwarz),
    doubled for normalisations done by different code."""
    return float(dim * np.finfo(np.float32).eps)


def neighbours_disagree(a: Neighbours, b: Neighbours, atol: float) -> np.ndarray:
    """Rows whose neighbours differ beyond ties: a row agrees when its similarities (best first)
    match within `atol`, a neighbour found by both has the same similarity within `atol` in both,
    and a neighbour found by one only is within `atol` of the row's last (k-th) similarity, i.e.
    tied at the cut (the CPU and GPU engines order near-equal values differently)."""
    if a.idx.shape != b.idx.shape:
        raise ValueError(f"neighbour arrays differ in shape: {a.idx.shape} vs {b.idx.shape}")
    close = np.abs(a.sims - b.sims) <= atol
    bad = ~close.all(axis=1)
    for r in np.flatnonzero((a.idx != b.idx).any(axis=1) & ~bad):
        sa = dict(zip(a.idx[r].tolist(), a.sims[r].tolist()))
        sb = dict(zip(b.idx[r].tolist(), b.sims[r].tolist()))
        cut = min(a.sims[r, -1], b.sims[r, -1])
        shared_ok = all(abs(sa[i] - sb[i]) <= atol for i in sa.keys() & sb.keys())
        only_ok = all(s - cut <= atol for s in [sa[i] for i in sa.keys() - sb.keys()]
                      + [sb[i] for i in sb.keys() - sa.keys()])
        bad[r] = not (shared_ok and only_ok)
    return np.flatnonzero(bad)


# --------------------------------------------------------------------------- margins


def _margin(a: np.ndarray, b: np.ndarray, margin: str) -> np.ndarray:
    if margin == "ratio":
        return a / b
    if margin == "distance":
        return a - b
    return a.copy()


def _row_dots(a: np.ndarray, rows_a: np.ndarray, b: np.ndarray, rows_b: np.ndarray) -> np.ndarray:
    """a[rows_a[t]] . b[rows_b[t]] for every t: one BLAS dot per pair (matmul of 1 x d by d x 1),
    the rounding of LASER's x.dot(y); gathered a chunk of pairs at a time to bound memory."""
    out = np.empty(len(rows_a), dtype=np.float32)
    for s in range(0, len(rows_a), _DOT_CHUNK):
        ra, rb = rows_a[s : s + _DOT_CHUNK], rows_b[s : s + _DOT_CHUNK]
        out[s : s + len(ra)] = np.matmul(a[ra][:, None, :], b[rb][:, :, None])[:, 0, 0]
    return out


def candidate_dots(src, trg, fwd: Neighbours, bwd: Neighbours, *, shard_rows: int = DEFAULT_SHARD_ROWS
                   ) -> tuple[np.ndarray, np.ndarray]:
    """cos of every forward [n_src, k] and backward [n_trg, k] candidate pair, recomputed as LASER
    scores them (``x.dot(y)`` of the normalised rows), block by block.

    The search's similarities come from matrix products whose float32 rounding differs from a
    dot product in the last bits; with these, margins equal LASER's bit for bit."""
    _check_knn_args(1, shard_rows)
    _, dim = _check_embeddings("source", src)
    n_trg, _ = _check_embeddings("target", trg)
    # no similarity matrix here: blocks as large as the search's peak memory allows
    shard_rows = shard_rows + shard_rows * shard_rows // (2 * dim)
    fwd_a = np.empty(fwd.idx.shape, dtype=np.float32)
    bwd_a = np.empty(bwd.idx.shape, dtype=np.float32)
    cached = _block(trg, 0, n_trg, "target") if n_trg <= shard_rows else None
    for x0, xb in _blocks(src, shard_rows, "source"):
        x1 = x0 + len(xb)
        f_idx = fwd.idx[x0:x1]
        for y0, yb in ([(0, cached)] if cached is not None else _blocks(trg, shard_rows, "target")):
            y1 = y0 + len(yb)
            ii, kk = np.nonzero((f_idx >= y0) & (f_idx < y1))
            if len(ii):
                fwd_a[x0 + ii, kk] = _row_dots(xb, ii, yb, f_idx[ii, kk] - y0)
            b_idx = bwd.idx[y0:y1]
            jj, kk = np.nonzero((b_idx >= x0) & (b_idx < x1))
            if len(jj):
                bwd_a[y0 + jj, kk] = _row_dots(yb, jj, xb, b_idx[jj, kk] - x0)
            del yb  # freed before the next block is read
        del xb
    return fwd_a, bwd_a


def candidate_scores(fwd: Neighbours, bwd: Neighbours, margin: str = "ratio",
                     dots: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Margin score (float32) of every forward candidate [n_src, k] and backward one [n_trg, k].

    a = `dots` (from :func:`candidate_dots`) when given, else the search's similarities."""
    if margin not in MARGINS:
        raise ValueError(f"unknown margin {margin!r}; choose one of {', '.join(MARGINS)}")
    fwd_a, bwd_a = dots if dots is not None else (fwd.sims, bwd.sims)
    if fwd_a.shape != fwd.idx.shape or bwd_a.shape != bwd.idx.shape:
        raise ValueError("dots do not match the neighbour arrays")
    fwd_mean = fwd.sims.mean(axis=1)
    bwd_mean = bwd.sims.mean(axis=1)
    two = np.float32(2)
    fwd_scores = _margin(fwd_a, (fwd_mean[:, None] + bwd_mean[fwd.idx]) / two, margin)
    bwd_scores = _margin(bwd_a, (bwd_mean[:, None] + fwd_mean[bwd.idx]) / two, margin)
    return fwd_scores, bwd_scores


def _by_score(score: np.ndarray, src: np.ndarray, trg: np.ndarray, ties: str) -> Candidates:
    score = score.astype(np.float64)  # LASER keeps its float32 margins in float64 arrays
    order = np.argsort(-score, kind="stable") if ties == "stable" else np.argsort(-score)
    return Candidates(score[order], src[order].astype(np.int64), trg[order].astype(np.int64))


def select(fwd: Neighbours, bwd: Neighbours, *, margin: str = "ratio", mode: str = "max",
           threshold: float | None = None, dots: tuple[np.ndarray, np.ndarray] | None = None,
           ties: str = "stable") -> Candidates:
    """Candidate pairs from precomputed neighbours (see the module docstring for the modes).

    `dots`: candidate cosines from :func:`candidate_dots` (default: the search's similarities).

    `ties`: order of equal scores (they are common: float32 margins of 10^5 pairs collide).
    ``stable``: forward entries by source row, then backward entries by target row.
    ``laser``: numpy's default (unstable) argsort of the same float64 array, as LASER, so
    output files are identical to LASER's line by line -- that order depends on the numpy
    version and on the CPU's SIMD sort, hence not the default.

    `threshold`: keep only scores strictly above it (LASER's ``--threshold``; in ``max`` mode
    applied after the 1:1 selection, so a pair below it still uses up its sentences).
    """
    mode = MODE_ALIASES.get(mode, mode)
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
    if ties not in TIES:
        raise ValueError(f"unknown tie order {ties!r}; choose one of {', '.join(TIES)}")
    fwd_scores, bwd_scores = candidate_scores(fwd, bwd, margin, dots)
    n_src, n_trg = len(fwd_scores), len(bwd_scores)
    fwd_pick = fwd_scores.argmax(axis=1)  # first maximum, as LASER
    bwd_pick = bwd_scores.argmax(axis=1)
    fwd_best = fwd.idx[np.arange(n_src), fwd_pick]
    bwd_best = bwd.idx[np.arange(n_trg), bwd_pick]
    fwd_score = fwd_scores[np.arange(n_src), fwd_pick]
    bwd_score = bwd_scores[np.arange(n_trg), bwd_pick]
    src_rows, trg_rows = np.arange(n_src, dtype=np.int64), np.arange(n_trg, dtype=np.int64)
    if mode == "forward":
        cands = _by_score(fwd_score, src_rows, fwd_best, ties)
    elif mode == "backward":
        cands = _by_score(bwd_score, bwd_best, trg_rows, ties)
    elif mode == "intersection":
        mutual = bwd_best[fwd_best] == src_rows
        cands = _by_score(fwd_score[mutual], src_rows[mutual], fwd_best[mutual], ties)
    else:
        pooled = _by_score(np.concatenate([fwd_score, bwd_score]), np.concatenate([src_rows, bwd_best]),
                           np.concatenate([fwd_best, trg_rows]), ties)
        used_src, used_trg = bytearray(n_src), bytearray(n_trg)
        keep = []
        for pos, (s, t) in enumerate(zip(pooled.src.tolist(), pooled.trg.tolist())):
            if not used_src[s] and not used_trg[t]:
                used_src[s] = used_trg[t] = 1
                keep.append(pos)
        keep = np.asarray(keep, dtype=np.int64)
        cands = Candidates(pooled.score[keep], pooled.src[keep], pooled.trg[keep])
    if threshold is not None:
        above = cands.score > threshold
        cands = Candidates(cands.score[above], cands.src[above], cands.trg[above])
    return cands


def mine(src_emb, trg_emb, *, k: int = 4, margin: str = "ratio", mode: str = "max",
         shard_rows: int = DEFAULT_SHARD_ROWS, threads: int | None = None, device: str = "cpu",
         threshold: float | None = None, ties: str = "stable") -> Candidates:
    """Mine parallel sentence pairs between two embedding matrices (rows = sentences).

    k: neighbourhood size (capped at the other side's size, as LASER); margin: ratio, distance
    or absolute; mode: forward, backward, intersection or max (LASER's fwd, bwd, intersect
    accepted); shard_rows: rows per block (memory ~ 4 * shard_rows * (shard_rows + 2 * dim) bytes);
    threads: faiss/BLAS threads (None: library defaults); device: where the kNN searches run
    (:data:`KNN_DEVICES`, see :func:`knn_engine`); threshold, ties: see :func:`select`. Returns the pairs sorted by score
    descending. Scores equal LASER's bit for bit (see :func:`candidate_dots`).
    """
    if margin not in MARGINS:
        raise ValueError(f"unknown margin {margin!r}; choose one of {', '.join(MARGINS)}")
    if MODE_ALIASES.get(mode, mode) not in MODES:
        raise ValueError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
    if ties not in TIES:
        raise ValueError(f"unknown tie order {ties!r}; choose one of {', '.join(TIES)}")
    fwd, bwd = knn_both(src_emb, trg_emb, k, shard_rows=shard_rows, threads=threads, device=device)
    with _threads(threads):
        dots = candidate_dots(src_emb, trg_emb, fwd, bwd, shard_rows=shard_rows)
    return select(fwd, bwd, margin=margin, mode=mode, threshold=threshold, dots=dots, ties=ties)


# --------------------------------------------------------------------------- candidate files


def write_candidates(path: str | os.PathLike, cands: Candidates) -> None:
    """``score<TAB>src_row<TAB>trg_row`` per line, best first; scores in round-trip precision."""
    from laser_repro.core.textio import atomic_output

    with atomic_output(path) as f:
        for s, i, j in zip(cands.score.tolist(), cands.src.tolist(), cands.trg.tolist()):
            f.write(f"{s!r}\t{i}\t{j}\n")


def read_candidates(path: str | os.PathLike) -> Candidates:
    """Inverse of :func:`write_candidates`; malformed lines raise textio.InputError (file, line)."""
    from laser_repro.core.textio import InputError, iter_lines

    score, src, trg = [], [], []
    for number, line in enumerate(iter_lines(path), start=1):
        fields = line.split("\t")
        try:
            if len(fields) != 3:
                raise ValueError(f"expected 3 tab-separated fields, found {len(fields)}")
            s, i, j = float(fields[0]), int(fields[1]), int(fields[2])
            if i < 0 or j < 0:
                raise ValueError("negative row")
        except ValueError as err:
            raise InputError(f"{path}: line {number}: bad candidate line {line[:80]!r} ({err})") from None
        score.append(s)
        src.append(i)
        trg.append(j)
    return Candidates(np.asarray(score, dtype=np.float64), np.asarray(src, dtype=np.int64),
                      np.asarray(trg, dtype=np.int64))
