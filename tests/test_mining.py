"""Margin-based mining: a hand-computed example for every margin and mode, sharding, inputs."""
from __future__ import annotations

import itertools

import faiss
import numpy as np
import pytest

from laser_repro.evaluation import mining

# Cosine of source i and target j. The source embeddings are basis vectors e_i and target j is
# (M[:, j], sqrt(1 - |M[:, j]|^2)) in 5 dimensions, so cos(s_i, t_j) = M[i, j] exactly.
M = np.array([
    # t0   t1   t2   t3   t4
    [0.9, 0.1, 0.2, 0.0, 0.3],  # s0
    [0.2, 0.8, 0.7, 0.1, 0.0],  # s1
    [0.1, 0.4, 0.5, 0.3, 0.2],  # s2
    [0.0, 0.2, 0.1, 0.4, 0.6],  # s3
])
K = 2
# Worked by hand with k = 2:
# forward neighbours (row top-2) and their mean       backward neighbours (column top-2), mean
#   s0: t0 .9, t4 .3 -> .60                              t0: s0 .9, s1 .2 -> .55
#   s1: t1 .8, t2 .7 -> .75                              t1: s1 .8, s2 .4 -> .60
#   s2: t2 .5, t1 .4 -> .45                              t2: s1 .7, s2 .5 -> .60
#   s3: t4 .6, t3 .4 -> .50                              t3: s3 .4, s2 .3 -> .35
#                                                        t4: s3 .6, s0 .3 -> .45
FWD_IDX = [[0, 4], [1, 2], [2, 1], [4, 3]]
FWD_SIM = [[0.9, 0.3], [0.8, 0.7], [0.5, 0.4], [0.6, 0.4]]
BWD_IDX = [[0, 1], [1, 2], [1, 2], [3, 2], [3, 0]]
BWD_SIM = [[0.9, 0.2], [0.8, 0.4], [0.7, 0.5], [0.4, 0.3], [0.6, 0.3]]
# b = (fwd mean + bwd mean) / 2 of each candidate; ratio a / b, distance a - b:
#   s0-t0 .9 / .575 = 1.565217  .325     s0-t4 .3 / .525 = 0.571429 -.225
#   s1-t1 .8 / .675 = 1.185185  .125     s1-t2 .7 / .675 = 1.037037  .025
#   s2-t2 .5 / .525 = 0.952381 -.025     s2-t1 .4 / .525 = 0.761905 -.125
#   s3-t4 .6 / .475 = 1.263158  .125     s3-t3 .4 / .425 = 0.941176 -.025
#   t0-s1 .2 / .650 = 0.307692 -.450     t3-s2 .3 / .400 = 0.750000 -.100
# best forward:  s0->t0, s1->t1, s2->t2, s3->t4;  best backward: t0->s0, t1->s1, t2->s1, t3->s3, t4->s3
EXPECTED = {
    ("ratio", "forward"): [(1.565217, 0, 0), (1.263158, 3, 4), (1.185185, 1, 1), (0.952381, 2, 2)],
    ("ratio", "backward"): [(1.565217, 0, 0), (1.263158, 3, 4), (1.185185, 1, 1), (1.037037, 1, 2),
                            (0.941176, 3, 3)],
    # s2->t2 is not confirmed backward (t2 prefers s1)
    ("ratio", "intersection"): [(1.565217, 0, 0), (1.263158, 3, 4), (1.185185, 1, 1)],
    # pooled, best first: s0t0 x2, s3t4 x2, s1t1 x2, s1t2 (s1 taken), s2t2 (kept), s3t3 (s3 taken)
    ("ratio", "max"): [(1.565217, 0, 0), (1.263158, 3, 4), (1.185185, 1, 1), (0.952381, 2, 2)],
    # absolute: the first neighbour of every sentence; max: .9 s0t0, .8 s1t1, .7 s1t2 (s1 taken),
    # .6 s3t4, .5 s2t2, .4 s3t3 (s3 taken)
    ("absolute", "forward"): [(0.9, 0, 0), (0.8, 1, 1), (0.6, 3, 4), (0.5, 2, 2)],
    ("absolute", "backward"): [(0.9, 0, 0), (0.8, 1, 1), (0.7, 1, 2), (0.6, 3, 4), (0.4, 3, 3)],
    ("absolute", "intersection"): [(0.9, 0, 0), (0.8, 1, 1), (0.6, 3, 4)],
    ("absolute", "max"): [(0.9, 0, 0), (0.8, 1, 1), (0.6, 3, 4), (0.5, 2, 2)],
    # distance: s1t1 and s3t4 both score .125 (their order depends on float rounding: compared as sets)
    ("distance", "forward"): [(0.325, 0, 0), (0.125, 1, 1), (0.125, 3, 4), (-0.025, 2, 2)],
    ("distance", "backward"): [(0.325, 0, 0), (0.125, 1, 1), (0.125, 3, 4), (0.025, 1, 2), (-0.025, 3, 3)],
    ("distance", "intersection"): [(0.325, 0, 0), (0.125, 1, 1), (0.125, 3, 4)],
    ("distance", "max"): [(0.325, 0, 0), (0.125, 1, 1), (0.125, 3, 4), (-0.025, 2, 2)],
}


