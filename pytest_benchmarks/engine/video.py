"""Episode videos (``--benchmark-video``): frames from the env's render, one MP4 per episode.

A recorder lives in the process that steps the env (beside the simulator, so frames never
cross a pipe). It keeps the current episode's frames and, when the episode ends, hands them to
a background thread that encodes them with imageio's ffmpeg plugin while the env goes on with
the next episode. A failed encode never touches the episode's result: it leaves a one-line
``.error`` file beside where the video would be, which the evaluation records instead.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from pytest_benchmarks.core.tasks import EnvConfig

FPS = 30


def video_path(config: EnvConfig, index: int) -> Path:
    """``<video dir>/<benchmark>/<task>/episode_0003.mp4``."""
    assert config.video_dir is not None
    parts = config.task.id.split("/")
    return Path(config.video_dir, *parts, f"episode_{index:04d}.mp4")


def error_path(path: Path) -> Path:
    return path.with_name(path.name + ".error")


def even(frame: np.ndarray) -> np.ndarray:
    """Pad an odd height or width by one edge row or column: H.264 (yuv420p) needs even sizes."""
    height, width = frame.shape[:2]
    if height % 2 or width % 2:
        frame = np.pad(frame, ((0, height % 2), (0, width % 2), (0, 0)), mode="edge")
    return np.ascontiguousarray(frame)


def encode(path: Path, frames: list[np.ndarray]) -> None:
    """Write an H.264 MP4; on failure, write the reason to ``<path>.error`` instead."""
    try:
        import imageio_ffmpeg

        path.parent.mkdir(parents=True, exist_ok=True)
        error_path(path).unlink(missing_ok=True)
        frames = [even(frame) for frame in frames]
        height, width = frames[0].shape[:2]
        writer = imageio_ffmpeg.write_frames(
            str(path), (width, height), fps=FPS, codec="libx264", macro_block_size=1,
            ffmpeg_log_level="error",
        )  # fmt: skip
        writer.send(None)
        for frame in frames:
            writer.send(frame)
        writer.close()
        if not path.is_file() or path.stat().st_size == 0:
            raise OSError(f"ffmpeg wrote no video to {path}")
    except Exception as exc:  # the episode's result must survive any encoder problem
        if path.is_file():
            path.unlink()
        text = str(exc).strip().splitlines()
        reason = f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
        error_path(path).write_text(reason + "\n")


class VideoRecorder:
    """Frames of the running episode; encodes the episodes the mode selects, off the loop."""

    def __init__(self, config: EnvConfig) -> None:
        self.config = config
        self.frames: list[np.ndarray] = []
        self.index: int | None = None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="video")
        self._pending: list[Future[None]] = []

    def start(self, index: int | None, env: Any) -> None:
        self.frames, self.index = [], index
        self.frame(env)

    def frame(self, env: Any) -> None:
        if self.index is not None:
            self.frames.append(np.asarray(env.render()).copy())

    def finish(self, success: bool) -> None:
        """The episode ended: queue its video when the mode wants it, and drop the frames."""
        if self.index is not None and (self.config.video == "all" or not success):
            path = video_path(self.config, self.index)
            self._pending.append(self._pool.submit(encode, path, self.frames))
        self.frames, self.index = [], None

    def close(self) -> None:
        """Wait for the queued encodes."""
        self._pool.shutdown(wait=True)
