"""Where the run's files are: the paths under results/<run>/ that rules read and the helpers name (a
name or a wildcard pattern such as "{model}" gives the file or the pattern)."""
from __future__ import annotations

from laser_repro.models import registry
from laser_repro.workflow.targets import TABLE_FORMATS


class Layout:
    """Part of :class:`laser_repro.workflow.run.WorkflowRun` (its attributes are set there)."""

    def moses_file(self, corpus, lang, lowercase):
        """An N-way corpus's language file, Moses-preprocessed (rule moses_lines)."""
        return f"{self.run}/moses/{corpus}/{lang}.{'lower' if lowercase else 'cased'}"

    def text_file(self, corpus, lang, lowercase, kind):
        """An N-way corpus's language file as the text path of subwords ``kind`` prepares it: Moses (rule
        moses_lines) for bpe or LASER2's normalisation (rule laser2_lines) for spm."""
        if kind == "spm":
            return f"{self.run}/laser2/{corpus}/{lang}.{'lower' if lowercase else 'cased'}"
        return self.moses_file(corpus, lang, lowercase)

    def laser_text_file(self, corpus, lang):
        """An N-way corpus's language file as the LASER data's text path prepares it (:meth:`text_file`)."""
        return self.text_file(corpus, lang, self.laser_data["preprocess"]["lowercase"], self.subword_kind)

    def subword_model(self, wildcards=None):
        """The LASER data's subword model, which every rule preparing text for a LASER encoder passes as --codes:
        fastBPE codes (bpe) or the SentencePiece model (spm)."""
        return f"{self.run}/spm/spm.model" if self.subword_kind == "spm" else f"{self.run}/bpe/codes"

    def subword_text(self, src, tgt, lang):
        """One side of one pair of the LASER training text in subwords (the input of binarize_pair)."""
        return f"{self.run}/{self.subword_kind}/train/{src}-{tgt}.{lang}"

    def shards_of(self, corpus):
        """A bitext's Moses shards (one for an N-way corpus: its pairs take the lines of moses_lines)."""
        if corpus in self.nway_corpus_names:
            return 1
        return self.plan.corpora[corpus].get("shards") or self.laser_data["preprocess"]["shards"]

    def tok_shards(self, corpus, src, tgt, lang):
        """One side's shards of the training text, preprocessed (Moses, or LASER2's normalisation: shard_dir)."""
        n = self.shards_of(corpus)
        return [f"{self.run}/{self.shard_dir}/{corpus}/{src}-{tgt}.{lang}.{k:03d}-of-{n:03d}" for k in range(n)]

    def tok_shards_by_language(self, wildcards=None):
        """lang -> every training shard of that language, in config order (spm_learn samples per language)."""
        out = {}
        for b in self.plan.bitexts:
            for lang in (b.src, b.tgt):
                out.setdefault(lang, []).extend(self.tok_shards(b.corpus, b.src, b.tgt, lang))
        return out

    def all_tok_shards(self, wildcards=None):
        return [p for b in self.plan.bitexts for lang in (b.src, b.tgt) for p in self.tok_shards(b.corpus, b.src, b.tgt, lang)]

    def pair_tok_shards(self, wildcards, lang=None):
        """Tokenized shards of every corpus of one (src, tgt) direction, one side (default wildcards.lang), in config order."""
        return [p for b in self.plan.bitexts_of_pair(wildcards.src, wildcards.tgt)
                for p in self.tok_shards(b.corpus, b.src, b.tgt, lang or wildcards.lang)]

    def model_record_file(self, name):
        """A trained model's own record (laser-repro train --record): what it was trained with."""
        return f"{self.run}/models/{name}/model_record.json"

    def train_benchmark(self, trained):
        """The Snakemake benchmark of a model's training job (laser_train, multienc_train, labse_train, bisent2vec_train)."""
        return f"{self.run}/benchmarks/{trained}/train.tsv"

    def heldout_scores_file(self, trained):
        """The held-out scores of a trained model (a seed replicate too), as its family declares: a LASER
        variant's flores-xsim scores, another family's similarity scores on its nway_data validation lines."""
        return self.declaration_of(trained).heldout_scores_file(self, trained)

    def curves_figure(self, name):
        """A trained model's learning-curve figure."""
        return f"{self.figures_dir}/curves_{name}.png"

    def paper_table_files(self, paper, tables):
        """Each table's files (every format of TABLE_FORMATS) of one paper, under results/tables/<run>/<paper>/."""
        return [f"{self.tables_dir}/{paper}/{table}.{ext}" for table in tables for ext in TABLE_FORMATS]

    def labse_tokenizer(self, name):
        m = self.labse[name]
        return f"{self.run}/nway/{m['data']}/wordpiece/{self.plan.labse_vocab(name)}/tokenizer.json"

    def labse_text(self, data):
        """The Moses-preprocessed training and validation lines of an N-way data set."""
        return [f"{self.run}/nway/{data}/tok/{split}.{lang}" for lang in self.nway[data]["languages"] for split in ("train", "valid")]

    def labse_token_ids(self, pretraining):
        """The token arrays (labse_tokenize) that a LaBSE pre-training run reads: its data's lines with its
        vocabulary."""
        first = self.plan.labse_pretrainings[pretraining]
        return f"{self.run}/nway/{self.labse[first]['data']}/wordpiece_ids/{self.plan.labse_vocab(first)}"

    def nway_tok_files(self, data):
        """The Moses-preprocessed lines of an N-way data set (nway_text), train and valid of each language."""
        return [f"{self.run}/nway/{data}/tok/{split}.{lang}" for lang in self.nway[data]["languages"]
                for split in ("train", "valid")]

    def labse_pretrained(self, name):
        """The pre-training checkpoint a LaBSE model starts from ([] when it trains from scratch)."""
        key = self.plan.labse_pretraining(name)
        return [f"{self.run}/labse_pretrain/{key}/checkpoint_final.pt"] if key else []

    def bisent2vec_text(self, name):
        """The Moses-tokenised training and validation lines of a Bi-Sent2Vec model's pair."""
        m = self.bisent2vec[name]
        return [f"{self.run}/nway/{m['data']}/tok/{split}.{lang}" for lang in m["pair"] for split in ("train", "valid")]

    def bisent2vec_vocab_file(self, name):
        return f"{self.run}/nway/{self.bisent2vec[name]['data']}/bisent2vec_vocab/{self.plan.bisent2vec_vocab(name)}.json"

    def europarl_tfidf_file(self, src, tgt):
        return f"{self.run}/eval/tfidf/europarl_{src}-{tgt}.json"

    def encoder_file(self, w):
        return f"{self.run}/models/{w.model}/encoder.pt"

    def init_encoder_file(self, w):
        """The same encoder at update 0 (the random-initialization baseline of the similarity tables)."""
        return f"{self.run}/models/{w.model}/encoder_init.pt"

    def flores_texts(self, kind, langs=None):
        """kind raw or bpe: the held-out and training-sample lines of every FLORES language (and English)."""
        from laser_repro.evaluation.flores import SPLITS

        if not self.flores:
            return []
        langs = ["eng", *self.plan.flores_languages] if langs is None else langs
        return [f"{self.flores_dir}/{kind}/{split}.{lang}" for lang in langs for split in SPLITS]

    def subword_train_files(self, wildcards=None):
        return [self.subword_text(src, tgt, lang) for src, tgt in self.plan.pairs for lang in (src, tgt)]

    def binarized_files(self, pairs=None, split="train"):
        """The binarized pairs (default: all pairs of the config); split valid: their held-out FLORES lines."""
        return [f"{self.run}/bin/{split}.{src}-{tgt}.{lang}.{ext}"
                for src, tgt in (self.plan.pairs if pairs is None else pairs) for lang in (src, tgt) for ext in ("bin", "idx")]

    def emb(self, task, name, lang, model="{model}", init=False):
        """Embeddings of one evaluation text by one model's encoder (a pattern when model is not given);
        init: by the same encoder at update 0 (rule eval_embed_init)."""
        return f"{self.run}/eval/{task}/{model}/{'emb_init' if init else 'emb'}/{name}.{lang}.npy"

    def _direction_files(self, name, kind, directions, encoder):
        return {f"{s}-{t}": f"{self.run}/eval/models/{name}/{kind}_{s}-{t}_{encoder}.json" for s, t in directions}

    def model_text(self, name) -> str:
        """The text of its N-way data a model of `models` reads, as its family declares: "bpe" or "tok"
        (laser_repro.models.declaration.MODEL_TEXTS)."""
        return registry.declaration(self.family_models[name]["family"]).text

    def model_text_dir(self, w):
        """A model's input text of its N-way data: BPE'd (multienc), Moses-preprocessed (labse: its vocabulary
        is applied by the encoder; bisent2vec: words)."""
        return f"{self.run}/nway/{self.family_models[w.model]['data']}/{self.model_text(w.model)}"

    def model_valid_text(self, w):
        """The files of model_text_dir that the similarity error reads (the bpe directory is one output)."""
        if self.model_text(w.model) == "bpe":
            return [self.model_text_dir(w)]
        return [f"{self.model_text_dir(w)}/valid.{lang}" for lang in self.plan.encoder_languages(w.model)]