def hand_embeddings():
    src = np.eye(4, 5, dtype=np.float32)
    trg = np.zeros((5, 5), dtype=np.float32)
    trg[:, :4] = M.T
    trg[:, 4] = np.sqrt(1 - (M ** 2).sum(axis=0))
    return src, trg


def as_rows(c: mining.Candidates):
    return [(s, i, j) for s, i, j in zip(c.score.tolist(), c.src.tolist(), c.trg.tolist())]


def test_hand_example_neighbours():
    src, trg = hand_embeddings()
    sims, idx = mining.knn(src, trg, K)
    np.testing.assert_array_equal(idx, FWD_IDX)
    np.testing.assert_allclose(sims, FWD_SIM, rtol=1e-6)
    sims, idx = mining.knn(trg, src, K)
    np.testing.assert_array_equal(idx, BWD_IDX)
    np.testing.assert_allclose(sims, BWD_SIM, rtol=1e-6)
    assert sims.dtype == np.float32 and idx.dtype == np.int64


@pytest.mark.parametrize("margin,mode", sorted(EXPECTED))
def test_hand_example(margin, mode):
    src, trg = hand_embeddings()
    got = as_rows(mining.mine(src, trg, k=K, margin=margin, mode=mode))
    want = EXPECTED[margin, mode]
    if margin == "distance":
        got_set = {(i, j): s for s, i, j in got}
        assert set(got_set) == {(i, j) for _, i, j in want}
        for s, i, j in want:
            assert got_set[i, j] == pytest.approx(s, abs=1e-6)
    else:
        assert [(i, j) for _, i, j in got] == [(i, j) for _, i, j in want]
        np.testing.assert_allclose([s for s, _, _ in got], [s for s, _, _ in want], atol=1e-6)
    assert all(a[0] >= b[0] for a, b in itertools.pairwise(got))


def test_laser_mode_names_and_threshold():
    src, trg = hand_embeddings()
    assert as_rows(mining.mine(src, trg, k=K, mode="intersect")) == as_rows(
        mining.mine(src, trg, k=K, mode="intersection"))
    # strictly above the threshold, applied after the 1:1 selection: s2t2 (0.952) is out at 1.0,
    # and s1t2 (1.037, above 1.0) stays out because s1 is taken
    kept = mining.mine(src, trg, k=K, mode="max", threshold=1.0)
    assert [(i, j) for _, i, j in as_rows(kept)] == [(0, 0), (3, 4), (1, 1)]
    last = mining.mine(src, trg, k=K, mode="max").score[-1]
    assert len(mining.mine(src, trg, k=K, mode="max", threshold=last)) == 3
    assert len(mining.mine(src, trg, k=K, mode="max", threshold=np.nextafter(last, 0))) == 4
    # LASER's default threshold 0 drops the negative distance
    kept = mining.mine(src, trg, k=K, margin="distance", mode="max", threshold=0.0)
    assert {(i, j) for _, i, j in as_rows(kept)} == {(0, 0), (1, 1), (3, 4)}


def test_k_capped_at_the_other_side():
    src, trg = hand_embeddings()
    _, idx = mining.knn(src[:2], trg, 9)
    assert idx.shape == (2, 5)
    # k = 4 against 4 sources: every target's backward mean is its column mean
    _, bwd = mining.knn_both(src, trg, 4)
    assert bwd.idx.shape == (5, 4)
    np.testing.assert_allclose(bwd.sims.mean(axis=1), M.mean(axis=0), rtol=1e-6)


