# Stage 1: corpora. Downloads (OPUS zips, the FLORES-200 tarball, WMT test sets, Tatoeba test files) and extraction
# of one aligned bitext per (corpus, source, target), with the paper's caps and counted filters.


rule download_opus:
    output:
        "resources/opus/OPUS-{opus_corpus}/{version}/moses/{zipname}.txt.zip",
    log:
        "resources/logs/opus/{opus_corpus}/{version}/{zipname}.log",
    params:
        url=opus_url,
        mirror=lambda w: f"--mirror {shlex.quote(CFG['opus']['mirror'])}" if CFG["opus"].get("mirror") else "",
        sha=opus_sha256_arg,
        base=CFG["opus"]["base_url"],
        absent_ok=lambda w: f"--absent-ok {opus_pair_url_args(w)}"
        if any(c.get("allow_absent_pairs") for c in PLAN.corpora.values() if c.get("corpus") == w.opus_corpus) else "",
        retries=CFG["opus"]["retries"],
        deadline=CFG["opus"]["deadline_s"],
        sources=downloaded_from(opus_url),
    retries: 1
    resources:
        downloads=1,
    conda:
        "../envs/laser.yaml"
    shell:
        logged("laser-repro fetch --url {params.url:q} --dest {output:q} {params.sha}"
               " --retries {params.retries:q} --deadline {params.deadline:q} --base-url {params.base:q}"
               " {params.mirror} {params.absent_ok}",
               keys=["opus"], sources=True)


rule download_archive:
    output:
        "resources/{corpus}/archive.tar.gz",
    log:
        "resources/logs/{corpus}/archive.log",
    wildcard_constraints:
        corpus=alternatives(SINGLE_ARCHIVES),
    params:
        urls=lambda w: fetch_urls(PLAN.archive_urls(w.corpus)),
        kind=lambda w: PLAN.archive_kind_name(w.corpus),
        sha=lambda w: f"--sha256 {shlex.quote(PLAN.corpora[w.corpus]['download']['sha256'])}"
        if PLAN.corpora[w.corpus]["download"].get("sha256") else "",
        retries=CFG["opus"]["retries"],
        deadline=CFG["opus"]["deadline_s"],
        sources=downloaded_from(lambda w: PLAN.corpora[w.corpus]["download"]["url"]),
    resources:
        downloads=1,
    conda:
        "../envs/laser.yaml"
    shell:
        logged("laser-repro fetch {params.urls} --dest {output:q} --verify-as {params.kind:q} {params.sha}"
               " --retries {params.retries:q} --deadline {params.deadline:q}", keys=["corpora"], sources=True)


rule download_archive_part:  # one part of an archive published in parts (the UN corpus's UNv1.0.6way.tar.gz.0*)
    output:
        temp("resources/{corpus}/archive.part{k}"),
    log:
        "resources/logs/{corpus}/archive.part{k}.log",
    wildcard_constraints:
        corpus=alternatives(PARTED_ARCHIVES),
    params:
        urls=lambda w: fetch_urls(PLAN.archive_urls(w.corpus, int(w.k))),
        retries=CFG["opus"]["retries"],
        deadline=CFG["opus"]["deadline_s"],
        sources=downloaded_from(lambda w: PLAN.archive_parts(w.corpus)[int(w.k)]),
    resources:
        downloads=1,
    conda:
        "../envs/laser.yaml"
    shell:
        logged("laser-repro fetch {params.urls} --dest {output:q} --retries {params.retries:q}"
               " --deadline {params.deadline:q}", keys=["corpora"], sources=True)


rule join_archive_parts:
    input:
        lambda w: [f"resources/{w.corpus}/archive.part{k}" for k in range(len(PLAN.archive_parts(w.corpus)))],
    output:
        "resources/{corpus}/archive.tar.gz",
    log:
        "resources/logs/{corpus}/archive.log",
    wildcard_constraints:
        corpus=alternatives(PARTED_ARCHIVES),
    params:
        sha=lambda w: f"--sha256 {shlex.quote(PLAN.corpora[w.corpus]['download']['sha256'])}"
        if PLAN.corpora[w.corpus]["download"].get("sha256") else "",
    conda:
        "../envs/laser.yaml"
    shell:
        logged("laser-repro join-parts --parts {input:q} --output {output:q} {params.sha}", keys=["corpora"])


rule extract_archive_member:
    input:
        "resources/{corpus}/archive.tar.gz",
    output:
        "resources/{corpus}/{code}",
    log:
        "resources/logs/{corpus}/{code}.log",
    wildcard_constraints:
        corpus=alternatives(ARCHIVE_CORPORA),
        code="(?!archive\\.)[A-Za-z0-9][A-Za-z0-9._-]*",  # FLORES eng_Latn, UN en (not archive.*)
    params:
        member=lambda w: PLAN.corpora[w.corpus]["download"]["member"].format(code=w.code),
    conda:
        "../envs/laser.yaml"
    shell:
        logged("laser-repro extract-member --archive {input:q} --member {params.member:q} --output {output:q}")


