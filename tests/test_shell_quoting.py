"""Config values that reach a shell command (paths, URLs, mirrors, notes) arrive as ONE intact argument:
a data_root or mirror with blanks, `;`, `$(...)` or backquotes neither splits an argument nor runs a command."""
from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest
import yaml

from conftest import REPO, TOY_CONFIG, make_toy_data, run_snakemake, laser_model

# a directory name / mirror that would run `touch PWNED` if it reached the shell unquoted (no `"` or `\`,
# so that it is also a substring of the JSON arguments; no `{`, which Snakemake reads as a wildcard)
HOSTILE = "d ir $(touch PWNED) `touch PWNED`; touch PWNED 'q' && touch PWNED"
MIRROR = f"/srv/opus mirror/{HOSTILE}"
EVAL_MIRROR = f"https://mirror.example.org/eval {HOSTILE}"


def pwned_files(*roots) -> list[str]:
    return [str(p) for root in roots for p in Path(root).rglob("PWNED")] + [
        str(p) for p in (REPO / "PWNED", Path.cwd() / "PWNED") if p.exists()]


def printed_commands(out: str) -> list[str]:
    """The shell commands of a `snakemake -n -p` output: every job's command redirects to its log."""
    return [line.removeprefix("Shell command: ") for line in out.splitlines() if "2>&1" in line]


def assert_intact(commands: list[str], values: list[str]) -> None:
    """Each command parses, and every argument naming PWNED holds one of `values` whole."""
    assert commands
    for cmd in commands:
        words = shlex.split(cmd)  # raises on unbalanced quotes
        for word in words:
            if "PWNED" in word:
                assert any(v in word for v in values), f"argument {word!r} splits a value:\n{cmd}"
        # the value is not spread over several arguments either
        assert not any(w in ("touch", "PWNED", "PWNED;", "PWNED)", "$(touch", "`touch") for w in words), cmd


@pytest.fixture(scope="module")
def hostile_data(tmp_path_factory):
    """The toy data under <tmp>/<HOSTILE>, BUCC absent (so table 4 carries a missing-data note naming it)."""
    root = tmp_path_factory.mktemp("quoting")
    data_root = make_toy_data.make(root / HOSTILE)
    return root, data_root


def test_dry_run_commands_keep_hostile_values_whole(hostile_data, tmp_path):
    root, data_root = hostile_data
    # 1. the toy config with a hostile data_root given on the command line; BUCC data absent: the
    #    missing-data notes (eval-table --missing, ablation-table --missing-tasks) name its paths
    bucc_less = tmp_path / f"no bucc {HOSTILE}"
    shutil.copytree(data_root, bucc_less, ignore=shutil.ignore_patterns("bucc2018"))
    work = tmp_path / "work dir"
    work.mkdir()
    proc = run_snakemake("-n", "-p", "--configfile", str(TOY_CONFIG), "--config", f"data_root={bucc_less}",
                         "--directory", str(work), "--cores", "2", timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-5000:]
    commands = printed_commands(proc.stdout)
    assert len(commands) > 150
    assert any("--missing " in c and "bucc2018" in c for c in commands)
    assert_intact(commands, [str(bucc_less)])

    # 2. downloads: OPUS and evaluation mirrors with blanks, `;`, `$(...)`, data_root null
    cfg = yaml.safe_load(TOY_CONFIG.read_text())
    cfg.update(data_root=None, opus={"mirror": MIRROR},
               corpora=[{"name": "europarl", "kind": "opus", "corpus": "Europarl", "version": "v8",
                         "languages": ["deu", "spa"]}])
    cfg["evaluation"] = {"tatoeba": {"languages": ["spa", "deu"]}, "mirror": EVAL_MIRROR,
                         "bucc": {"languages": ["deu"]}, "xnli": {"languages": ["eng", "deu"]},
                         "wmt": {"test_set": "wmt13", "languages": ["eng", "spa", "deu"]}}
    cfg.pop("flores_eval")
    laser_model(cfg).pop("ablations")
    laser_model(cfg)["train"].pop("early_stopping")  # it validates on the FLORES lines
    config = tmp_path / "downloads.yaml"
    config.write_text(yaml.safe_dump(cfg))
    proc = run_snakemake("-n", "-p", "--configfile", str(config), "--directory", str(work), "--cores", "2",
                         timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-5000:]
    commands = printed_commands(proc.stdout)
    assert any("--mirror" in c and "Europarl" in c for c in commands)
    assert any("--mirror" in c and "XNLI" in c for c in commands)
    assert_intact(commands, [MIRROR, EVAL_MIRROR])
    fetch = next(shlex.split(c) for c in commands if "OPUS-Europarl/v8/moses/de-en.txt.zip" in c)
    assert fetch[fetch.index("--mirror") + 1] == MIRROR
    assert pwned_files(root, tmp_path) == []