def random_unit(n, d, seed):
    x = np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)
    return x


@pytest.mark.parametrize("shard_rows", [1, 7, 32, 1000])
def test_sharded_equals_unsharded(shard_rows):
    x, y = random_unit(61, 24, 1), random_unit(47, 24, 2)
    ref_f, ref_b = mining.knn_both(x, y, 4, shard_rows=100000)
    f, b = mining.knn_both(x, y, 4, shard_rows=shard_rows)
    np.testing.assert_array_equal(f.idx, ref_f.idx)
    np.testing.assert_array_equal(b.idx, ref_b.idx)
    np.testing.assert_allclose(f.sims, ref_f.sims, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(b.sims, ref_b.sims, rtol=1e-6, atol=1e-7)
    ref = mining.mine(x, y, shard_rows=100000)
    got = mining.mine(x, y, shard_rows=shard_rows, threads=1)
    np.testing.assert_array_equal(got.src, ref.src)
    np.testing.assert_array_equal(got.trg, ref.trg)
    np.testing.assert_allclose(got.score, ref.score, rtol=1e-6)


def test_knn_matches_brute_force_and_faiss():
    x, y = random_unit(50, 16, 3), random_unit(80, 16, 4)
    sims, idx = mining.knn(x, y, 5, shard_rows=13)
    xn = x / np.linalg.norm(x, axis=1, keepdims=True)
    yn = y / np.linalg.norm(y, axis=1, keepdims=True)
    full = xn @ yn.T
    np.testing.assert_array_equal(idx, np.argsort(-full, axis=1, kind="stable")[:, :5])
    np.testing.assert_allclose(sims, np.take_along_axis(full, idx, axis=1), rtol=1e-5, atol=1e-6)
    # the index-search engine used on GPUs, run here with CPU indexes
    res = mining._knn_search(x, y, 5, 13, faiss.IndexFlatIP)
    np.testing.assert_array_equal(res.idx, idx)
    np.testing.assert_allclose(res.sims, sims, rtol=1e-6)


def test_backward_heaps_dense_and_sparse_paths(monkeypatch):
    # small stripes: the first rows of every column are transposed and scanned, later ones
    # only gathered where they beat the heap top; both must give faiss's answer
    calls = {"dense": 0, "sparse": 0}
    add_block, add_sparse = mining._TopK.add_block, mining._TopK.add_sparse

    def count(kind, fn):
        def wrapped(*args):
            calls[kind] += 1
            return fn(*args)
        return wrapped

    monkeypatch.setattr(mining, "_STRIPE", 8)
    monkeypatch.setattr(mining._TopK, "add_sparse", count("sparse", add_sparse))
    monkeypatch.setattr(mining._TopK, "add_block", count("dense", add_block))
    x, y = random_unit(300, 16, 7), random_unit(120, 16, 8)
    _, bwd = mining.knn_both(x, y, 4, shard_rows=50)
    assert calls["sparse"] > 0 and calls["dense"] > 0
    xn, yn = x.copy(), y.copy()
    faiss.normalize_L2(xn)
    faiss.normalize_L2(yn)
    index = faiss.IndexFlatIP(16)
    index.add(xn)
    want_sims, want_idx = index.search(yn, 4)
    np.testing.assert_array_equal(bwd.idx, want_idx)
    np.testing.assert_allclose(bwd.sims, want_sims, rtol=1e-6, atol=1e-7)


def test_ties_resolved_as_faiss_flat_search():
    # every query sees many equal similarities (exact: one non-zero coordinate per product)
    d = 4
    db = np.zeros((23, d), dtype=np.float32)
    db[np.arange(23), np.arange(23) % d] = 1.0
    queries = np.eye(d, dtype=np.float32)
    index = faiss.IndexFlatIP(d)
    index.add(db)
    want_sims, want_idx = index.search(queries, 3)
    for shard_rows in (1, 2, 5, 23, 100):
        sims, idx = mining.knn(queries, db, 3, shard_rows=shard_rows)
        np.testing.assert_array_equal(idx, want_idx)
        np.testing.assert_array_equal(sims, want_sims)


def test_memmap_and_npy_reader_inputs(tmp_path):
    x, y = random_unit(40, 12, 5), random_unit(30, 12, 6)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y.astype(np.float16))
    ref = mining.mine(x, y.astype(np.float16).astype(np.float32))
    for xs, ys in ((np.load(tmp_path / "x.npy", mmap_mode="r"), np.load(tmp_path / "y.npy", mmap_mode="r")),
                   (mining.open_npy(tmp_path / "x.npy"), mining.open_npy(tmp_path / "y.npy"))):
        got = mining.mine(xs, ys, shard_rows=9)
        np.testing.assert_array_equal(got.src, ref.src)
        np.testing.assert_array_equal(got.trg, ref.trg)
        np.testing.assert_allclose(got.score, ref.score, rtol=1e-6)
    reader = mining.open_npy(tmp_path / "x.npy")
    np.testing.assert_array_equal(reader[5:9], x[5:9])
    assert reader[38:100].shape == (2, 12)


