"""An ensemble of models decoded as one: each step's log-probabilities the mean of the members'.

`Ensemble` offers what the decoders use of a `Seq2SeqModel`, so every decoder takes it
unchanged. Its logits, the mean of the members' log-softmax, are normalised again by the
decoders: a product of experts (docs/DECODING-NOTES.md, "Ensembles"). Attention is the mean.
"""

import os

import tensorflow.compat.v1 as tf

from data_pipeline.tokenizer import Tokenizer
from decode.graph_cache import CheckpointValues
from seq2seq.config import load_config
from seq2seq.model import SCOPE, EncoderOutput, Seq2SeqModel
from seq2seq.model_dir import CONFIG_FILE, find_checkpoint


def load_configs(model_dirs, hparams=""):
    """The config of each of `model_dirs`, `hparams` applied; ValueError names one that is no
    model directory, or two whose SentencePiece models (or source lower-casing) differ."""
    encodings = []
    for model_dir in model_dirs:
        if not os.path.isfile(os.path.join(model_dir, CONFIG_FILE)):
            raise ValueError("%s has no %s: is it a model directory written by train.py?"
                             % (model_dir, CONFIG_FILE))
        encodings.append(Tokenizer.load(model_dir).encoding())
        if encodings[-1] != encodings[0]:
            raise ValueError("%s and %s have different vocabularies (SentencePiece models): the "
                             "models of an ensemble must share theirs" % (model_dirs[0], model_dir))
    return [load_config(os.path.join(model_dir, CONFIG_FILE), hparams) for model_dir in model_dirs]


def build_model(configs, model_dirs, checkpoint, source_vocab_size, target_vocab_size):
    """The model of one model directory (a Seq2SeqModel) or of several (an Ensemble).

    Args:
      configs, model_dirs: each model's (`load_configs`); checkpoint: None (each directory's
        `find_checkpoint`), a path prefix (one model), or a list of one per model directory.
    Returns:
      (model, a `CheckpointValues` per model to restore it, [{"name", "step"}] per model).
    """
    checkpoints = [checkpoint] if isinstance(checkpoint, str) else checkpoint or [
        find_checkpoint(model_dir) for model_dir in model_dirs]
    if len(checkpoints) != len(model_dirs):
        raise ValueError("%d checkpoints for %d model directories: give one per directory"
                         % (len(checkpoints), len(model_dirs)))
    params = [config["model"] for config in configs]
    if len(checkpoints) == 1:
        model = Seq2SeqModel(params[0], source_vocab_size, target_vocab_size)
        values = [CheckpointValues(checkpoints[0])]
    else:
        model = Ensemble(params, source_vocab_size, target_vocab_size)
        values = model.checkpoint_values(checkpoints)
    return model, values, [{"name": config["name"], "step": checkpoint_values.step}
                           for config, checkpoint_values in zip(configs, values)]


def _mean(tensors, log_softmax=False):
    """The mean of the members' tensors [...] (log_softmax: of their log-softmax)."""
    return tf.add_n([tf.nn.log_softmax(t) if log_softmax else t for t in tensors]) / len(tensors)


class Ensemble:
    """The models of `model_params_list` (each a config's "model" section) over one pair of
    vocabularies, member i's variables under the scope "member_<i>". Its EncoderOutput holds
    the members' memories [batch, src_time, M_0 + M_1 + ...] and keys side by side, so the
    decoders handle it as one model's; its initial_state {"members": a tuple of the members'}."""

    def __init__(self, model_params_list, source_vocab_size, target_vocab_size):
        self.members = [Seq2SeqModel(params, source_vocab_size, target_vocab_size,
                                     name="member_%d" % index)
                        for index, params in enumerate(model_params_list)]
        self._widths = None  # each member's (memory, key) sizes, known once encoded

    def checkpoint_values(self, checkpoints):
        """A `CheckpointValues` per member, restoring member i from checkpoints[i] (a prefix)."""
        return [CheckpointValues(checkpoint, member.scope_name + "/", SCOPE + "/")
                for member, checkpoint in zip(self.members, checkpoints)]

    def encode(self, source_ids, source_length, training=False):
        """As `Seq2SeqModel.encode`: source_ids [batch, src_time] -> this EncoderOutput."""
        outputs = [member.encode(source_ids, source_length, training) for member in self.members]
        self._widths = [(output.memory.shape.as_list()[-1], output.keys.shape.as_list()[-1])
                        for output in outputs]
        return EncoderOutput(memory=tf.concat([output.memory for output in outputs], -1),
                             keys=tf.concat([output.keys for output in outputs], -1),
                             mask=outputs[0].mask,
                             initial_state={"members": tuple(output.initial_state
                                                             for output in outputs)})

    def _split(self, encoder_output):
        """The ensemble's EncoderOutput (any leading shape) -> the members' EncoderOutputs."""
        memories = tf.split(encoder_output.memory, [m for m, _ in self._widths], axis=-1)
        keys = tf.split(encoder_output.keys, [k for _, k in self._widths], axis=-1)
        initial_state = encoder_output.initial_state  # None in a step
        states = initial_state["members"] if initial_state else [None] * len(self.members)
        return [EncoderOutput(*fields) for fields in zip(
            memories, keys, [encoder_output.mask] * len(self.members), states)]

    def teacher_forced_logits(self, encoder_output, target_input, training,
                              with_attention=False):
        """As `Seq2SeqModel`'s: the mean log-probabilities [batch, tgt_time, V_t] (with_attention
        also the mean weights [batch, tgt_time, src_time])."""
        logits, weights = zip(*(
            member.teacher_forced_logits(output, target_input, training, with_attention=True)
            for member, output in zip(self.members, self._split(encoder_output))))
        log_probs = _mean(logits, log_softmax=True)
        return (log_probs, _mean(weights)) if with_attention else log_probs

    def step(self, encoder_output, state, prev_ids, training=False, with_attention=False):
        """As `Seq2SeqModel.step`: state {"members": a tuple of the members'} -> (new_state (and
        with_attention the mean "attention" [n, src_time]), the mean log-probabilities [n, V_t])."""
        steps = [member.step(output, member_state, prev_ids, training, with_attention)
                 for member, output, member_state
                 in zip(self.members, self._split(encoder_output), state["members"])]
        new_state = {"members": tuple({"h": member_state["h"]} for member_state, _ in steps)}
        if with_attention:
            new_state["attention"] = _mean([member_state["attention"] for member_state, _ in steps])
        return new_state, _mean([logits for _, logits in steps], log_softmax=True)

    beam_update_fn = Seq2SeqModel.beam_update_fn  # over this step
