"""Bi-Sent2Vec (Sabet et al. 2019): bilingual Sent2Vec, CBOW over whole sentences with a cross-lingual term."""
