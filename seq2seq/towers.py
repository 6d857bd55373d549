"""Data parallelism in one process: each batch split over several devices.

In the style of EffectiveTensorflow's `make_parallel`: the batch is split along
its first axis, every tower runs the same loss function on its slice on its own
device, and the towers' gradients are summed next to the variables they update.
The variables themselves are shared because the model builds them in
`tf.make_template`s: the first tower creates them, the others reuse them.

The loss is a token average over the whole batch, not an average of per-tower
averages: each tower returns its summed loss and its token count, and the
summed gradients are divided by the total count. Towers whose slices hold
different numbers of tokens are therefore weighted correctly, and N towers
compute the same gradient as one device.
"""

import tensorflow.compat.v1 as tf


def has_gpus():
    """Whether TensorFlow sees at least one GPU on this machine."""
    return bool(tf.config.list_physical_devices("GPU"))


def tower_devices(num_towers):
    """The device of every tower: "/gpu:i" if there are GPUs, else "/cpu:i".

    Without GPUs the towers go to virtual CPU devices, which the session must
    create (see `session_config`).
    """
    device_type = "gpu" if has_gpus() else "cpu"
    return ["/%s:%d" % (device_type, i) for i in range(num_towers)]


def session_config(num_towers):
    """A session config offering one device per tower.

    Returns:
      A `tf.ConfigProto` creating `num_towers` virtual CPU devices when there
      are no GPUs (TensorFlow otherwise shows the whole CPU as one device), or
      None when nothing needs changing.
    """
    if num_towers <= 1 or has_gpus():
        return None
    return tf.ConfigProto(device_count={"CPU": num_towers}, allow_soft_placement=True)


def split_batch(inputs, num_towers):
    """Splits every tensor of a nested structure along its first axis.

    Args:
      inputs: nested structure of tensors shaped [batch, ...], batch divisible
        by `num_towers`.
      num_towers: int.
    Returns:
      A list of `num_towers` structures like `inputs`, tensors [batch / N, ...].
    """
    with tf.name_scope("split_batch"):
        pieces = [tf.split(tensor, num_towers, axis=0) for tensor in tf.nest.flatten(inputs)]
    return [tf.nest.pack_sequence_as(inputs, [tensor_pieces[i] for tensor_pieces in pieces])
            for i in range(num_towers)]


def _sum_and_scale(gradients, scale):
    """Sums one variable's gradients from all towers, then multiplies by `scale`.

    Sparse gradients (embedding lookups) stay sparse: their slices are
    concatenated, and `optimization.clip_gradients` sums repeated rows.
    """
    gradients = [g for g in gradients if g is not None]
    if not gradients:
        return None
    if isinstance(gradients[0], tf.IndexedSlices):
        return tf.IndexedSlices(
            tf.concat([g.values for g in gradients], axis=0) * scale,
            tf.concat([g.indices for g in gradients], axis=0),
            gradients[0].dense_shape)
    return tf.add_n(gradients) * scale


def parallel_gradients(loss_fn, inputs, num_towers):
    """The gradients of a token-averaged loss, its batch split over towers.

    Args:
      loss_fn: function(inputs) -> (loss_sum, weight): the summed loss of a
        batch and what it is averaged over (e.g. its number of target tokens),
        both scalar float32. Called once per tower; it must build its variables
        in templates so that every call shares them.
      inputs: nested structure of [batch, ...] tensors, batch divisible by
        `num_towers`.
      num_towers: int >= 1. With 1, no device is set, so that the placement
        chosen by the caller (e.g. the parameter servers of a distributed
        Estimator) applies unchanged.
    Returns:
      (loss, grads_and_vars): the scalar loss sum(loss_sum) / sum(weight) over
      the whole batch, and a list of (gradient, variable) pairs for every
      trainable variable. With several towers, each tower's gradients are
      computed on its own device (colocated with the forward ops), then
      summed and scaled by 1 / sum(weight) on the variable's device.
    Raises:
      ValueError: if a tower after the first creates new trainable variables.
    """
    if num_towers == 1:
        with tf.name_scope("loss"):
            loss_sum, weight = loss_fn(inputs)
            loss = loss_sum / weight
        variables = tf.trainable_variables()
        return loss, list(zip(tf.gradients(loss, variables), variables))

    tower_sums, tower_weights, tower_gradients = [], [], []
    variables = None
    for index, (device, tower_inputs) in enumerate(
            zip(tower_devices(num_towers), split_batch(inputs, num_towers))):
        with tf.device(device), tf.name_scope("tower_%d" % index):
            loss_sum, weight = loss_fn(tower_inputs)
            if variables is None:
                variables = tf.trainable_variables()
            elif len(tf.trainable_variables()) != len(variables):
                raise ValueError("tower %d created new variables: the loss function must "
                                 "share them across calls (tf.make_template)" % index)
            tower_gradients.append(tf.gradients(
                loss_sum, variables, colocate_gradients_with_ops=True))
        tower_sums.append(loss_sum)
        tower_weights.append(weight)

    with tf.name_scope("average_towers"):
        total_weight = tf.add_n(tower_weights)
        loss = tf.add_n(tower_sums) / total_weight
        grads_and_vars = []
        for variable, gradients in zip(variables, zip(*tower_gradients)):
            with tf.colocate_with(variable):
                grads_and_vars.append((_sum_and_scale(gradients, 1.0 / total_weight), variable))
    return loss, grads_and_vars
