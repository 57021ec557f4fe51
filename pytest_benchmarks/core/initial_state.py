"""The digest of an episode's initial simulator state: what proves two episodes paired.

Two runs pair episode i with episode i because the plan gives both the same seed and initial
state index; whether the simulator then really started both from the same state is what the
digest shows (LeRobot's LIBERO once chose initial states by when earlier episodes ended, so
"paired" episodes were not). It is read after the env's reset, where the policy's first
observation comes from, and must cover whatever reset randomises:

- an env's own ``simulator_state()`` where it has one. Meta-World's (``envs.metaworld.env``)
  is MuJoCo's state below plus the state observation reset returned: many of its tasks place
  objects and goals by moving model bodies and sites (``model.body_pos``, ``site_pos``), which
  MuJoCo's state does not hold, and the observation holds the object and goal positions;
- MuJoCo's joint positions and velocities, actuator states and mocap poses (LIBERO through
  robosuite, ALOHA through dm_control): their resets place objects through free joints, which
  ``qpos`` holds;
- PushT's pymunk bodies (agent and block: position, velocity, angle).

Values are rounded to 1e-6 before hashing, so a last-bit difference between machines does not
read as another state while a moved object (millimetres) does.

A digest says whether a state moved, not by how much; the sketch says how much. It is the
state's values projected on eight fixed random directions (``SKETCH_SEED``): the root mean
square of two sketches' differences estimates the distance between the two states (the
Euclidean norm of the difference of their values, metres, radians and their velocities mixed)
to within about a quarter, whatever the state's size, since a Gaussian direction's projection
of a vector has the vector's squared norm as its mean square.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

#: The keys of a reset's info (``SlotEnv``) that carry the digest and the sketch.
INFO_KEY = "initial_digest"
SKETCH_KEY = "initial_sketch"

#: Directions a sketch projects on, and the seed they are drawn with (fixed: sketches made on
#: any machine, at any time, compare).
SKETCH_DIRECTIONS, SKETCH_SEED = 8, 20260

#: Hex digits kept: 48 bits, a chance of 1 in 10^14 that two different states read the same.
DIGEST_CHARS = 12

#: Decimals kept of each value: metres, radians and their velocities.
DECIMALS = 6

#: MjData fields that make a MuJoCo state (``mujoco.mj_getState``'s physics state, less time).
MUJOCO_FIELDS = ("qpos", "qvel", "act", "mocap_pos", "mocap_quat")

#: Attributes an env or wrapper keeps the next layer in, in the order they are tried.
INNER = ("unwrapped", "_env", "env", "sim")


def digest(arrays: Iterable[Any]) -> str:
    """Twelve hex digits of the rounded values, in order."""
    h = hashlib.sha256()
    for array in arrays:
        values = np.round(np.asarray(array, dtype=np.float64).ravel(), DECIMALS) + 0.0  # no -0.0
        h.update(values.tobytes())
    return h.hexdigest()[:DIGEST_CHARS]


def sketch(arrays: Iterable[Any]) -> tuple[float, ...]:
    """``(size, p1, ..., p8)``: the number of values, then their projections (``distance``)."""
    values = np.concatenate(
        [np.asarray(a, dtype=np.float64).ravel() for a in arrays] or [np.zeros(0)]
    )
    # Drawn coordinate by coordinate: a state's first n values meet the same directions
    # whatever its size.
    directions = np.random.default_rng(SKETCH_SEED).standard_normal(
        (values.size, SKETCH_DIRECTIONS)
    )
    projected = np.round(values @ directions, DECIMALS) + 0.0
    return (float(values.size), *(float(x) for x in projected))


def distance(a: Sequence[float], b: Sequence[float]) -> float | None:
    """The estimated distance between the states of two sketches; None where the states are of
    different sizes (another model: no distance between them means anything)."""
    if len(a) != len(b) or len(a) < 2 or a[0] != b[0]:
        return None
    diff = np.asarray(a[1:], dtype=np.float64) - np.asarray(b[1:], dtype=np.float64)
    return float(np.sqrt(np.mean(diff**2)))


def state_arrays(env: Any, depth: int = 5) -> list[Any] | None:
    """The arrays that make the env's simulator state, found through its wrappers: an env's own
    ``simulator_state()``, else MuJoCo's data (Meta-World, robosuite/LIBERO, dm_control/ALOHA),
    else PushT's pymunk bodies; None where none is found."""
    own = getattr(env, "simulator_state", None)
    if callable(own):
        found = own()
        return None if found is None else list(found)
    data = _mujoco_data(env)
    if data is not None:
        return [getattr(data, name) for name in MUJOCO_FIELDS if hasattr(data, name)]
    agent, block = getattr(env, "agent", None), getattr(env, "block", None)
    if agent is not None and block is not None and hasattr(block, "angle"):
        return [
            tuple(agent.position), tuple(agent.velocity),
            tuple(block.position), (block.angle,), tuple(block.velocity),
        ]  # fmt: skip
    if depth == 0:
        return None
    for name in INNER:
        inner = getattr(env, name, None)
        if inner is not None and inner is not env:
            found = state_arrays(inner, depth - 1)
            if found is not None:
                return found
    return None


def find(env: Any, name: str, depth: int = 5) -> Any:
    """The attribute ``name`` of the env or of a layer it wraps (``INNER``); None where none
    has it."""
    found = getattr(env, name, None)
    if found is not None or depth == 0:
        return found
    for inner_name in INNER:
        inner = getattr(env, inner_name, None)
        if inner is not None and inner is not env:
            found = find(inner, name, depth - 1)
            if found is not None:
                return found
    return None


def _mujoco_data(env: Any) -> Any:
    """The object holding qpos and qvel: ``env.data`` (MuJoCo's MjData, robosuite's wrapper of
    it) or dm_control's ``env.physics.data``."""
    for holder in (env, getattr(env, "physics", None)):
        data = getattr(holder, "data", None) if holder is not None else None
        if data is not None and hasattr(data, "qpos") and hasattr(data, "qvel"):
            return data
    return None


def of(env: Any) -> dict[str, Any]:
    """The digest and sketch of the env's state now (call it right after reset), as a reset's
    info carries them (``INFO_KEY``, ``SKETCH_KEY``); empty where no simulator state can be
    found."""
    arrays = state_arrays(env)
    if arrays is None:
        return {}
    return {INFO_KEY: digest(arrays), SKETCH_KEY: sketch(arrays)}
