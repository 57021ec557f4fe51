"""The policy server (``--benchmark-policy-server``): one process per device holds the model,
and every xdist worker's env slots act through it, batched together."""
