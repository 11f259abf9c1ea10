"""Synthetic N-way corpus + Tatoeba-format test set for the toy end-to-end run.

Each language renders the same random "concept" sentences with its own word forms (Latin, Greek
and Han script words, so the Greek romanizer and the Chinese segmenter run), in the file layouts
the real pipeline reads: <root>/flores200-dev/<flores code>.dev and <root>/tatoeba-v1/tatoeba.<xx>-eng.*.
"""
from __future__ import annotations

import random
import sys
from pathlib import Path

CONCEPTS = ["dog", "cat", "house", "water", "eat", "see", "big", "small", "red", "man", "woman", "city",
            "book", "read", "run", "tree", "sun", "good", "new", "old", "child", "car", "go", "drink"]
WORDS = {
    "eng": "dog cat house water eats sees big small red man woman city book reads runs tree sun good new old child car goes drinks",
    "spa": "perro gato casa agua come ve grande pequeño rojo hombre mujer ciudad libro lee corre árbol sol bueno nuevo viejo niño coche va bebe",
    "deu": "Hund Katze Haus Wasser isst sieht groß klein rot Mann Frau Stadt Buch liest läuft Baum Sonne gut neu alt Kind Auto geht trinkt",
    "ell": "σκύλος γάτα σπίτι νερό τρώει βλέπει μεγάλος μικρός κόκκινος άντρας γυναίκα πόλη βιβλίο διαβάζει τρέχει δέντρο ήλιος καλός νέος παλιός παιδί αυτοκίνητο πηγαίνει πίνει",
    "cmn": "狗 猫 房子 水 吃 看见 大 小 红 男人 女人 城市 书 读 跑 树 太阳 好 新 旧 孩子 汽车 去 喝",
}
FLORES = {"eng": "eng_Latn", "spa": "spa_Latn", "deu": "deu_Latn", "ell": "ell_Grek", "cmn": "zho_Hans"}


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
    for lang in FLORES:
        if lang == "eng":
            continue
        for side in (lang, "eng"):
            with open(root / "tatoeba-v1" / f"tatoeba.{lang}-eng.{side}", "w", encoding="utf-8") as f:
                f.writelines(render(s, side) + "\n" for s in test)
    return root


if __name__ == "__main__":
    print(make(Path(sys.argv[1])))
