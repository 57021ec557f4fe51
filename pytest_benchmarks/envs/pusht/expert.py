"""PushT's scripted expert: a pushing controller from privileged state (the T's pose and the
goal's), computed inside the env.

Each step it tries a set of pushes in a model of gym-pusht's physics (the same T, pusher and
PD law, in a pymunk space of its own): the pusher set against one point of the T's outline,
moving into it for two control steps. It takes the push that brings the T's keypoints nearest
the goal's, less a little for the pusher's way round to it, steers round the T to the push's
run-up and pushes. gym-pusht's T keeps no momentum (the space's damping is 0), so such short
pushes predict well.
"""

from __future__ import annotations

import itertools

import numpy as np

PUSHER_RADIUS = 15.0
GOAL = np.array([256.0, 256.0, np.pi / 4])
#: gym-pusht's physics: PD gains, substep length, substeps per control step.
K_P, K_V, DT, SUBSTEPS = 100.0, 20.0, 0.01, 10
#: Candidate contacts: one every so many pixels of the T's outline; each push's length and
#: the control steps it is tried for; what a pixel of the pusher's way costs against a pixel
#: of keypoint error; how much better another push must be to replace the current one.
SPACING, PUSH, HORIZON, TRAVEL, SWITCH = 12.0, 30.0, 2, 0.02, 0.9
#: The pusher's most travel per step on its way and in a push, its detour radius round the T,
#: how far back along a push's line it lines up, and how far off that line it may still push.
STRIDE, PUSH_STRIDE, DETOUR, RUN_UP, IN_LINE = 60.0, 15.0, 110.0, 30.0, 12.0
CENTRE = np.array([0.0, 45.0])  # the T's centre of mass in its frame (gym-pusht's)


def rotation(angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, -s], [s, c]])


