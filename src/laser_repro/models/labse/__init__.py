"""LaBSE (Feng et al. 2020): a shared transformer dual encoder trained with the bidirectional
additive-margin translation ranking loss, optionally initialised by MLM + TLM pre-training."""
