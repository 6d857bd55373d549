"""Comparing decoders: the implementation comparison, the decoding lab, the families, the report."""