class PushModel:
    """gym-pusht's T and pusher in a space of their own, for trying pushes."""

    def __init__(self) -> None:
        import pymunk
        from gym_pusht.envs.pusht import PushTEnv

        self._space = pymunk.Space()
        self._space.gravity, self._space.damping = (0, 0), 0.0
        self._agent = PushTEnv.add_circle(self._space, (256, 400), PUSHER_RADIUS)
        self._block, self.shapes = PushTEnv.add_tee(self._space, (256, 300), 0)
        self.local_keypoints = self._keypoints_at(np.array([0.0, 0.0, 0.0]))
        self.goal_keypoints = self.keypoints(GOAL)
        self.outline = self._outline_points()

    def _keypoints_at(self, pose: np.ndarray) -> np.ndarray:
        from gym_pusht.envs.pusht import PushTEnv

        self._set(pose)
        return np.asarray(PushTEnv.get_keypoints(self.shapes), dtype=np.float64)

    def keypoints(self, pose: np.ndarray) -> np.ndarray:
        return self.local_keypoints @ rotation(pose[2]).T + pose[:2]

    def _outline_points(self) -> tuple[np.ndarray, np.ndarray]:
        """Points along the T's outline (its frame), each with its inward normal."""
        from shapely.geometry import Polygon
        from shapely.ops import unary_union

        shape = unary_union([Polygon([tuple(v) for v in s.get_vertices()]) for s in self.shapes])
        ring = shape.exterior
        if not ring.is_ccw:
            ring = ring.reverse()
        points, normals = [], []
        coords = np.asarray(ring.coords)
        for a, b in itertools.pairwise(coords):
            edge = b - a
            length = float(np.linalg.norm(edge))
            inward = np.array([-edge[1], edge[0]]) / length  # left of a ccw edge
            for k in range(max(int(length // SPACING), 1)):
                points.append(a + edge * (k + 0.5) / max(int(length // SPACING), 1))
                normals.append(inward)
        return np.array(points), np.array(normals)

    def _set(self, pose: np.ndarray) -> None:
        self._block.position = (float(pose[0]), float(pose[1]))
        self._block.angle = float(pose[2])
        self._block.velocity, self._block.angular_velocity = (0, 0), 0.0

    def after(self, pose: np.ndarray, start: np.ndarray, direction: np.ndarray,
              length: float) -> np.ndarray:  # fmt: skip
        """The T's pose after the pusher, from ``start``, aims ``length`` pixels on."""
        self._set(pose)
        self._agent.position = (float(start[0]), float(start[1]))
        self._agent.velocity = (0, 0)
        target = start + direction * length
        for _ in range(HORIZON * SUBSTEPS):
            position = np.array(self._agent.position)
            velocity = np.array(self._agent.velocity)
            velocity = velocity + (K_P * (target - position) - K_V * velocity) * DT
            self._agent.velocity = (float(velocity[0]), float(velocity[1]))
            self._space.step(DT)
        return np.array([*self._block.position, self._block.angle])


class PushController:
    """Target positions for gym-pusht's agent, from the T's pose and the agent's position."""

    def __init__(self) -> None:
        self._model = PushModel()
        self._current: int | None = None
        self._length = PUSH

    def reset(self) -> None:
        self._current = None

    def error(self, pose: np.ndarray) -> float:
        """Mean distance of the T's keypoints from the goal's."""
        return float(np.linalg.norm(self._model.keypoints(pose) - self._model.goal_keypoints,
                                    axis=1).mean())  # fmt: skip

    def _pushes(self, pose: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        points, normals = self._model.outline
        turn = rotation(pose[2])
        return points @ turn.T + pose[:2], normals @ turn.T

    def choose(self, agent: np.ndarray, pose: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The contact point and direction of the push to make now."""
        contacts, directions = self._pushes(pose)
        self._length = float(np.clip(2.0 * self.error(pose), 4.0, PUSH))
        costs = np.empty(len(contacts))
        for k, (contact, direction) in enumerate(zip(contacts, directions, strict=True)):
            start = contact - direction * (PUSHER_RADIUS + 1.0)
            way = float(np.linalg.norm(agent - start))
            costs[k] = (
                self.error(self._model.after(pose, start, direction, self._length)) + TRAVEL * way
            )
        best = int(np.argmin(costs))
        if self._current is None or costs[best] < SWITCH * costs[self._current]:
            self._current = best
        return contacts[self._current], directions[self._current]

    def act(self, agent: np.ndarray, pose: np.ndarray) -> np.ndarray:
        """The agent's next target position."""
        from shapely.geometry import LineString, Polygon
        from shapely.ops import unary_union

        contact, direction = self.choose(agent, pose)
        start = contact - direction * (PUSHER_RADIUS + 1.0)
        offset = agent - start
        along = offset @ direction
        aside = offset - along * direction
        if np.linalg.norm(aside) < IN_LINE and -RUN_UP - IN_LINE < along < IN_LINE:
            stride = min(PUSH_STRIDE, self._length / HORIZON)
            return self._toward(agent, agent + direction * stride - aside * 0.5, PUSH_STRIDE)
        run_up = start - direction * RUN_UP
        turn = rotation(pose[2])
        outline = unary_union([
            Polygon([tuple(turn @ np.array(v) + pose[:2]) for v in s.get_vertices()])
            for s in self._model.shapes
        ]).buffer(PUSHER_RADIUS + 1.0)  # fmt: skip

        def clear(a: np.ndarray, b: np.ndarray) -> bool:
            return not outline.intersects(LineString([tuple(a), tuple(b)]))

        if clear(agent, run_up):
            return self._toward(agent, run_up, STRIDE)
        centre = pose[:2] + turn @ CENTRE
        best, shortest = None, np.inf
        for angle in np.linspace(-np.pi, np.pi, 24, endpoint=False):
            waypoint = np.clip(centre + DETOUR * np.array([np.cos(angle), np.sin(angle)]), 5, 507)
            if np.linalg.norm(waypoint - agent) < 1.0 or not clear(agent, waypoint):
                continue
            length = float(np.linalg.norm(waypoint - agent)) + float(
                np.linalg.norm(run_up - waypoint)
            ) * (1.0 if clear(waypoint, run_up) else 3.0)
            if length < shortest:
                best, shortest = waypoint, length
        if best is None:  # boxed in: step straight out from the T
            best = agent + (agent - centre)
        return self._toward(agent, best, STRIDE)

    @staticmethod
    def _toward(agent: np.ndarray, target: np.ndarray, stride: float) -> np.ndarray:
        way = target - agent
        distance = float(np.linalg.norm(way))
        if distance > stride:
            way = way / distance * stride
        return np.clip(agent + way, 0.0, 512.0)
