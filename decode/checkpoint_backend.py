"""Moved to decode.translator; kept until tests/test_scores.py and test_best_checkpoint.py import it from there."""
from decode.translator import find_checkpoint  # noqa: F401
