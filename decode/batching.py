"""A call's sentences in length-sorted batches (less padding), several at once on threads."""

import concurrent.futures


def call_batch_size(sentences, batch_size, concurrent_batches):
    """`batch_size`, or less for a call too small to give each of the `concurrent_batches`
    threads a full batch of its `sentences` (then even ones)."""
    return min(batch_size, max(1, -(-sentences // concurrent_batches)))


def length_sorted_batches(lengths, batch_size):
    """Lists of at most `batch_size` indices into `lengths`, shortest first, ties in order."""
    order = sorted(range(len(lengths)), key=lambda index: lengths[index])
    return [order[start:start + batch_size] for start in range(0, len(order), batch_size)]


def in_batches(lengths, run, batch_size, threads):
    """`run(batch)`'s results over `length_sorted_batches` (a list per list of indices), one per
    index of `lengths` in input order; `threads` batches at once (one batch: in this thread)."""
    batches, results = length_sorted_batches(lengths, batch_size), {}
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        runs = pool.map(run, batches) if len(batches) > 1 else map(run, batches)
        for batch, found in zip(batches, runs):
            results.update(zip(batch, found))
    return [results[index] for index in range(len(lengths))]
