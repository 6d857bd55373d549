"""The data's path: corpus (user files) or embedded (the generated default corpus) ->
tokenizer (SentencePiece + familiarity) -> prepare (TFRecords + manifest) -> input (tf.data)."""
