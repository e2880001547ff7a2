"""Differential testing: random fusions written through the Python API (generator.py),
lowered and run on CPU ranks, compared with eager torch (harness.py). TRIAGE.md lists
what it found."""
