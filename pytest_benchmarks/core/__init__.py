"""The lowest layer, free of pytest: tasks and env configs, the benchmark base class and
catalog, the Policy protocol and specs, features and processors, results, the episode plan, the
settings and atomic files. Every other layer builds on it."""
