# Stage 1: corpora. Downloads (OPUS zips, the FLORES-200 tarball, WMT test sets, Tatoeba test files) and extraction
# of one aligned bitext per (corpus, source, target), with the paper's caps and counted filters.
import shlex



rule download_opus:
    output:
        "resources/opus/OPUS-{opus_corpus}/{version}/moses/{zipname}.txt.zip",
    log:
        "resources/logs/opus/{opus_corpus}/{version}/{zipname}.log",
    params:
        url=W.opus_url,
        mirror=lambda w: f"--mirror {shlex.quote(W.cfg['opus']['mirror'])}" if W.cfg["opus"].get("mirror") else "",
        sha=W.opus_sha256_arg,
        base=W.cfg["opus"]["base_url"],
        absent_ok=W.opus_absent_ok_arg,
        retries=W.cfg["opus"]["retries"],
        deadline=W.cfg["opus"]["deadline_s"],
        sources=W.downloaded_from(W.opus_url),
    retries: 1
    resources:
        downloads=1,
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro fetch --url {params.url:q} --dest {output:q} {params.sha}"
               " --retries {params.retries:q} --deadline {params.deadline:q} --base-url {params.base:q}"
               " {params.mirror} {params.absent_ok}",
               keys=["opus"], sources=True)


rule download_archive:
    output:
        "resources/{corpus}/archive.tar.gz",
    log:
        "resources/logs/{corpus}/archive.log",
    wildcard_constraints:
        corpus=alternatives(W.single_archives),
    params:
        urls=lambda w: W.fetch_urls(W.plan.archive_urls(w.corpus)),
        kind=lambda w: W.plan.archive_kind_name(w.corpus),
        sha=lambda w: W.archive_sha256_arg(w.corpus),
        retries=W.cfg["opus"]["retries"],
        deadline=W.cfg["opus"]["deadline_s"],
        sources=W.downloaded_from(lambda w: W.plan.corpora[w.corpus]["download"]["url"]),
    resources:
        downloads=1,
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro fetch {params.urls} --dest {output:q} --verify-as {params.kind:q} {params.sha}"
               " --retries {params.retries:q} --deadline {params.deadline:q}", keys=["corpora"], sources=True)


rule download_archive_part:  # one part of an archive published in parts (the UN corpus's UNv1.0.6way.tar.gz.0*)
    output:
        temp("resources/{corpus}/archive.part{k}"),
    log:
        "resources/logs/{corpus}/archive.part{k}.log",
    wildcard_constraints:
        corpus=alternatives(W.parted_archives),
    params:
        urls=lambda w: W.fetch_urls(W.plan.archive_urls(w.corpus, int(w.k))),
        retries=W.cfg["opus"]["retries"],
        deadline=W.cfg["opus"]["deadline_s"],
        sources=W.downloaded_from(lambda w: W.plan.archive_parts(w.corpus)[int(w.k)]),
    resources:
        downloads=1,
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro fetch {params.urls} --dest {output:q} --retries {params.retries:q}"
               " --deadline {params.deadline:q}", keys=["corpora"], sources=True)


rule join_archive_parts:
    input:
        lambda w: [f"resources/{w.corpus}/archive.part{k}" for k in range(len(W.plan.archive_parts(w.corpus)))],
    output:
        "resources/{corpus}/archive.tar.gz",
    log:
        "resources/logs/{corpus}/archive.log",
    wildcard_constraints:
        corpus=alternatives(W.parted_archives),
    params:
        sha=lambda w: W.archive_sha256_arg(w.corpus),
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro join-parts --parts {input:q} --output {output:q} {params.sha}", keys=["corpora"])


rule extract_archive_member:
    input:
        "resources/{corpus}/archive.tar.gz",
    output:
        "resources/{corpus}/{code}",
    log:
        "resources/logs/{corpus}/{code}.log",
    wildcard_constraints:
        corpus=alternatives(W.archive_corpora),
        code="(?!archive\\.)[A-Za-z0-9][A-Za-z0-9._-]*",  # FLORES eng_Latn, UN en (not archive.*)
    params:
        member=lambda w: W.plan.corpora[w.corpus]["download"]["member"].format(code=w.code),
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro extract-member --archive {input:q} --member {params.member:q} --output {output:q}")


