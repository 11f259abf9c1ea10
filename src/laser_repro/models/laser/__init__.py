"""The LASER model: fairseq bridge, fairseq plugin, encoder export and embedding."""
