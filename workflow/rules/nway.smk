# N-way data (nway_data: the multienc family): per language, the training lines and the validation
# lines (held out of the same file, or a separate dev file), with their lines of moses_lines (laser2_lines for
# subword.kind: spm); then, for all languages together, the length filter, the joint BPE (nway_bpe) or
# SentencePiece model (nway_spm) and the vocabulary (laser_repro.data.nway).
import os

from laser_repro.workflow.run import alternatives

rule nway_text:
    input:
        unpack(W.nway_raw_inputs),
    output:
        train="results/{run}/nway/{data}/tok/train.{lang}",
        valid="results/{run}/nway/{data}/tok/valid.{lang}",
        raw_valid="results/{run}/nway/{data}/raw/valid.{lang}",
    log:
        "results/{run}/logs/nway/{data}/text.{lang}.log",
    params:
        out_dir=lambda w, output: os.path.dirname(os.path.dirname(output.train)),
        valid=W.nway_valid_args,
        sources=W.raw_sources,
    resources:
        mem_mb=1000,
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro nway-text --raw {input.raw:q} --moses {input.moses:q} --lang {wildcards.lang:q}"
               " --out-dir {params.out_dir:q} {params.valid}", keys=["nway_data"], sources=True)


rule nway_bpe:
    input:
        lambda w: W.nway_tok_files(w.data),
    output:  # codes, vocab, dict.txt, stats.json, {train,valid}.<lang> (the languages are config)
        directory("results/{run}/nway/{data}/bpe"),
    log:
        "results/{run}/logs/nway/{data}/bpe.log",
    benchmark:
        "results/{run}/benchmarks/nway/{data}/bpe.tsv"
    wildcard_constraints:
        data=alternatives(W.nway_data_of_kind("bpe")),
    params:
        tok_dir=lambda w, input: os.path.dirname(input[0]),
        langs=lambda w: list(W.nway[w.data]["languages"]),
        merges=lambda w: W.nway[w.data]["bpe_merges"],
        max_words=lambda w: W.nway_max_words_arg(w.data),
    resources:
        mem_mb=8000,
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro nway-bpe --tok-dir {params.tok_dir:q} --langs {params.langs:q} --out-dir {output:q}"
               " --merges {params.merges:q} {params.max_words}", keys=["nway_data"])


rule nway_spm:  # subword.kind: spm: the same directory, a SentencePiece model (spm.model) in place of the codes
    input:
        lambda w: W.nway_tok_files(w.data),
    output:  # spm.model, spm.vocab, spm.json, dict.txt, stats.json, {train,valid}.<lang>
        directory("results/{run}/nway/{data}/bpe"),
    log:
        "results/{run}/logs/nway/{data}/spm.log",
    benchmark:
        "results/{run}/benchmarks/nway/{data}/spm.tsv"
    wildcard_constraints:
        data=alternatives(W.nway_data_of_kind("spm")),
    params:
        tok_dir=lambda w, input: os.path.dirname(input[0]),
        langs=lambda w: list(W.nway[w.data]["languages"]),
        args=lambda w: W.nway_spm_args(w.data),
    threads: lambda w: W.nway[w.data]["subword"]["threads"]
    resources:
        mem_mb=lambda w: W.nway_spm_mem_mb(w.data),
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro nway-spm --tok-dir {params.tok_dir:q} --langs {params.langs:q} --out-dir {output:q}"
               " {params.args:q}", keys=["nway_data"])


rule nway_tfidf:  # the non-learned baseline of the similarity tables, on the raw validation lines
    input:
        lambda w: [f"{W.run}/nway/{w.data}/raw/valid.{lang}" for lang in W.nway[w.data]["languages"]],
    output:
        "results/{run}/eval/nway/{data}/tfidf.json",
    log:
        "results/{run}/logs/nway/{data}/tfidf.log",
    params:
        langs=lambda w: list(W.nway[w.data]["languages"]),
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro nway-tfidf --langs {params.langs:q} --texts {input:q} --output {output:q}")
