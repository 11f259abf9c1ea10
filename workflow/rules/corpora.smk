# Stage 1: corpora. Downloads (OPUS zips, the FLORES-200 tarball, Tatoeba test files) and extraction
# of one aligned bitext per (corpus, source, target), with the paper's caps and counted filters.


def opus_zip(corpus, src, tgt):
    c = PLAN.corpora[corpus]
    a, b = sorted([languages.opus_code(src, c.get("codes")), languages.opus_code(tgt, c.get("codes"))])
    return f"resources/opus/OPUS-{c['corpus']}/{c['version']}/moses/{a}-{b}.txt.zip"


def local_corpus_file(corpus, lang):
    """A language's file of a local N-way corpus: under data_root, or extracted from the download."""
    c = PLAN.corpora[corpus]
    code = getattr(languages.get(lang), c["code_column"])
    if DATA_ROOT:
        return c["path"].format(root=DATA_ROOT, code=code)
    if "download" not in c:
        raise ValueError(f"corpora: {corpus}: data_root is null and the corpus has no download section")
    return f"resources/{corpus}/{code}"


def tatoeba_test_file(lang, side):
    if DATA_ROOT:
        return CFG["evaluation"]["tatoeba"]["path"].format(root=DATA_ROOT, lang=lang, side=side)
    return f"resources/tatoeba-v1/tatoeba.{lang}-eng.{side}"


def extract_inputs(w):
    c = PLAN.corpora[w.corpus]
    if c["kind"] == "opus":
        files = {"zip": opus_zip(w.corpus, w.src, w.tgt)}
    elif c["layout"] == "nway":
        files = {"src_file": local_corpus_file(w.corpus, w.src), "tgt_file": local_corpus_file(w.corpus, w.tgt)}
    else:
        root = DATA_ROOT or "resources"
        files = {side: c["path"].format(root=root, src=w.src, tgt=w.tgt, side=lang)
                 for side, lang in (("src_file", w.src), ("tgt_file", w.tgt))}
    if c.get("exclude_tatoeba_test"):
        xx = w.src if w.src != "eng" else w.tgt
        if xx != "eng" and languages.get(xx).tatoeba_test:
            files["tatoeba"] = [tatoeba_test_file(xx, xx), tatoeba_test_file(xx, "eng")]
    return files


def extract_args(w, input):
    c = PLAN.corpora[w.corpus]
    args = [f"--src {w.src} --tgt {w.tgt}"]
    if c["kind"] == "opus":
        args.append(f"--opus-zip {input.zip} --opus-corpus {c['corpus']}"
                    f" --src-code {languages.opus_code(w.src, c.get('codes'))}"
                    f" --tgt-code {languages.opus_code(w.tgt, c.get('codes'))}")
    else:
        args.append(f"--src-file {input.src_file} --tgt-file {input.tgt_file}")
    for key in ("first_n", "max_pairs"):
        if c.get(key):
            args.append(f"--{key.replace('_', '-')} {c[key]}")
    filters = CFG["filters"]
    args.append(f"--max-chars {filters['max_chars']}")
    if filters.get("max_ratio"):
        args.append(f"--max-ratio {filters['max_ratio']}")
    if "tatoeba" in input.keys():
        args.append(f"--exclude-tatoeba {input.tatoeba[0]} {input.tatoeba[1]}")
    return " ".join(args)


rule download_opus:
    output:
        "resources/opus/OPUS-{opus_corpus}/{version}/moses/{zipname}.txt.zip",
    log:
        "resources/logs/opus/{opus_corpus}/{version}/{zipname}.log",
    params:
        url=lambda w: f"{CFG['opus']['base_url']}/OPUS-{w.opus_corpus}/{w.version}/moses/{w.zipname}.txt.zip",
        mirror=lambda w: f"--mirror {CFG['opus']['mirror']}" if CFG["opus"].get("mirror") else "",
        sha=lambda w: next((f"--sha256 {c['sha256'][w.zipname + '.txt.zip']}" for c in PLAN.corpora.values()
                            if c.get("corpus") == w.opus_corpus and w.zipname + ".txt.zip" in c.get("sha256", {})), ""),
        base=CFG["opus"]["base_url"],
        absent_ok=lambda w: "--absent-ok" if any(c.get("allow_absent_pairs") for c in PLAN.corpora.values()
                                                 if c.get("corpus") == w.opus_corpus) else "",
        retries=CFG["opus"]["retries"],
    retries: 1
    resources:
        downloads=1,
    shell:
        logged("{PY} -m laser_repro.cli fetch --url {params.url} --dest {output} {params.sha}"
               " --retries {params.retries} --base-url {params.base} {params.mirror} {params.absent_ok}")


rule download_archive:
    output:
        "resources/{corpus}/archive.tar.gz",
    log:
        "resources/logs/{corpus}/archive.log",
    params:
        url=lambda w: PLAN.corpora[w.corpus]["download"]["url"],
        sha=lambda w: f"--sha256 {PLAN.corpora[w.corpus]['download']['sha256']}"
        if PLAN.corpora[w.corpus]["download"].get("sha256") else "",
        retries=CFG["opus"]["retries"],
    resources:
        downloads=1,
    shell:
        logged("{PY} -m laser_repro.cli fetch --url {params.url} --dest {output} {params.sha} --retries {params.retries}")


rule extract_archive_member:
    input:
        "resources/{corpus}/archive.tar.gz",
    output:
        "resources/{corpus}/{code}",
    log:
        "resources/logs/{corpus}/{code}.log",
    wildcard_constraints:
        code="[A-Za-z]{3}_[A-Za-z]{4}[A-Za-z0-9._-]*",
    params:
        member=lambda w: PLAN.corpora[w.corpus]["download"]["member"].format(code=w.code),
    shell:
        logged("{PY} -m laser_repro.cli extract-member --archive {input} --member {params.member} --output {output}")


rule download_tatoeba_test:
    output:
        "resources/tatoeba-v1/tatoeba.{lang}-eng.{side}",
    log:
        "resources/logs/tatoeba-v1/{lang}-eng.{side}.log",
    params:
        url=lambda w: CFG["evaluation"]["tatoeba"]["url"].format(lang=w.lang, side=w.side),
        retries=CFG["opus"]["retries"],
    resources:
        downloads=1,
    shell:
        logged("{PY} -m laser_repro.cli fetch --url {params.url} --dest {output} --retries {params.retries}")


rule extract_bitext:
    input:
        unpack(extract_inputs),
    output:
        src=RUN + "/corpora/{corpus}/{src}-{tgt}.{src}",
        tgt=RUN + "/corpora/{corpus}/{src}-{tgt}.{tgt}",
        stats=RUN + "/corpora/{corpus}/{src}-{tgt}.stats.json",
    log:
        RUN + "/logs/corpora/{corpus}/{src}-{tgt}.log",
    params:
        args=extract_args,
    resources:
        mem_mb=1000,
    shell:
        logged("{PY} -m laser_repro.cli extract {params.args}"
               " --out-src {output.src} --out-tgt {output.tgt} --stats {output.stats}")


localrules: download_opus, download_archive, download_tatoeba_test
