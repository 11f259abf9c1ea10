"""Model training: the train launcher/worker, its guard (fingerprint, lock) and checkpoint checks."""
