"""The run plan: what a validated config expands to -- the bitexts and language pairs to train on,
the sides to preprocess, the FLORES and Tatoeba languages, the ablation variants (Tables 5-7).
(The tokens per update that training settings plan: :func:`laser_repro.models.training_guard.planned_tokens_per_update`.)

Nothing here validates: :mod:`laser_repro.config.schema` does, before a :class:`Plan` is made.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from typing import Mapping, NamedTuple

from laser_repro.core import languages
from laser_repro.models import registry
from laser_repro.models.training_guard import without_default_precision


@dataclass(frozen=True)
class Variant:
    """One trained LASER model: the run's first LASER model (the base), an ablation variant of it (paper
    section 5), or another LASER model of `models` on the same bitext_data entry (its own train section)."""
    name: str
    model: tuple  # sorted (key, value) items of the model section
    pairs: tuple[tuple[str, str], ...]
    nli_weight: int = 0
    seed: int | None = None  # a seed replicate's training seed (None: its train section's seed)
    train: tuple = ()  # sorted (key, value) items of another LASER model's train section (): the base model's

    @property
    def identity(self) -> tuple:
        """What training depends on: variants with equal identity are the same model."""
        return (self.model, self.pairs, self.nli_weight, self.seed, self.train)


def replicate_name(name: str, seed: int) -> str:
    """The name of the seed replicate of model ``name`` trained with ``seed`` (config `seeds`). Configured
    names hold no '.' (schema), so a replicate's name never is one of them."""
    return f"{name}.seed{seed}"


class AblationRow(NamedTuple):
    """One row of an ablation table: variant name, row label, the model trained, the paper's setting key."""
    name: str
    label: str
    variant: Variant
    setting: str


@dataclass(frozen=True)
class Bitext:
    """One aligned (source, target) text of one corpus."""
    corpus: str
    src: str
    tgt: str

    @property
    def pair(self) -> str:
        return f"{self.src}-{self.tgt}"


def corpus_code(corpus: dict, lang: str) -> str:
    """The code that names ``lang``'s files in a local corpus: the corpus's ``codes`` entry for it, else
    its ``code_column`` column of languages.tsv ('' when that column has none)."""
    override = (corpus.get("codes") or {}).get(lang)
    return override or getattr(languages.get(lang), corpus.get("code_column", "flores"), "")


def opus_download(corpus: dict, base_url: str | None = None) -> dict:
    """A local corpus whose ``download`` names an OPUS corpus and version, with that download's ``url`` and
    ``member`` filled in: the moses zip of its two languages (their ``code_column`` codes) below the OPUS
    server (``base_url``: config opus.base_url), built by :func:`laser_repro.data.opus.opus_moses_url` (language codes sorted as OPUS sorts them),
    and the member template of its text files (``{code}``: a language's code)."""
    from laser_repro.data.opus import OPUS_BASE_URL, opus_moses_members, opus_moses_url

    spec = corpus["download"]["opus"]
    if len(corpus["languages"]) != 2:
        raise ValueError(f"corpus {corpus['name']!r}: download.opus needs exactly two languages (an OPUS pair)")
    codes = [corpus_code(corpus, lang) for lang in corpus["languages"]]
    member = opus_moses_members(spec["corpus"], *codes)[0].removesuffix(f".{codes[0]}") + ".{code}"
    url = opus_moses_url(spec["corpus"], spec["version"], *codes, base_url=base_url or OPUS_BASE_URL)
    return {**corpus, "download": {**corpus["download"], "url": url, "member": member}}


def corpus_bitexts(corpus: dict, run_targets) -> list[Bitext]:
    """A corpus's bitexts: each of its languages with each of its targets (default ``run_targets``)
    that is not itself (no auto-encoding: paper, footnote 2)."""
    targets = corpus.get("targets") or run_targets
    return [Bitext(corpus["name"], src, tgt) for src in corpus["languages"] for tgt in targets if src != tgt]


def local_languages(corpus: dict, run_targets) -> list[str]:
    """The languages whose files a local corpus has: its languages, then its targets (default ``run_targets``)."""
    return list(dict.fromkeys([*corpus["languages"], *(corpus.get("targets") or run_targets)]))


SACREBLEU_LANGPAIR = "{src}-{tgt}"  # download.sacrebleu.langpair when not given (config schema)


