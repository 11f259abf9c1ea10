"""laser-repro budget: work, GPU-hours, wall time and SLURM attempts of each training target."""
from __future__ import annotations

from pathlib import Path

import pytest

from laser_repro import config as run_config
from laser_repro.config import budget

REPO = Path(__file__).resolve().parents[1]


def _toy(**train):
    toy = run_config.read_yaml(REPO / "tests" / "toy" / "config.yaml")
    laser = toy["models"]["base"]
    laser.pop("ablations", None)
    laser["train"] = {**laser["train"], **train}
    return run_config.validate(toy)


def test_every_figure_is_marked_and_sourced():
    rows = budget.throughput_table()
    assert {(r["family"], r["stage"]) for r in rows} >= {("laser", "train"), ("multienc", "train"),
                                                        ("labse", "dual"), ("labse", "pretrain"), ("bisent2vec", "train")}
    assert all(r["rate"] > 0 and r["source"] and r["status"] in ("measured", "estimated") for r in rows)


def test_toy_laser_budget_from_given_sizes(tmp_path):
    config = _toy(gpus=4, update_freq=1, max_epoch=10)
    config["models"]["base"]["train"]["tokens_per_update"] = None
    figure, _ = budget.pick_throughput("laser", "train", None, "fp32")
    pairs = figure["rate"] * 4 * 3600 * 25  # 25 h of work on 4 GPUs
    profile = {"retries": 1, "set-resources": {"laser_train": {"runtime": 600}}}  # 10 h attempts, 2 in all
    [est] = budget.estimate(config, profile=profile, corpus_sizes={"base": pairs / 10}, results_dir=tmp_path)
    assert est.work == pytest.approx(pairs) and est.wall_h == pytest.approx(25)
    assert est.gpu_hours == pytest.approx(100) and est.attempts_needed == 3
    assert any("cannot finish: needs 3 attempts" in w for w in est.warnings())
    profile["retries"] = 2
    [est] = budget.estimate(config, profile=profile, corpus_sizes={"base": pairs / 10}, results_dir=tmp_path)
    assert not est.warnings()


def test_unknown_sizes_say_so_and_render(tmp_path):
    [est] = budget.estimate(_toy(), profile={}, results_dir=tmp_path)
    assert est.work is None and "unknown until the data stage ran" in est.work_source
    text = budget.render([est], source="toy.yaml", profile_dir=None)
    assert "unknown pairs" in text and "measured" in text


def test_save_interval_longer_than_an_attempt_is_a_warning(tmp_path):
    est = budget.Estimate("base", "laser", "train", 16, 1e9, "pairs", "", {"rate": 548.0}, 16, runtime_min=60,
                          attempts=100, save_interval_h=2.0)
    assert any("longer than an attempt" in w for w in est.warnings())


def test_paper_configs(capsys):
    from laser_repro.cli import main

    main(["budget", "--configfile", str(REPO / "config" / "paper.yaml"), "--profile", str(REPO / "profiles" / "slurm")])
    out = capsys.readouterr().out
    base = next(line for line in out.splitlines() if line.startswith("base "))
    # the paper's own figures: 17 epochs of 223M pairs in ~120 h on 16 GPUs
    assert "3,791,000,000 pairs" in base and "120.1" in base and "3 of 3" in base
    assert "checkpoint every 4000 updates = 0.81 h" in out and "WARNING" not in out
    main(["budget", "--configfile", str(REPO / "config" / "labse_2020.yaml"), "--profile", str(REPO / "profiles" / "slurm")])
    out = capsys.readouterr().out
    # at the V100 estimates, pre-training (and the 500k-update dual encoders) cannot finish in 3 attempts
    assert "estimated" in out and "WARNING: cannot finish: needs 76 attempts" in out


def test_without_a_gpu_every_stage_of_a_family_uses_the_family_s_first_gpu():
    pretrain, notes = budget.pick_throughput("labse", "pretrain", None, "bf16")
    dual, dual_notes = budget.pick_throughput("labse", "dual", None, "bf16")
    assert pretrain["gpu"] == dual["gpu"] == "V100"  # not the H200 bf16 row for one stage and V100 for the other
    assert any("first GPU of labse's figures" in n for n in dual_notes)
    assert any("no bf16 figure" in n for n in dual_notes)
    h200, h200_notes = budget.pick_throughput("labse", "dual", "H200", "bf16")
    assert (h200["gpu"], h200["precision"], h200["status"]) == ("H200", "bf16", "measured") and not h200_notes


def test_paper_recipe_on_todays_gpus_is_an_overlay_of_the_paper_config(capsys, tmp_path):
    """config/overlays/paper_today_gpus.yaml, merged after config/paper.yaml as Snakemake merges two
    --configfile: 8 GPUs x 16k tokens in fp16, the same 128k tokens per update; budget takes both files, and
    estimates it from the H200's figure at 16k tokens per GPU, not the paper layout's 8k."""
    from laser_repro.cli import main
    from laser_repro.core import slurm
    from laser_repro.core.errors import ConfigError

    files = [REPO / "config" / "paper.yaml", REPO / "config" / "overlays" / "paper_today_gpus.yaml"]
    merged = run_config.load(files)
    train = merged["models"]["base"]["train"]
    assert (train["gpus"], train["max_tokens"], train["precision"], train["tokens_per_update"]) == (8, 16000, "fp16", 128000)
    assert merged["models"]["base"]["model"] == run_config.load(files[0])["models"]["base"]["model"]
    assert slurm.gpu_job_resources(8, gpus_per_node=8) == {"nodes": 1, "gpu": 8, "cpus_per_task": 64}
    main(["budget", "--configfile", *map(str, files), "--profile", str(REPO / "profiles" / "slurm"), "--gpu", "H200"])
    base = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("base "))
    assert " 8 " in base and "1 of 3" in base  # one attempt of 48 h on 8 H200s at the measured fp16 rate
    figure, notes = budget.pick_throughput("laser", "train", "H200", "fp16", 16000)
    assert (figure["batch_tokens"], figure["precision"], notes) == ("16000", "fp16", [])
    assert budget.pick_throughput("laser", "train", "H200", "fp16", 8000)[0]["rate"] < figure["rate"]
    nearest, notes = budget.pick_throughput("laser", "train", "H200", "bf16", 20000)
    assert nearest["batch_tokens"] == "16000" and notes == ["no figure at 20000 tokens per GPU: using 16000's"]
    bad = tmp_path / "overlay.yaml"
    bad.write_text("models:\n  base:\n    train:\n      gpus: -1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="overlay.yaml:4"):
        run_config.load([files[0], bad])
