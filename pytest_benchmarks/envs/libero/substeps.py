"""robosuite's control substeps without the simulator work they repeat, state for state.

A LIBERO step is 25 substeps of robosuite's loop: ``sim.forward()``, the robot's controller
(whose ``update()`` calls ``sim.forward()`` again before it reads the arm's pose, Jacobians and
mass matrix), then ``sim.step()``, whose ``mj_step`` runs the whole forward pass a third time
before it integrates. Between the three only ``ctrl`` changes (the arm's torques, the gripper's
command), and MuJoCo's position and velocity stages (kinematics, collisions, the mass matrix,
bias forces) read none of it, so their second and third passes reproduce the first bit for bit.
What does not repeat is the constraint solver: each forward pass warm-starts it from the last
pass's accelerations and keeps its own as the next warm start (``qacc_warmstart``), so a second
pass differs from the first in the last bits, and the trajectory with it. Here the controller's
forward runs only the stages after velocity (``mj_forwardSkip`` from ``mjSTAGE_VEL``: actuation,
acceleration, the solver, the acceleration sensors) and the step runs ``mj_step2`` (the same
stages, then the integrator), so every solve robosuite's loop makes is still made, in order.

Where ``mj_step`` would do something else it runs as before: its first act is to check
positions and velocities (NaN, or beyond ``mjMAXVAL``) and reset the data if one is bad, and
``mj_step2`` integrates RK4 models with Euler. Tests step whole episodes with and without and
compare the full simulator state at every step.
"""

from __future__ import annotations

from typing import Any

import mujoco
import numpy as np


class LeanSubsteps:
    """Stands in for one robosuite env's ``_pre_action``: the only call between its step loop's
    ``sim.forward()`` and ``sim.step()``, so what runs inside it and the ``sim.step()`` right
    after it are known to follow a full forward pass of the same positions and velocities."""

    def __init__(self, env: Any) -> None:
        self._env = env
        self._pre_action = env._pre_action

    @classmethod
    def install(cls, env: Any) -> LeanSubsteps:
        """Lean substeps for this env from now on; ``del env._pre_action`` restores robosuite's."""
        lean = cls(env)
        env._pre_action = lean.pre_action
        return lean

    def pre_action(self, action: Any, policy_step: bool = False) -> None:
        """The env's own ``_pre_action``: its first ``sim.forward()`` solves only (the loop's
        forward just ran), and the loop's ``sim.step()`` that follows integrates only."""
        sim = self._env.sim
        model, data = sim.model._model, sim.data._data

        def solve() -> None:
            del sim.forward
            mujoco.mj_forwardSkip(model, data, mujoco.mjtStage.mjSTAGE_VEL, 0)

        sim.forward = solve
        try:
            self._pre_action(action, policy_step)
        finally:
            sim.__dict__.pop("forward", None)

        def step(*args: Any, **kwargs: Any) -> None:
            del sim.step
            if model.opt.integrator != mujoco.mjtIntegrator.mjINT_RK4 and sound(data):
                mujoco.mj_step2(model, data)
            else:
                mujoco.mj_step(model, data)

        sim.step = step


def sound(data: Any) -> bool:
    """Whether ``mj_checkPos`` and ``mj_checkVel`` would pass: no NaN, nothing beyond
    ``mjMAXVAL`` (NaN fails the comparison)."""
    return bool(
        np.abs(data.qpos).max(initial=0.0) <= mujoco.mjMAXVAL
        and np.abs(data.qvel).max(initial=0.0) <= mujoco.mjMAXVAL
    )