def test_candidates_file_round_trip(tmp_path):
    src, trg = hand_embeddings()
    cands = mining.mine(src, trg, k=K)
    mining.write_candidates(tmp_path / "c.tsv", cands)
    back = mining.read_candidates(tmp_path / "c.tsv")
    np.testing.assert_array_equal(back.score, cands.score)  # exact: repr round-trips
    np.testing.assert_array_equal(back.src, cands.src)
    (tmp_path / "bad.tsv").write_text("1.0\t2\t3\n0.5\t1\n")
    with pytest.raises(ValueError, match=r"bad\.tsv: line 2"):
        mining.read_candidates(tmp_path / "bad.tsv")


def test_argument_errors(tmp_path):
    src, trg = hand_embeddings()
    with pytest.raises(ValueError, match="margin"):
        mining.mine(src, trg, margin="cosine")
    with pytest.raises(ValueError, match="mode"):
        mining.mine(src, trg, mode="union")
    with pytest.raises(ValueError, match="k must"):
        mining.mine(src, trg, k=0)
    with pytest.raises(ValueError, match="shard_rows"):
        mining.knn(src, trg, 2, shard_rows=0)
    with pytest.raises(ValueError, match="dimension mismatch"):
        mining.mine(src, trg[:, :4])
    with pytest.raises(ValueError, match="empty"):
        mining.mine(src[:0], trg)
    with pytest.raises(ValueError, match="2-D"):
        mining.knn(src[0], trg, 1)
    bad = trg.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="row 3"):
        mining.mine(src, bad)
    with pytest.raises(ValueError, match="threads"):
        mining.mine(src, trg, threads=0)
    np.save(tmp_path / "v.npy", np.zeros(5, dtype=np.float32))
    with pytest.raises(ValueError, match="2-D"):
        mining.open_npy(tmp_path / "v.npy")


# --------------------------------------------------------------------------- kNN device (config evaluation.knn_device)


@pytest.mark.parametrize("gpus, device, engine", [
    (0, "cpu", "cpu"), (2, "cpu", "cpu"),      # cpu: always CPU
    (0, "auto", "cpu"), (2, "auto", "gpu"),    # auto: GPU when faiss sees one
    (1, "gpu", "gpu"),
])
def test_knn_engine_follows_the_setting_and_the_gpus_faiss_sees(monkeypatch, gpus, device, engine):
    monkeypatch.setattr(faiss, "get_num_gpus", lambda: gpus, raising=False)
    assert mining.knn_engine(device) == engine


def test_knn_device_gpu_without_a_faiss_gpu_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(faiss, "get_num_gpus", lambda: 0, raising=False)
    monkeypatch.delattr(faiss, "StandardGpuResources", raising=False)  # faiss-cpu
    with pytest.raises(RuntimeError, match="knn_device gpu: faiss .* no GPU support .*faiss-gpu-cu12"):
        mining.knn_engine("gpu")
    monkeypatch.setattr(faiss, "StandardGpuResources", object, raising=False)  # a GPU build, no GPU visible
    with pytest.raises(RuntimeError, match="sees no GPU"):
        mining.knn_engine("gpu")
    x = random_unit(5, 4, 1)
    with pytest.raises(RuntimeError, match="knn_device gpu"):
        mining.mine(x, x, k=2, device="gpu")
    with pytest.raises(ValueError, match="unknown knn device 'cuda'; choose one of auto, cpu, gpu"):
        mining.knn(x, x, 2, device="cuda")


