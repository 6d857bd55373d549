"""Moved to decode.translator; kept until tests/test_scores.py and test_export.py import it from there."""
from decode.translator import output_length_limit  # noqa: F401