def test_rules_run_on_data_under_a_hostile_directory(hostile_data, tmp_path):
    """Corpus extraction, Moses preprocessing (of an N-way corpus's language files; of a pair corpus in
    two shards) and the FLORES selection really run on the toy data under <tmp>/<HOSTILE>, from a workdir
    with a blank in its name; nothing runs `touch PWNED`."""
    from laser_repro.data.preprocess import language_preprocessor
    from laser_repro.data.sharding import iter_sharded

    root, data_root = hostile_data
    work = tmp_path / "work dir $(touch PWNED)"
    work.mkdir()
    # a pair corpus (layout bitext) beside the N-way one: the toy's FLORES-style deu/eng files as a pair
    pairs = data_root / "pairs"
    pairs.mkdir(exist_ok=True)
    for code in ("deu_Latn", "eng_Latn"):
        shutil.copy(data_root / "flores200-dev" / f"{code}.dev", pairs / f"deu_Latn-eng_Latn.{code}")
    cfg = yaml.safe_load(TOY_CONFIG.read_text())
    cfg["corpora"].append({"name": "toy_pairs", "kind": "local", "layout": "bitext", "code_column": "flores",
                           "path": "{root}/pairs/{src}-{tgt}.{side}", "targets": ["eng"], "languages": ["deu"]})
    config = tmp_path / "pairs.yaml"
    config.write_text(yaml.safe_dump(cfg))
    shards = [f"results/toy/tok/toy_pairs/deu-eng.deu.{k:03d}-of-002" for k in range(2)]  # bitext_data: 2 shards
    targets = ["results/toy/tok/toy_nway/deu-eng.deu.000-of-001", *shards, "results/toy/flores/raw/heldout.deu"]
    proc = run_snakemake("--configfile", str(config), "--config", f"data_root={data_root}",
                         "--directory", str(work), "--cores", "2", "-p", *targets, timeout=300)
    out = proc.stdout + proc.stderr
    assert pwned_files(root, tmp_path) == [], out[-6000:]
    assert proc.returncode == 0, out[-6000:]
    for target in targets:
        assert (work / target).stat().st_size > 0
        assert (work / (target + ".prov.json")).exists()
    # the extraction read the raw files under the hostile directory, and says so in its record
    rec = json.loads((work / "results/toy/corpora/toy_nway/deu-eng.deu.prov.json").read_text())
    assert rec["rule"] == "extract_nway_bitext" and rec["log"] == "results/toy/logs/corpora/toy_nway/deu-eng.log"
    raw = str(data_root / "flores200-dev" / "deu_Latn.dev")
    moses = "results/toy/moses/toy_nway/deu.lower"
    assert rec["inputs"][raw]["sha256"] and rec["inputs"][moses]["sha256"] and set(rec["config"]) == {"corpora", "bitext_data.toy.filters"}
    assert '"written": 340' in (work / rec["log"]).read_text()  # the step's own log lines, in its log
    bitext = (work / "results/toy/corpora/toy_nway/deu-eng.deu").read_text().splitlines()
    assert bitext == Path(raw).read_text().splitlines()[:340]
    # the N-way pair's Moses lines are its language file's (preprocessed once), the pair corpus's are its two
    # shards': the same lines either way
    deu = language_preprocessor("deu")
    expected = [deu(line) for line in bitext]
    assert (work / "results/toy/tok/toy_nway/deu-eng.deu.000-of-001").read_text().splitlines() == expected
    assert (work / moses).read_text().splitlines()[:340] == expected
    pair_bitext = (work / "results/toy/corpora/toy_pairs/deu-eng.deu").read_text().splitlines()
    assert pair_bitext == Path(raw).read_text().splitlines()  # (no held-out lines: not the FLORES corpus)
    assert list(iter_sharded([work / p for p in shards], 64)) == [deu(line) for line in pair_bitext]
