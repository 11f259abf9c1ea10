"""Bi-Sent2Vec (Sabet et al. 2019): bilingual Sent2Vec, CBOW over whole sentences with a cross-lingual term."""
from laser_repro.models.declaration import FamilyDeclaration


class BiSent2VecDeclaration(FamilyDeclaration):
    def encoder_languages(self, model, data):
        """The model's language pair (one model per pair, as in the paper)."""
        return list(model["pair"])

    def config_errors(self, model, data):
        return self.absent_languages(["pair"], model["pair"], model, data)

    def train_settings(self, run, name):
        return run.plan.bisent2vec_settings(name, vocab=run.bisent2vec_vocab_file(name))

    def compare_column(self, run, name):
        """One column per n-gram setting: the paper reports a pair's numbers with that pair's model."""
        uni = run.family_models[name]["model"]["ngrams"] == 1
        return f"bisent2vec_{'uni' if uni else 'uni_bi'}", f"Bi-Sent2Vec {'uni.' if uni else 'uni. + bi.'}, one model per en-xx pair:"

    def data_files(self, run, names):
        """The vocabulary of each model's pair (its words: the Moses-preprocessed text)."""
        return list(dict.fromkeys(run.bisent2vec_vocab_file(name) for name in names))

    def evaluation_files(self, run, names):
        return list(dict.fromkeys([*super().evaluation_files(run, names),
                                   *(p for paths in run.bisent2vec_table_inputs(None).values() for p in paths)]))

    def targets(self, run, names):
        """Paper 002's tables (Tables 1, 3, 4 with their tasks, the pairs table always) and the learning curves."""
        return [*run.paper_table_files("bisent2vec_2019", run.bisent2vec_tables()), *super().targets(run, names)]


DECLARATION = BiSent2VecDeclaration(
    name="bisent2vec", text="tok", data_dir="bisent2vec_vocab", kept="last",  # a fixed number of epochs
    loss_label=("Bi-Sent2Vec loss (eq. 3: monolingual + cross-lingual)", "logistic loss per prediction, negatives included (nats)"),
    update_label="sentence pairs seen (plain SGD: one step per target word)")
