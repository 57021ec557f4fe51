"""The xdist worker's side (registered in workers only, as the controller's is in the
controller): tasks run here and their rows ride on test reports (``payload``); at the worker's
end it hands over once more what no report carried."""

from __future__ import annotations

import pytest

from pytest_benchmarks.plugin.session import WORKER_COUNTS, WORKER_ROWS, SessionState


class Worker:
    """A plugin object registered in xdist workers only."""

    def __init__(self, state: SessionState) -> None:
        self.state = state

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """A task interrupted mid-test (Ctrl-C, SIGTERM) never got a report, but its finished
        episodes are in this worker's cache: they go to the controller in ``workeroutput``,
        with the counts of tests collected and deselected (the controller collects nothing).
        tryfirst: before xdist sends ``workeroutput``."""
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput[WORKER_ROWS] = [result.to_row() for result in self.state.cache.values()]
            workeroutput[WORKER_COUNTS] = [self.state.collected, self.state.deselected]
