"""A call's sentences in length-sorted batches, several batches at once on threads.

Sorting by length pads less; a call too small for a full batch per thread is split evenly
over the threads. Why and the timings: docs/DECODING-NOTES.md.
"""

import concurrent.futures


def call_batch_size(sentences, batch_size, concurrent_batches):
    """The batch size for a call of `sentences`: `batch_size`, or less when the call is too
    small to give each of the `concurrent_batches` threads a full batch (then even ones)."""
    return min(batch_size, max(1, -(-sentences // concurrent_batches)))


def length_sorted_batches(lengths, batch_size):
    """Lists of at most `batch_size` indices into `lengths`, shortest first, ties in order."""
    order = sorted(range(len(lengths)), key=lambda index: lengths[index])
    return [order[start:start + batch_size] for start in range(0, len(order), batch_size)]


def in_batches(lengths, run, batch_size, threads):
    """`run(batch)`'s results (a list per list of indices) put back in input order: one per
    index of `lengths`, over `length_sorted_batches`, `threads` batches at once (a call of
    one batch runs in the caller's thread)."""
    results = [None] * len(lengths)
    batches = length_sorted_batches(lengths, batch_size)
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        runs = pool.map(run, batches) if len(batches) > 1 else map(run, batches)
        for batch, found in zip(batches, runs):
            for index, result in zip(batch, found):
                results[index] = result
    return results
