"""The data's path: corpus or embedded -> tokenizer -> prepare (TFRecords) -> input (tf.data)."""
