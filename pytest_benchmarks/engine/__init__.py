"""Running episodes: vector envs and their slots, the rollout loop, one task's evaluation,
deadlines, videos, step traces and the rendering backend. Knows nothing of pytest."""
