"""LIBERO: its 130 tasks, setup without prompts or downloads, fast resets and lean substeps."""