rule download_sacrebleu:  # a WMT test set's archive (sacrebleu's URL), once for all corpora of the test set
    output:
        "resources/sacrebleu/{tarball}",
    log:
        "resources/logs/sacrebleu/{tarball}.log",
    wildcard_constraints:
        tarball=alternatives(W.plan.sacrebleu_archives),
    params:
        urls=lambda w: W.sacrebleu_urls(w.tarball),
        retries=W.cfg["opus"]["retries"],
        deadline=W.cfg["opus"]["deadline_s"],
        sources=W.downloaded_from(lambda w: W.plan.sacrebleu_archives[w.tarball]["url"]),
    resources:
        downloads=1,
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro fetch {params.urls} --dest {output:q} --retries {params.retries:q}"
               " --deadline {params.deadline:q}", keys=["corpora"], sources=True)


# A sacrebleu corpus's text files, one job per corpus (its outputs are config: one rule each). sacrebleu
# turns the SGML/XML into text offline; the md5 of the archive is sacrebleu's (checked there).
for _corpus in W.plan.sacrebleu_corpora:

    rule:
        name:
            f"sacrebleu_corpus_{_corpus}"
        input:
            [f"resources/sacrebleu/{t}" for t in W.plan.sacrebleu_tarballs(_corpus)],
        output:
            files=[path for _, path in W.sacrebleu_conversion(_corpus)],
            meta=f"resources/{_corpus}/sacrebleu.json",
        log:
            f"resources/logs/{_corpus}/sacrebleu.log",
        params:
            test_set=W.plan.corpora[_corpus]["download"]["sacrebleu"]["test_set"],
            tarballs=lambda w, input: " ".join(f"--tarball {shlex.quote(t)}" for t in input),
            files=" ".join(shlex.join([*arg, path]) for arg, path in W.sacrebleu_conversion(_corpus)),
        conda:
            "../envs/laser.yaml"
        shell:
            W.logged("laser-repro sacrebleu-corpus --test-set {params.test_set:q} {params.tarballs} {params.files}"
                   " --meta {output.meta:q}", keys=["corpora"])


rule download_tatoeba_test:
    output:
        "resources/tatoeba-v1/tatoeba.{lang}-eng.{side}",
    log:
        "resources/logs/tatoeba-v1/{lang}-eng.{side}.log",
    params:
        url=lambda w: W.cfg["evaluation"]["tatoeba"]["url"].format(lang=w.lang, side=w.side),
        retries=W.cfg["opus"]["retries"],
        deadline=W.cfg["opus"]["deadline_s"],
        sources=W.downloaded_from(lambda w: W.cfg["evaluation"]["tatoeba"]["url"].format(lang=w.lang, side=w.side)),
    resources:
        downloads=1,
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro fetch --url {params.url:q} --dest {output:q} --retries {params.retries:q}"
               " --deadline {params.deadline:q}", keys=["evaluation.tatoeba.url"], sources=True)


rule extract_bitext:
    input:
        unpack(W.extract_inputs),
    output:
        src="results/{run}/corpora/{corpus}/{src}-{tgt}.{src}",
        tgt="results/{run}/corpora/{corpus}/{src}-{tgt}.{tgt}",
        stats="results/{run}/corpora/{corpus}/{src}-{tgt}.stats.json",
    log:
        "results/{run}/logs/corpora/{corpus}/{src}-{tgt}.log",
    wildcard_constraints:
        corpus=alternatives(W.pair_corpus_names),
    params:
        args=W.extract_args,
        sources=W.raw_sources,
    resources:
        mem_mb=1000,
    conda:
        "../envs/laser.yaml"
    shell:
        W.logged("laser-repro extract {params.args}"
               " --out-src {output.src:q} --out-tgt {output.tgt:q} --stats {output.stats:q}",
               keys=["corpora", *W.laser_keys("filters")], sources=True)


# A pair of an N-way corpus: the kept pairs' lines of the sides' Moses files (rule moses_lines) are its one
# Moses shard (no preprocess_shard job: each language file is preprocessed once, not once per pair); with
# SentencePiece, the lines of LASER2's normalisation (laser2_lines) are its one shard in norm/.
use rule extract_bitext as extract_nway_bitext with:
    output:
        src="results/{run}/corpora/{corpus}/{src}-{tgt}.{src}",
        tgt="results/{run}/corpora/{corpus}/{src}-{tgt}.{tgt}",
        stats="results/{run}/corpora/{corpus}/{src}-{tgt}.stats.json",
        tok_src=f"results/{{run}}/{W.shard_dir}/{{corpus}}/{{src}}-{{tgt}}.{{src}}.000-of-001",
        tok_tgt=f"results/{{run}}/{W.shard_dir}/{{corpus}}/{{src}}-{{tgt}}.{{tgt}}.000-of-001",
    wildcard_constraints:
        corpus=alternatives(W.nway_corpus_names),


localrules: download_opus, download_archive, download_archive_part, join_archive_parts, download_sacrebleu, download_tatoeba_test, extract_archive_member
