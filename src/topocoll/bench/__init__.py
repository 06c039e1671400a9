"""Benchmarks: one harness, several back-ends (SimGrid's SMPI first)."""
