"""scripts/bench_laser_host_memory.py: its synthetic binarized data is what fairseq writes and reads, its
split of the pairs and its fit are right."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "bench_laser_host_memory.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_laser_host_memory", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_index_is_fairseqs(bench, tmp_path):
    from fairseq.data.indexed_dataset import MMapIndexedDataset

    sizes = np.array([3, 1, 250, 7, 12], dtype=np.int32)
    nbytes = bench.write_mmap_index(str(tmp_path / "ours"), sizes)
    with MMapIndexedDataset.Index.writer(str(tmp_path / "theirs.idx"), np.uint16) as index:
        index.write(list(sizes))
    assert (tmp_path / "ours.idx").read_bytes() == (tmp_path / "theirs.idx").read_bytes()
    assert nbytes == (tmp_path / "ours.bin").stat().st_size == 2 * int(sizes.sum())
    ds = MMapIndexedDataset(str(tmp_path / "ours"))
    assert list(ds.sizes) == list(sizes)
    assert [len(ds[i]) for i in range(len(sizes))] == list(sizes)


def test_index_rejects_empty_sentence(bench, tmp_path):
    with pytest.raises(ValueError, match="sizes must be >= 1"):
        bench.write_mmap_index(str(tmp_path / "x"), np.array([2, 0], dtype=np.int32))


def test_split_over_pairs(bench):
    pairs = [("deu", "eng"), ("deu", "spa"), ("eng", "spa"), ("afr", "eng")]
    weights = bench.source_weights(pairs)
    # Table 1: deu shared by its two targets; eng (2.6M) with one
    assert weights[0] == weights[1] and weights[2] == 2_600_000
    counts = bench.split_counts(1001, weights)
    assert counts.sum() == 1001 and counts[0] - counts[1] in (0, 1) and counts[2] > counts[3]
    with pytest.raises(ValueError, match="paper_table1.csv: no train_sentences for source language"):
        bench.source_weights([("xxx", "eng")])


def test_fit_recovers_line(bench):
    f = bench.fit([1e6, 5e6, 2e7], [30 * n + 300 * 2 ** 20 for n in (1e6, 5e6, 2e7)])
    assert f["bytes_per_pair"] == 30 and f["constant_mib"] == 300 and f["max_residual_mib"] == 0
    with pytest.raises(ValueError, match="at least two"):
        bench.fit([1e6], [1.0])
