import pytest

from laser_repro.data.sharding import group_shards, iter_sharded, write_shard


@pytest.mark.parametrize("lines,n,block", [(0, 3, 2), (1, 3, 2), (7, 3, 2), (12, 3, 2), (13, 2, 5), (25, 4, 1)])
def test_shards_round_trip(tmp_path, lines, n, block):
    src = tmp_path / "in.txt"
    src.write_text("".join(f"line {i}\n" for i in range(lines)), encoding="utf-8")
    shards = [tmp_path / f"in.txt.{k:03d}-of-{n:03d}" for k in range(n)]
    counts = [write_shard(src, p, k, n, block, str.upper) for k, p in enumerate(shards)]
    assert sum(counts) == lines
    assert list(iter_sharded(shards, block)) == [f"LINE {i}" for i in range(lines)]
    assert group_shards([str(p) for p in shards]) == [[str(p) for p in shards]]


def test_group_shards_rejects_missing(tmp_path):
    with pytest.raises(ValueError, match="1 of 2 shards"):
        group_shards(["a.000-of-002", "b.000-of-001"])
    with pytest.raises(ValueError, match="expected shard 0"):
        group_shards(["a.001-of-002"])
