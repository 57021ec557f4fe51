"""Benchmarks, one module each; importing a module registers its benchmark."""
