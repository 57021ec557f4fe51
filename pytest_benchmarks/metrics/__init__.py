"""What a run produced: the metrics JSON and its schema, the run block, the statistics of the
gate, and the terminal, Markdown and PNG views of results. Knows nothing of pytest."""
