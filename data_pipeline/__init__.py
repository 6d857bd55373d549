"""The data pipeline: corpus -> SentencePiece -> sharded TFRecords -> tf.data.

Modules, one idea each:
  corpus      reads user corpora (TSV or two aligned files), strictly UTF-8.
  embedded    generates the default English -> Portuguese corpus offline.
  tokenizer   the one SentencePiece wrapper used by training, decoding, serving.
  vocabulary  trains the SentencePiece model(s) from the training split.
  tfrecords   writes and parses the sharded ``tf.train.Example`` files.
  manifest    records what was prepared, so an unchanged config does nothing.
  prepare     ties the above together; ``python -m data_pipeline.prepare``.
  input       ``input_fn`` for the Estimator: bucketed, padded batches.
"""
