"""Draftbench's headless core: plans, vLLM launch, load, metrics, store and analysis."""

__version__ = "0.1.0"