def sacrebleu_langpair(corpus: dict, src: str, tgt: str) -> str:
    """The sacrebleu pair (e.g. en-de) of a bitext of a corpus downloaded as ``sacrebleu: {test_set, langpair}``."""
    from laser_repro.data.sacrebleu_sets import langpair_of

    return langpair_of(corpus["download"]["sacrebleu"].get("langpair", SACREBLEU_LANGPAIR), src, tgt)


@dataclass(frozen=True)
class LaserSetup:
    """The config's LASER models as the LASER stages read them, in the config's own shape: ``name``, the
    first LASER model of `models` (the base: the paper tables and the ablations are its), ``entry`` its
    entry, ``data_name`` and ``data`` the bitext_data entry it trains on, ``corpora`` the corpora that entry
    aligns (by default every corpus), ``others`` the other LASER models on the same data (name -> entry)."""
    name: str
    entry: Mapping
    data_name: str
    data: Mapping
    corpora: tuple[str, ...]
    others: Mapping[str, Mapping]

    #: the sections of the bitext_data entry (the rest are the model's: model, train, embed, ablations)
    DATA_SECTIONS = ("targets", "filters", "preprocess", "bpe", "corpora")

    def key(self, section: str) -> str:
        """The dotted config key of one of its settings, e.g. "preprocess.lowercase" ->
        "bitext_data.<data>.preprocess.lowercase", "embed.max_tokens" -> "models.<base>.embed.max_tokens"."""
        head = section.split(".", 1)[0]
        return (f"bitext_data.{self.data_name}.{section}" if head in self.DATA_SECTIONS
                else f"models.{self.name}.{section}")

    def description(self, name: str) -> str:
        """A LASER model's description (an ablation variant's: the base model's)."""
        entry = self.others.get(name) or self.entry
        return entry.get("description", name if name in self.others else self.name)


def laser_setup(config: dict) -> LaserSetup | None:
    """The :class:`LaserSetup` of a validated config (None: it has no LASER model)."""
    laser = [(name, m) for name, m in config["models"].items() if m["family"] == "laser"]
    if not laser:
        return None
    name, entry = laser[0]
    data = config["bitext_data"][entry["data"]]
    return LaserSetup(name, entry, entry["data"], data,
                      tuple(data.get("corpora") or [c["name"] for c in config["corpora"]]), dict(laser[1:]))