rule download_sacrebleu:  # a WMT test set's archive (sacrebleu's URL), once for all corpora of the test set
    output:
        "resources/sacrebleu/{tarball}",
    log:
        "resources/logs/sacrebleu/{tarball}.log",
    wildcard_constraints:
        tarball=alternatives(PLAN.sacrebleu_archives),
    params:
        urls=lambda w: fetch_urls([PLAN.sacrebleu_archives[w.tarball]["url"],
                                   *PLAN.sacrebleu_archives[w.tarball]["alternatives"]]),
        retries=CFG["opus"]["retries"],
        deadline=CFG["opus"]["deadline_s"],
        sources=downloaded_from(lambda w: PLAN.sacrebleu_archives[w.tarball]["url"]),
    resources:
        downloads=1,
    conda:
        "../envs/laser.yaml"
    shell:
        logged("laser-repro fetch {params.urls} --dest {output:q} --retries {params.retries:q}"
               " --deadline {params.deadline:q}", keys=["corpora"], sources=True)


# A sacrebleu corpus's text files, one job per corpus (its outputs are config: one rule each). sacrebleu
# turns the SGML/XML into text offline; the md5 of the archive is sacrebleu's (checked there).
for _corpus in PLAN.sacrebleu_corpora:

    rule:
        name:
            f"sacrebleu_corpus_{_corpus}"
        input:
            [f"resources/sacrebleu/{t}" for t in PLAN.sacrebleu_tarballs(_corpus)],
        output:
            files=[path for _, path in sacrebleu_conversion(_corpus)],
            meta=f"resources/{_corpus}/sacrebleu.json",
        log:
            f"resources/logs/{_corpus}/sacrebleu.log",
        params:
            test_set=PLAN.corpora[_corpus]["download"]["sacrebleu"]["test_set"],
            tarballs=lambda w, input: " ".join(f"--tarball {shlex.quote(t)}" for t in input),
            files=" ".join(shlex.join([*arg, path]) for arg, path in sacrebleu_conversion(_corpus)),
        conda:
            "../envs/laser.yaml"
        shell:
            logged("laser-repro sacrebleu-corpus --test-set {params.test_set:q} {params.tarballs} {params.files}"
                   " --meta {output.meta:q}", keys=["corpora"])


rule download_tatoeba_test:
    output:
        "resources/tatoeba-v1/tatoeba.{lang}-eng.{side}",
    log:
        "resources/logs/tatoeba-v1/{lang}-eng.{side}.log",
    params:
        url=lambda w: CFG["evaluation"]["tatoeba"]["url"].format(lang=w.lang, side=w.side),
        retries=CFG["opus"]["retries"],
        deadline=CFG["opus"]["deadline_s"],
        sources=downloaded_from(lambda w: CFG["evaluation"]["tatoeba"]["url"].format(lang=w.lang, side=w.side)),
    resources:
        downloads=1,
    conda:
        "../envs/laser.yaml"
    shell:
        logged("laser-repro fetch --url {params.url:q} --dest {output:q} --retries {params.retries:q}"
               " --deadline {params.deadline:q}", keys=["evaluation.tatoeba.url"], sources=True)


rule extract_bitext:
    input:
        unpack(extract_inputs),
    output:
        src="results/{run}/corpora/{corpus}/{src}-{tgt}.{src}",
        tgt="results/{run}/corpora/{corpus}/{src}-{tgt}.{tgt}",
        stats="results/{run}/corpora/{corpus}/{src}-{tgt}.stats.json",
    log:
        "results/{run}/logs/corpora/{corpus}/{src}-{tgt}.log",
    wildcard_constraints:
        corpus=alternatives(PAIR_CORPORA),
    params:
        args=extract_args,
        sources=raw_sources,
    resources:
        mem_mb=1000,
    conda:
        "../envs/laser.yaml"
    shell:
        logged("laser-repro extract {params.args}"
               " --out-src {output.src:q} --out-tgt {output.tgt:q} --stats {output.stats:q}",
               keys=["corpora", "filters"], sources=True)


# A pair of an N-way corpus: the kept pairs' lines of the sides' Moses files (rule moses_lines) are its one
# Moses shard (no preprocess_shard job: each language file is preprocessed once, not once per pair).
use rule extract_bitext as extract_nway_bitext with:
    output:
        src="results/{run}/corpora/{corpus}/{src}-{tgt}.{src}",
        tgt="results/{run}/corpora/{corpus}/{src}-{tgt}.{tgt}",
        stats="results/{run}/corpora/{corpus}/{src}-{tgt}.stats.json",
        tok_src="results/{run}/tok/{corpus}/{src}-{tgt}.{src}.000-of-001",
        tok_tgt="results/{run}/tok/{corpus}/{src}-{tgt}.{tgt}.000-of-001",
    wildcard_constraints:
        corpus=alternatives(NWAY_CORPORA),


localrules: download_opus, download_archive, download_archive_part, join_archive_parts, download_sacrebleu, download_tatoeba_test, extract_archive_member
