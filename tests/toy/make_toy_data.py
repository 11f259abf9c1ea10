"""Synthetic N-way corpus + Tatoeba-format test set for the toy end-to-end run.

Each language renders the same random "concept" sentences with its own word forms (Latin, Greek
and Han script words, so the Greek romanizer and the Chinese segmenter run), in the file layouts
the real pipeline reads: <root>/flores200-dev/<flores code>.dev and <root>/tatoeba-v1/tatoeba.<xx>-eng.*.
"""
from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the eval_fixtures package

CONCEPTS = ["dog", "cat", "house", "water", "eat", "see", "big", "small", "red", "man", "woman", "city",
            "book", "read", "run", "tree", "sun", "good", "new", "old", "child", "car", "go", "drink"]
WORDS = {
    "eng": "dog cat house water eats sees big small red man woman city book reads runs tree sun good new old child car goes drinks",
    "spa": "perro gato casa agua come ve grande pequeño rojo hombre mujer ciudad libro lee corre árbol sol bueno nuevo viejo niño coche va bebe",
    "deu": "Hund Katze Haus Wasser isst sieht groß klein rot Mann Frau Stadt Buch liest läuft Baum Sonne gut neu alt Kind Auto geht trinkt",
    "ell": "σκύλος γάτα σπίτι νερό τρώει βλέπει μεγάλος μικρός κόκκινος άντρας γυναίκα πόλη βιβλίο διαβάζει τρέχει δέντρο ήλιος καλός νέος παλιός παιδί αυτοκίνητο πηγαίνει πίνει",
    "cmn": "狗 猫 房子 水 吃 看见 大 小 红 男人 女人 城市 书 读 跑 树 太阳 好 新 旧 孩子 汽车 去 喝",
    # the other UN languages (the Schwenk & Douze toy: tests/toy/compare.yaml)
    "fra": "chien chat maison eau mange voit grand petit rouge homme femme ville livre lit court arbre soleil bon nouveau vieux enfant voiture va boit",
    "rus": "собака кошка дом вода ест видит большой маленький красный мужчина женщина город книга читает бежит дерево солнце хороший новый старый ребёнок машина идёт пьёт",
    "ara": "كلب قطة بيت ماء يأكل يرى كبير صغير أحمر رجل امرأة مدينة كتاب يقرأ يركض شجرة شمس جيد جديد قديم طفل سيارة يذهب يشرب",
    # never trained on (no flores200-dev file): a Tatoeba language for Table 9 (zero-shot)
    "por": "cão gato casa água come vê grande pequeno vermelho homem mulher cidade livro lê corre árvore sol bom novo velho criança carro vai bebe",
}
FLORES = {"eng": "eng_Latn", "spa": "spa_Latn", "deu": "deu_Latn", "ell": "ell_Grek", "cmn": "zho_Hans",
          "fra": "fra_Latn", "rus": "rus_Cyrl", "ara": "arb_Arab"}


def render(concepts: list[int], lang: str) -> str:
    words = WORDS[lang].split()
    sep = "" if lang == "cmn" else " "
    text = sep.join(words[c] for c in concepts)
    end = "。" if lang == "cmn" else "."
    return text[:1].upper() + text[1:] + end


def make(root: Path, *, train_lines: int = 400, test_lines: int = 60, seed: int = 0) -> Path:
    rng = random.Random(seed)
    (root / "flores200-dev").mkdir(parents=True, exist_ok=True)
    (root / "tatoeba-v1").mkdir(parents=True, exist_ok=True)
    train = [[rng.randrange(len(CONCEPTS)) for _ in range(rng.randint(2, 7))] for _ in range(train_lines)]
    for lang, code in FLORES.items():
        with open(root / "flores200-dev" / f"{code}.dev", "w", encoding="utf-8") as f:
            f.writelines(render(s, lang) + "\n" for s in train)
    test = [[rng.randrange(len(CONCEPTS)) for _ in range(rng.randint(2, 6))] for _ in range(test_lines)]
    for lang in WORDS:
        if lang == "eng":
            continue
        for side in (lang, "eng"):
            with open(root / "tatoeba-v1" / f"tatoeba.{lang}-eng.{side}", "w", encoding="utf-8") as f:
                f.writelines(render(s, side) + "\n" for s in test)
    make_eval_data(root, rng)
    return root


