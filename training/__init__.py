"""Training on top of the model (seq2seq) and decoding (decode): model_fn, the best checkpoint,
early stopping and the training status file."""