class Plan:
    """What a validated config expands to: bitexts, language pairs, sides to preprocess."""

    def __init__(self, config: dict):
        """``config``: a validated config (:func:`laser_repro.config.schema.validate`), read as it is written:
        the LASER stages read their model's sections through :attr:`laser_setup`."""
        self.config = config
        self.laser_setup = laser_setup(config)

    @cached_property
    def corpora(self) -> dict[str, dict]:
        """name -> corpus settings; a download given as ``opus: {corpus, version}`` gets its ``url`` and
        ``member`` (:func:`opus_download`)."""
        base_url = self.config.get("opus", {}).get("base_url")
        return {c["name"]: opus_download(c, base_url) if "opus" in c.get("download", {}) else c
                for c in self.config["corpora"]}

    @property
    def laser(self) -> bool:
        """The config trains a LASER model (a model of family laser)."""
        return self.laser_setup is not None

    @property
    def laser_name(self) -> str | None:
        """The LASER model's name in `models` (its base variant: results/<run>/models/<name>/), or None."""
        return self.laser_setup.name if self.laser else None

    @cached_property
    def family_entries(self) -> dict[str, dict]:
        """The models of `models` of the other families, as configured (no seed replicates): name -> entry."""
        return {name: m for name, m in self.config["models"].items() if m["family"] != "laser"}

    # -- seed replicates (config `seeds`) ----------------------------------------------------------------
    @property
    def seeds(self) -> list[int]:
        """config `seeds`: the training seeds of every model's replicates ([]: one seed, the configured one)."""
        return list(self.config.get("seeds") or [])

    def replicate_seeds(self, configured: int) -> list[int]:
        """The seeds a model whose configured seed is ``configured`` is trained with: that seed (the model
        itself) first, then the other seeds of `seeds` when it lists two or more."""
        if len(self.seeds) < 2:
            return [configured]
        return [configured, *(s for s in self.seeds if s != configured)]

    def _replicates_of(self, name: str, configured: int) -> dict[str, int]:
        return {replicate_name(name, s): s for s in self.replicate_seeds(configured)[1:]}

    @cached_property
    def replicate_of(self) -> dict[str, str]:
        """Every seed replicate (a LASER variant's or a model's of `models`) -> the name of the model it
        replicates (trained like it but for the seed)."""
        out = {}
        for name in self._configured_variants:
            out.update(dict.fromkeys(self._replicates_of(name, self.variant_seed(name)), name))
        for name, m in self.family_entries.items():
            out.update(dict.fromkeys(self._replicates_of(name, m["train"]["seed"]), name))
        return out

    def seed_replicates(self, name: str) -> list[str]:
        """A trained model's seed replicates in seed order, the model itself first ([name] with one seed)."""
        return [name, *(r for r, of in self.replicate_of.items() if of == name)]

    def seed_runs(self, name: str) -> dict[int, str]:
        """seed -> the trained model of that seed, of a configured model: a LASER variant by its ablation name
        (``layers1`` may be ``base``) or a model of `models`; the configured seed's is the model itself."""
        if name in self.variant_aliases:
            trained = self.variant_aliases[name]
            configured = self.variant_seed(trained)
        else:
            trained, configured = name, self.config["models"][name]["train"]["seed"]
        return {seed: trained if seed == configured else replicate_name(trained, seed)
                for seed in self.replicate_seeds(configured)}

    @property
    def reproduces(self) -> list[dict]:
        """config `reproduces`: ``{"claim", "better": [names], "worse": [names], "runs": {"better": run,
        "worse": run}}`` each (a side given as one name is a list of one; its run: None for this run's models,
        else the other run named by ``<side>_run``)."""
        return [{"claim": c["claim"], **{key: [c[key]] if isinstance(c[key], str) else list(c[key])
                                         for key in ("better", "worse")},
                 "runs": {key: c.get(f"{key}_run") for key in ("better", "worse")}}
                for c in self.config.get("reproduces") or []]

    def family(self, name: str) -> str:
        """A trained model's family: laser for a LASER variant (by its name or its ablation name; seed replicates
        too), else its `models` entry's (a seed replicate's: its model's)."""
        return "laser" if name in self.variant_aliases or name in self.variants else self.models[name]["family"]

    def configured(self, names) -> list[str]:
        """``names`` without the seed replicates: the models a table has a row or column for."""
        return [n for n in names if n not in self.replicate_of]

    @cached_property
    def models(self) -> dict[str, dict]:
        """The models of the other families (`models`), each followed by its seed replicates (its settings
        with another ``train.seed``): name -> settings."""
        out = {}
        for name, m in self.family_entries.items():
            out[name] = m
            for replicate, seed in self._replicates_of(name, m["train"]["seed"]).items():
                out[replicate] = {**m, "train": {**m["train"], "seed": seed}}
        return out

    @cached_property
    def nway_data(self) -> dict[str, dict]:
        """N-way data sets (nway_data): name -> settings."""
        return dict(self.config.get("nway_data", {}))

    def nway_subword_kind(self, data: str) -> str:
        """The subwords of an nway_data entry: bpe (Moses, then fastBPE; also when ``subword`` is absent) or spm."""
        return (self.nway_data[data].get("subword") or {}).get("kind", "bpe")

    @cached_property
    def multienc(self) -> dict[str, dict]:
        """The models of family multienc (Schwenk & Douze 2017): name -> settings."""
        return {name: m for name, m in self.models.items() if m["family"] == "multienc"}

    def multienc_settings(self, name: str) -> dict:
        """``--settings`` of ``laser-repro train --family multienc`` (laser_repro.models.multienc.trainer)."""
        m = self.multienc[name]
        paths = {"sources": list(m["paths"]["sources"]), "inputs": dict(m["paths"]["inputs"]),
                 "targets": m["paths"]["targets"] if m["paths"]["targets"] == "all" else list(m["paths"]["targets"])}
        model = {"encoder": dict(m["encoder"]), "embed_dim": m["embed_dim"], "decoder": dict(m["decoder"]),
                 "dropout": m["dropout"], "share_embeddings": m["share_embeddings"]}
        return {"languages": list(self.nway_data[m["data"]]["languages"]), "paths": paths, "model": model,
                "train": dict(m["train"])}

    def _declared(self, name: str):
        """(declaration, config entry, N-way data entry) of a model of `models`."""
        m = self.models[name]
        return registry.declaration(m["family"]), m, self.nway_data[m["data"]]

    def encoder_languages(self, name: str) -> list[str]:
        """The languages a model of `models` embeds, as its family declares (laser_repro.models.declaration)."""
        family, m, data = self._declared(name)
        return family.encoder_languages(m, data)

    @property
    def labse(self) -> dict[str, dict]:
        """The models of family labse (Feng et al. 2020): name -> settings."""
        return {name: m for name, m in self.models.items() if m["family"] == "labse"}

    def labse_vocab(self, name: str) -> str:
        """Directory name of a LaBSE model's vocabulary under results/<run>/nway/<data>/wordpiece/."""
        v = self.labse[name]["vocab"]
        return f"{int(v['size'])}-a{v['smoothing']}"

    def _labse_common(self, name: str) -> dict:
        m = self.labse[name]
        return {"languages": list(self.nway_data[m["data"]]["languages"]), "pivot": m["pivot"],
                "encoder": dict(m["encoder"])}

    def labse_pretraining(self, name: str) -> str | None:
        """The pre-training run of a LaBSE model (None: from scratch): ``<data>-<digest>`` of its data,
        vocabulary, encoder and pre-training settings, so that models that pre-train alike share one run."""
        m = self.labse[name]
        if not m["pretrain"]["enabled"]:
            return None
        import hashlib
        import json

        key = {"data": m["data"], "vocab": self.labse_vocab(name), **self._labse_common(name),
               "pretrain": without_default_precision(m["pretrain"])}
        return f"{m['data']}-{hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:10]}"

    @cached_property
    def labse_pretrainings(self) -> dict[str, str]:
        """pre-training run -> the first LaBSE model that uses it."""
        out: dict[str, str] = {}
        for name in self.labse:
            key = self.labse_pretraining(name)
            if key is not None:
                out.setdefault(key, name)
        return out

    def labse_settings(self, name: str, stage: str, *, tokenizer: str, init_checkpoint: str | None = None) -> dict:
        """``--settings`` of ``laser-repro train --family labse`` (laser_repro.models.labse.trainer)."""
        m = self.labse[name]
        common = {"stage": stage, **self._labse_common(name), "tokenizer": tokenizer}
        if stage == "pretrain":
            return {**common, "train": {k: v for k, v in m["pretrain"].items() if k != "enabled"}}
        return {**common, "init_checkpoint": init_checkpoint, "loss": dict(m["loss"]), "train": dict(m["train"])}

    @property
    def bisent2vec(self) -> dict[str, dict]:
        """The models of family bisent2vec (Sabet et al. 2019), one per language pair: name -> settings."""
        return {name: m for name, m in self.models.items() if m["family"] == "bisent2vec"}

    def bisent2vec_vocab(self, name: str) -> str:
        """A Bi-Sent2Vec model's vocabulary under results/<run>/nway/<data>/bisent2vec_vocab/ (shared by
        the models of the same data, pair and vocabulary settings: the uni. and uni. + bi. models)."""
        m = self.bisent2vec[name]
        l1, l2 = m["pair"]
        return f"{l1}-{l2}.min{int(m['vocab']['min_count'])}.max{int(m['vocab']['max_size'])}"

    def bisent2vec_settings(self, name: str, *, vocab: str) -> dict:
        """``--settings`` of ``laser-repro train --family bisent2vec`` (laser_repro.models.bisent2vec.trainer)."""
        m = self.bisent2vec[name]
        return {"languages": list(m["pair"]), "vocab": vocab, "model": dict(m["model"]), "train": dict(m["train"])}

    def bisent2vec_directions(self, name: str) -> list[tuple[str, str]]:
        """The two directions of a model's pair, English -> xx first (the paper's -> and <- columns)."""
        l1, l2 = self.bisent2vec[name]["pair"]
        return [(l1, l2), (l2, l1)] if l1 == "eng" or l2 != "eng" else [(l2, l1), (l1, l2)]

    def model_tatoeba_languages(self, name: str) -> list[str]:
        """The Tatoeba languages (xx of the xx-eng test sets) a model of `models` is scored on, as its family
        declares: a LaBSE model every one, the others those they have an encoder for (none without one for
        English)."""
        family, m, data = self._declared(name)
        return family.tatoeba_languages(m, data, self.tatoeba_languages)

    @cached_property
    def sacrebleu_corpora(self) -> dict[str, dict]:
        """The local corpora downloaded as a sacrebleu test set (``download: {sacrebleu: ...}``)."""
        return {name: c for name, c in self.corpora.items() if "sacrebleu" in c.get("download", {})}

    @cached_property
    def sacrebleu_archives(self) -> dict[str, dict]:
        """The archives of the sacrebleu test sets of the corpora, one download each however many
        corpora use it: sacrebleu's file name (``wmt19.test.tgz``) -> ``test_set``, ``url``, ``md5``
        and ``alternatives`` (those of every corpus of the test set, in config order)."""
        from laser_repro.data.sacrebleu_sets import test_set_sources

        out: dict[str, dict] = {}
        for c in self.sacrebleu_corpora.values():
            sources = test_set_sources(c["download"]["sacrebleu"]["test_set"])
            for k, src in enumerate(sources):
                entry = out.setdefault(src.tarball, {"test_set": src.test_set, "url": src.url, "md5": src.md5,
                                                     "alternatives": []})
                for alternative in c["download"].get("alternatives", []):
                    url = alternative if isinstance(alternative, str) else alternative[k]
                    if url not in entry["alternatives"]:
                        entry["alternatives"].append(url)
        return out

    def sacrebleu_tarballs(self, corpus: str) -> list[str]:
        """The file names (keys of :attr:`sacrebleu_archives`) of a sacrebleu corpus's test set, in sacrebleu's order."""
        from laser_repro.data.sacrebleu_sets import test_set_sources

        return [src.tarball for src in test_set_sources(self.corpora[corpus]["download"]["sacrebleu"]["test_set"])]

    def sacrebleu_source(self, corpus: str, lang: str, bitext: tuple[str, str] | None = None) -> str:
        """``URL#member`` of one language's file of a sacrebleu corpus (provenance of a file read from
        data_root): its side of the bitext's pair (layout bitext, ``bitext`` = (src, tgt)), or of its pair
        with English (layout nway; English: the pair of the corpus's first other language)."""
        from laser_repro.data import sacrebleu_sets

        c = self.corpora[corpus]
        test_set = c["download"]["sacrebleu"]["test_set"]
        if bitext is not None:
            langpair = sacrebleu_langpair(c, *bitext)
        else:
            present, _ = sacrebleu_sets.language_pairs(test_set, local_languages(c, self.targets))
            langpair = (present.get(lang) or next(iter(present.values())))[0]
        urls = [self.sacrebleu_archives[t]["url"] for t in self.sacrebleu_tarballs(corpus)]
        return f"{' + '.join(urls)}#{sacrebleu_sets.langpair_member(test_set, langpair, lang)}"

    def archive_parts(self, corpus: str) -> list[str]:
        """The URLs of a corpus archive published in parts (download.url a list), else []."""
        url = self.corpora[corpus]["download"]["url"]
        return [] if isinstance(url, str) else list(url)

    def archive_kind_name(self, corpus: str) -> str:
        """A file name whose suffix says what kind of archive the corpus download is (fetch --verify-as):
        the URL's for an OPUS zip (``download.opus``), else ``archive.tar.gz`` (the workflow's name)."""
        download = self.corpora[corpus]["download"]
        return download["url"].rsplit("/", 1)[-1] if "opus" in download else "archive.tar.gz"

    def archive_urls(self, corpus: str, part: int | None = None) -> list[str]:
        """The URLs of a corpus archive (or of its part ``part``), in the order they are tried:
        download.url, then each of download.alternatives."""
        download = self.corpora[corpus]["download"]
        choices = [download["url"], *download.get("alternatives", [])]
        return [c if part is None else c[part] for c in choices]

    @cached_property
    def compared_models(self) -> dict[str, str]:
        """name -> family of the models of the FLORES comparison (config/compare.yaml): the LASER models,
        then every model of another family validated on flores_eval's held-out lines of the same corpus (the
        same sentences: the corpus, or the first of a list -- held-out lines count from the start of the
        concatenation). Empty without a LASER model, flores_eval or a second model."""
        flores = self.flores_eval
        if not (self.laser and flores):
            return {}
        out = dict.fromkeys(self.laser_models, "laser")
        for name, m in self.family_entries.items():
            data = self.nway_data[m["data"]]
            first = data["corpus"] if isinstance(data["corpus"], str) else data["corpus"][0]
            if first == flores["corpus"] and list(data["valid"].get("heldout_lines", [])) == list(flores["heldout_lines"]):
                out[name] = m["family"]
        return out if len(out) > 1 else {}

    @cached_property
    def bitexts(self) -> list[Bitext]:
        """The LASER model's training bitexts: each corpus of its bitext_data with each target (none without
        a LASER model)."""
        if not self.laser:
            return []
        aligned = set(self.laser_setup.corpora)
        return [b for corpus in self.config["corpora"] if corpus["name"] in aligned
                for b in corpus_bitexts(corpus, self.targets)]

    @cached_property
    def pairs(self) -> list[tuple[str, str]]:
        """Distinct (src, tgt) training directions, in config order."""
        return list(dict.fromkeys((b.src, b.tgt) for b in self.bitexts))

    def bitexts_of_pair(self, src: str, tgt: str) -> list[Bitext]:
        return [b for b in self.bitexts if (b.src, b.tgt) == (src, tgt)]

    @property
    def targets(self) -> list[str]:
        """The LASER model's decoder targets (its bitext_data entry's), [] without one."""
        return list(self.laser_setup.data["targets"]) if self.laser else []

    @property
    def tatoeba_languages(self) -> list[str]:
        return list(self.config.get("evaluation", {}).get("tatoeba", {}).get("languages", []))

    @cached_property
    def trained_languages(self) -> set[str]:
        """Languages with training data in this config (sources and targets)."""
        return {lang for pair in self.pairs for lang in pair}

    @property
    def tatoeba_seen(self) -> list[str]:
        """Tatoeba languages with training data: Table 1."""
        return [code for code in self.tatoeba_languages if code in self.trained_languages]

    @property
    def tatoeba_unseen(self) -> list[str]:
        """Tatoeba languages without any training data in this config: Table 9."""
        return [code for code in self.tatoeba_languages if code not in self.trained_languages]

    # -- FLORES xsim (held-out lines, learning curves) --------------------------------------------
    @property
    def flores_eval(self) -> dict | None:
        return self.config.get("flores_eval")

    def heldout_lines(self, corpus: str) -> tuple[int, int] | None:
        """The lines of ``corpus`` held out of training (0-based [start, stop)), or None."""
        flores = self.flores_eval
        if flores and flores["corpus"] == corpus:
            return tuple(flores["heldout_lines"])
        return None

    @cached_property
    def flores_languages(self) -> list[str]:
        """Languages scored against English on FLORES: trained ones first, then zero-shot ones."""
        flores = self.flores_eval
        if not flores:
            return []
        corpus = self.corpora[flores["corpus"]]
        if flores["languages"] == "registry":
            codes = [code for code in languages.all_languages() if corpus_code(corpus, code)]
        else:
            codes = list(flores["languages"])
        codes = [c for c in dict.fromkeys(codes) if c != "eng"]
        return sorted(codes, key=lambda c: (c not in self.trained_languages, c))

    @cached_property
    def curve_pairs(self) -> list[tuple[str, str]]:
        """Training pairs whose held-out lines are binarized (valid.*): every pair of the FLORES corpus."""
        flores = self.flores_eval
        if not flores:
            return []
        return [(b.src, b.tgt) for b in self.bitexts if b.corpus == flores["corpus"]]

    # -- ablation variants (Tables 5-7) ------------------------------------------------------------
    @cached_property
    def base(self) -> Variant:
        return Variant(self.laser_name, tuple(sorted(self.laser_setup.entry["model"].items())), tuple(self.pairs))

    @property
    def other_laser_models(self) -> dict[str, dict]:
        """The LASER models after the first, on the same bitext_data entry: name -> entry."""
        return dict(self.laser_setup.others) if self.laser else {}

    @property
    def laser_models(self) -> list[str]:
        """Every configured LASER model of `models`, the base first (not the ablation variants, no replicates)."""
        return [self.laser_name, *self.other_laser_models] if self.laser else []

    def laser_description(self, name: str) -> str:
        """A LASER model's description (an ablation variant's: the base model's)."""
        return self.laser_setup.description(name)

    def variant_train(self, name: str) -> dict:
        """The train section a LASER variant trains with: its own (another LASER model's) or the base
        model's, with a seed replicate's seed."""
        variant = self.variants[name]
        train = dict(variant.train) if variant.train else dict(self.laser_setup.entry["train"])
        return train if variant.seed is None else {**train, "seed": variant.seed}

    def variant_seed(self, name: str) -> int:
        """The configured training seed of a configured LASER variant (its train section's)."""
        variant = self._configured_variants[name]
        return int(dict(variant.train)["seed"]) if variant.train else int(self.laser_setup.entry["train"]["seed"])

    def _variant(self, name: str, *, model=None, pairs=None, nli_weight: int = 0) -> Variant:
        merged = {**self.laser_setup.entry["model"], **(model or {})}
        return Variant(name, tuple(sorted(merged.items())), tuple(pairs or self.pairs), nli_weight)

    @cached_property
    def ablation_rows(self) -> dict[str, list[AblationRow]]:
        """ablation -> its rows in config order. A variant equal to the base model is the base model
        (trained once): its model is the base Variant. `setting` is the row's key in the paper's
        Tables 5-7 (paper_values/laser_2019/paper_tables5_7_ablations.csv)."""
        if not self.laser:
            return {}
        ablations = self.laser_setup.entry.get("ablations", {})
        rows: dict[str, list[AblationRow]] = {}
        if "depth" in ablations:
            rows["depth"] = [AblationRow(f"layers{n}", f"{n} layer{'s' if n > 1 else ''}",
                                         self._variant(f"layers{n}", model={"encoder_layers": n}), f"layers={n}")
                             for n in ablations["depth"]["layers"]]
        if "nli" in ablations:
            rows["nli"] = [AblationRow(f"nli{w}", "no NLI" if w == 0 else f"NLI x{w}",
                                       self._variant(f"nli{w}", nli_weight=w), f"nli={w}")
                           for w in ablations["nli"]["weights"]]
        if "languages" in ablations:
            subset = set(ablations["languages"]["subset"])
            kept = [p for p in self.pairs if p[0] in subset and p[1] in subset]
            n_sub = len({lang for pair in kept for lang in pair})
            rows["languages"] = [
                AblationRow("all_languages", f"all {len(self.trained_languages)} languages", self.base,
                            "languages=all"),
                AblationRow("subset_languages", f"{n_sub} evaluation languages",
                            self._variant("subset_languages", pairs=kept), "languages=subset")]
        base = self.base
        return {ablation: [r._replace(variant=base) if r.variant.identity == base.identity else r for r in variants]
                for ablation, variants in rows.items()}

    @cached_property
    def _configured_variants(self) -> dict[str, Variant]:
        if not self.laser:
            return {}
        out = {self.base.name: self.base}
        for rows in self.ablation_rows.values():
            for row in rows:
                out.setdefault(row.variant.name, row.variant)
        for name, m in self.other_laser_models.items():
            out[name] = Variant(name, tuple(sorted(m["model"].items())), tuple(self.pairs),
                                train=tuple(sorted(m["train"].items())))
        return out

    @cached_property
    def variants(self) -> dict[str, Variant]:
        """Every distinct LASER model to train: the base model first, then the ablation variants, the other
        LASER models, then the seed replicates of each (config `seeds`)."""
        out = dict(self._configured_variants)
        for name, variant in self._configured_variants.items():
            for replicate, seed in self._replicates_of(name, self.variant_seed(name)).items():
                out[replicate] = replace(variant, name=replicate, seed=seed)
        return out

    @cached_property
    def variant_aliases(self) -> dict[str, str]:
        """Every variant name (also those equal to the base model) -> the name of the model trained."""
        if not self.laser:
            return {}
        names = {self.base.name: self.base.name}
        for rows in self.ablation_rows.values():
            names.update({row.name: row.variant.name for row in rows})
        names.update({name: name for name in self.other_laser_models})
        return names

    def nli_settings(self, variant: Variant) -> dict | None:
        if not variant.nli_weight:
            return None
        return {"weight": variant.nli_weight, "hidden_dim": self.laser_setup.entry["ablations"]["nli"]["hidden_dim"]}
