"""Meta-World v3: its 50 tasks, their goal variations, and the scripted expert policies."""
