"""Training: model_fn, evaluation, the best checkpoint, early stopping, averaging, the status."""
