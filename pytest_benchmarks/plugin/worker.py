"""The xdist worker's side (registered in workers only, as the controller's is in the
controller): tasks run here and their events ride on test reports (``events``); at the
worker's end it hands over what no report carried."""

from __future__ import annotations

import pytest

from pytest_benchmarks.plugin.events import TaskEnded
from pytest_benchmarks.plugin.session import WORKER_COUNTS, WORKER_EVENTS, SessionState


class Worker:
    """A plugin object registered in xdist workers only."""

    def __init__(self, state: SessionState) -> None:
        self.state = state

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """A task interrupted mid-test (Ctrl-C, SIGTERM) never got a report, but its finished
        episodes are in this worker's cache: they go to the controller in ``workeroutput``, as
        the events a report would have carried,
        with the counts of tests collected and deselected (the controller collects nothing).
        tryfirst: before xdist sends ``workeroutput``."""
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:
            ended = [TaskEnded.of(result).wire() for result in self.state.cache.values()]
            workeroutput[WORKER_EVENTS] = ended
            workeroutput[WORKER_COUNTS] = [self.state.collected, self.state.deselected]