def make_eval_data(root: Path, rng: random.Random) -> None:
    """The evaluation sets in their real formats (BUCC archives, XNLI and MultiNLI zips, an MLDoc
    directory, a WMT test-set tarball), from the same synthetic vocabulary."""
    from eval_fixtures import bucc, mldoc, wmt, xnli

    # BUCC 2018: per xx-en pair, translated pairs hidden among unrelated sentences on both sides
    def sentence():
        return [rng.randrange(len(CONCEPTS)) for _ in range(rng.randint(3, 7))]

    for xx in ("deu", "cmn"):
        splits = {}
        for split in ("training", "test"):
            parallel = [sentence() for _ in range(40)]
            splits[split] = bucc.make_split([(render(s, xx), render(s, "eng")) for s in parallel],
                                            [render(sentence(), xx) for _ in range(40)],
                                            [render(sentence(), "eng") for _ in range(40)], seed=rng.randrange(1 << 30))
        bucc.write_bucc_archives(root / "bucc2018", {"deu": "de", "cmn": "zh"}[xx], splits)
    # XNLI: English MultiNLI train, English dev, test in every toy language (pairIDs shared)
    xnli_langs = ["eng", "spa", "deu", "ell", "cmn"]
    train = xnli.toy_nli_items(600, len(CONCEPTS), seed=rng.randrange(1 << 30))
    dev = xnli.toy_nli_items(60, len(CONCEPTS), seed=rng.randrange(1 << 30))
    test = xnli.toy_nli_items(90, len(CONCEPTS), seed=rng.randrange(1 << 30))
    xnli.write_xnli_zip(root / "xnli" / "XNLI-1.0.zip", splits={
        "dev": xnli.parallel_rows(dev, render, xnli_langs), "test": xnli.parallel_rows(test, render, xnli_langs)})
    xnli.write_multinli_zip(root / "xnli" / "multinli_1.0.zip", xnli.parallel_rows(train, render, ["eng"])["eng"])
    # MLDoc: English train/dev/test, test in three more languages
    docs = {split: mldoc.parallel_docs(mldoc.toy_mldoc_items(n, len(CONCEPTS), seed=rng.randrange(1 << 30)),
                                       render, ["eng", "deu", "spa", "cmn"])
            for split, n in (("train", 200), ("dev", 40), ("test", 80))}
    mldoc.write_mldoc_dir(root / "mldoc", {
        lang: ({"train": docs["train"][lang], "dev": docs["dev"][lang]} if lang == "eng" else {})
        | {"test": docs["test"][lang]} for lang in ["eng", "deu", "spa", "cmn"]})
    # WMT: newstest2013's layout (N-way: one English file for every pair) with en, es, de
    sentences = [[rng.randrange(len(CONCEPTS)) for _ in range(rng.randint(4, 8))] for _ in range(50)]
    texts = {code: [render(s, lang) for s in sentences] for code, lang in (("en", "eng"), ("es", "spa"), ("de", "deu"))}
    wmt.make_test_set(root / "wmt" / "test.tgz", texts, test_set="wmt13")  # data_root: null (downloaded)
    # with data_root: the same test set as N-way plain text, as under the shared data's wmt-news/multiway
    (root / "wmt-news" / "multiway").mkdir(parents=True)
    for code, lines in texts.items():
        (root / "wmt-news" / "multiway" / f"newstest2013.{code}").write_text("".join(f"{x}\n" for x in lines),
                                                                            encoding="utf-8")
    make_bisent2vec_eval_data(root, random.Random(7))  # its own RNG: the data above stays as it was


def make_bisent2vec_eval_data(root: Path, rng: random.Random) -> None:
    """Paper 002's evaluation sets in their real layouts: the MUSE test dictionaries of en-fr and fr-en
    (one word pair per line, lowercased) and a Europarl v7 fr-en stand-in (raw aligned sentences)."""
    en, fr = WORDS["eng"].lower().split(), WORDS["fra"].lower().split()
    (root / "muse" / "dictionaries").mkdir(parents=True, exist_ok=True)
    for (src, tgt), a, b in ((("en", "fr"), en, fr), (("fr", "en"), fr, en)):
        with open(root / "muse" / "dictionaries" / f"{src}-{tgt}.5000-6500.txt", "w", encoding="utf-8") as f:
            f.writelines(f"{x} {y}\n" for x, y in zip(a, b))
    (root / "europarl").mkdir(exist_ok=True)
    sentences = [[rng.randrange(len(CONCEPTS)) for _ in range(rng.randint(3, 8))] for _ in range(300)]
    for code, lang in (("fr", "fra"), ("en", "eng")):
        with open(root / "europarl" / f"europarl-v7.fr-en.{code}", "w", encoding="utf-8") as f:
            f.writelines(render(s, lang) + "\n" for s in sentences)


if __name__ == "__main__":
    print(make(Path(sys.argv[1])))
