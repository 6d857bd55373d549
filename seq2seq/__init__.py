"""GRU encoder-decoder with attention, written in the TF1 graph style."""