def test_gpu_engine_builds_every_index_with_flat_ip_index(monkeypatch):
    """The GPU branch, run on CPU: faiss's GPU copy is replaced by the CPU index itself, so the index
    searches must give the CPU engine's neighbours and candidates; one set of GPU resources serves
    both directions."""
    copies, resources = [], []

    class FakeResources:
        def __init__(self):
            resources.append(self)

    def to_gpus(res, index):
        assert res and all(isinstance(r, FakeResources) for r in res)
        copies.append(index)
        return index

    monkeypatch.setattr(faiss, "get_num_gpus", lambda: 2, raising=False)
    monkeypatch.setattr(faiss, "StandardGpuResources", FakeResources, raising=False)
    monkeypatch.setattr(faiss, "index_cpu_to_gpu_multiple_py", to_gpus, raising=False)
    x, y = random_unit(70, 16, 11), random_unit(45, 16, 12)
    gpu_fwd, gpu_bwd = mining.knn_both(x, y, 4, shard_rows=20, device="auto")
    assert len(resources) == 2  # one per GPU, made once
    assert len(copies) == 3 + 4 and all(isinstance(i, faiss.IndexFlatIP) for i in copies)  # a shard each
    cpu_fwd, cpu_bwd = mining.knn_both(x, y, 4, shard_rows=20, device="cpu")
    for gpu, cpu in ((gpu_fwd, cpu_fwd), (gpu_bwd, cpu_bwd)):
        np.testing.assert_array_equal(gpu.idx, cpu.idx)
        np.testing.assert_allclose(gpu.sims, cpu.sims, rtol=1e-6)
    got = mining.mine(x, y, k=4, shard_rows=20, device="gpu")
    want = mining.mine(x, y, k=4, shard_rows=20, device="cpu")
    np.testing.assert_array_equal(got.src, want.src)
    np.testing.assert_array_equal(got.trg, want.trg)


def test_flat_ip_index_on_cpu_is_the_flat_inner_product_index():
    index = mining.flat_ip_index(8, "cpu")
    assert isinstance(index, faiss.IndexFlatIP) and index.d == 8
    with pytest.raises(ValueError, match="unknown kNN engine 'auto'"):
        mining.flat_ip_index(8, "auto")


def test_neighbours_disagree_allows_ties_only():
    a = mining.Neighbours(np.array([[0.9, 0.5, 0.4], [0.8, 0.7, 0.6]], dtype=np.float32),
                          np.array([[1, 2, 3], [4, 5, 6]]))
    tie_at_cut = mining.Neighbours(a.sims.copy(), np.array([[1, 2, 7], [4, 5, 6]]))  # 7 tied with 3
    swapped = mining.Neighbours(np.array([[0.9, 0.5, 0.4], [0.8, 0.7 - 1e-7, 0.6]], dtype=np.float32),
                                np.array([[1, 2, 3], [4, 5, 6]]))
    assert mining.neighbours_disagree(a, tie_at_cut, atol=1e-6).tolist() == []
    assert mining.neighbours_disagree(a, swapped, atol=1e-6).tolist() == []
    not_a_tie = mining.Neighbours(a.sims.copy(), np.array([[1, 7, 3], [4, 5, 6]]))  # 7 replaces 2 (0.5 > cut)
    wrong_sims = mining.Neighbours(np.array([[0.9, 0.5, 0.4], [0.8, 0.65, 0.6]], dtype=np.float32), a.idx)
    assert mining.neighbours_disagree(a, not_a_tie, atol=1e-6).tolist() == [0]
    assert mining.neighbours_disagree(a, wrong_sims, atol=1e-6).tolist() == [1]
    reordered = mining.Neighbours(a.sims.copy(), np.array([[2, 1, 3], [4, 5, 6]]))  # 0.9 and 0.5 exchanged
    assert mining.neighbours_disagree(a, reordered, atol=1e-6).tolist() == [0]


@pytest.mark.gpu
def test_gpu_and_cpu_give_the_same_neighbours_apart_from_ties():
    if mining.faiss_gpus() == 0:
        pytest.skip("faiss sees no GPU")
    dim = 64
    x, y = random_unit(3000, dim, 21), random_unit(2500, dim, 22)
    cpu = mining.knn_both(x, y, 4, shard_rows=1000, device="cpu")
    gpu = mining.knn_both(x, y, 4, shard_rows=1000, device="gpu")
    atol = mining.dot_tolerance(dim)
    for c, g in zip(cpu, gpu):
        assert mining.neighbours_disagree(c, g, atol).tolist() == []
