"""The LASER model: fairseq bridge, fairseq plugin, encoder export and embedding."""
from laser_repro.models.declaration import FamilyDeclaration

# (LASER's models are the config's LASER model and its ablation variants, on the joint BPE of bitext_data)
DECLARATION = FamilyDeclaration(name="laser", text="bpe")
