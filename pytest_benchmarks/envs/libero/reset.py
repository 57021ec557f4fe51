"""LIBERO's hard reset without recompiling the scene.

robosuite's hard reset rebuilds the scene's MJCF (30 ms) and compiles it into a new MjModel
(1.3-2.2 s: LIBERO's scenes hold 190 MB of textures and 730,000 mesh vertices), then makes a new
MjSim on it; its constructor does the same once before. The MJCF of a task is the same on every
reset (whatever the seed), so the model compiled when the env is made is kept and handed to
every reset whose MJCF is the same,
with each of its arrays the runtime may change (positions, orientations, colours, limits:
every array up to ``SMALL_BYTES``) put back as the compiler left them; the large arrays (meshes,
textures, bounding volumes) are read-only at run time. Everything else of the hard reset runs as
robosuite wrote it: a new MjSim and MjData, the robot's and objects' resets, the observables.
A rendered env's render context (an OSMesa context and an MjrContext holding the model's
textures and meshes, 1.5-1.9 s to make) is tied to the model, not to the sim, so it moves to the
new sim with the model. Tests compare whole episodes' full states and every model array with the
hard reset's, and rendered frames with LIBERO's own env's over several resets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

#: Arrays up to this size are restored on every reset; larger ones are never written at run time.
SMALL_BYTES = 1 << 20


class CompiledScene:
    """Stands in for robosuite's ``_initialize_sim`` on one env (``install``)."""

    def __init__(self, env: Any) -> None:
        self._env = env
        self._xml: str | None = None
        self._model: Any = None
        #: The compiled model's small arrays as compiled, and those arrays themselves (views).
        self._pristine: dict[str, np.ndarray] = {}
        self._small: dict[str, np.ndarray] = {}
        #: The last sim's render context, between a reset's ``destroy_sim`` and ``initialize_sim``.
        self._context: Any = None
        self.compiled = 0

    @classmethod
    def install(cls, env: Any) -> CompiledScene:
        """This env's scene from now on (kept on the env as ``compiled_scene``)."""
        scene = cls(env)
        env._initialize_sim = scene.initialize_sim
        env._destroy_sim = scene.destroy_sim
        env.compiled_scene = scene
        return scene

    def destroy_sim(self) -> None:
        """robosuite's ``_destroy_sim``, keeping the sim's render context for the next sim."""
        sim = self._env.sim
        if sim is not None:
            self._context = sim._render_context_offscreen
            sim._render_context_offscreen = None
            sim.free()
            self._env.sim = None

    def release(self) -> None:
        """Free a render context kept by ``destroy_sim`` (the env was closed)."""
        self._context = None

    def initialize_sim(self, xml_string: str | None = None) -> None:
        """robosuite's ``_initialize_sim`` with the compiled model reused for the same MJCF."""
        import mujoco
        from robosuite.utils.binding_utils import MjSim

        env = self._env
        xml = xml_string if xml_string else env.model.get_xml()
        if env._xml_processor is not None:
            xml = env._xml_processor(xml)
        context, self._context = self._context, None
        if xml != self._xml:
            context = None  # made for another model: freed
            self._model = mujoco.MjModel.from_xml_string(xml)
            self._xml = xml
            self._small = {
                name: value for name, value in model_arrays(self._model).items()
                if value.nbytes <= SMALL_BYTES
            }  # fmt: skip
            self._pristine = {name: value.copy() for name, value in self._small.items()}
            self.compiled += 1
        else:
            for name, value in self._pristine.items():
                np.copyto(self._small[name], value)
        env.sim = MjSim(self._model)
        env.sim.forward()
        if context is not None:
            # robosuite's reset makes a context only for a sim without one.
            context.sim, context.model, context.data = env.sim, env.sim.model, env.sim.data
            env.sim.add_render_context(context)
        env.initialize_time(env.control_freq)


def model_arrays(model: Any) -> dict[str, np.ndarray]:
    """Every array of an MjModel, by attribute name."""
    arrays = {}
    for name in dir(model):
        if name.startswith("_"):
            continue
        value = getattr(model, name, None)
        if isinstance(value, np.ndarray):
            arrays[name] = value
    return arrays


@contextmanager
def compiled_from_construction(processor: Callable[[str], str] | None) -> Iterator[None]:
    """While robosuite envs are constructed in this block, their first compile (robosuite's
    constructor compiles before the first reset compiles again) already goes through a
    ``CompiledScene``, with ``processor`` as their XML processor; the first reset then finds
    the model compiled. Only the constructor's call is redirected; the class is restored after.
    """
    from robosuite.environments.base import MujocoEnv

    original = MujocoEnv._initialize_sim

    def initialize_sim(env: Any, xml_string: str | None = None) -> None:
        if env._xml_processor is None:
            env._xml_processor = processor
        CompiledScene.install(env).initialize_sim(xml_string)

    MujocoEnv._initialize_sim = initialize_sim
    try:
        yield
    finally:
        MujocoEnv._initialize_sim = original


class PropertySamplers:
    """Episode ``I``'s reset draws what a fresh env's ``I + 1``-th reset draws, whatever ran before.

    LIBERO's ``_load_model`` (every hard reset) appends the samplers of the BDDL's initial
    ``Open``/``Close``/``TurnOn``/``TurnOff`` states to ``object_property_initializers`` and never
    clears the list; the reset draws once from numpy's global generator per sampler before it
    places the fixtures. So even after ``seed()``, where a cabinet or a rack stands (up to 1.5 cm
    apart) depends on how many resets the env made before: a task's episodes run one after another
    in one env get one placement each, the same episode run alone or in another slot another
    (libero_90/24 at 5: succeeds alone, fails after episode 4). Before each episode's reset the
    list is set to what a fresh env holds before that reset in order (its samplers are stateless,
    the same for every load), so an episode's scene depends only on its seed, initial state and
    index: rerunning one episode, or running with more slots, gives the scene of the run in order.
    """

    def __init__(self, env: Any) -> None:
        self._env = env
        #: The samplers one load appends (the constructor's load made the list so far).
        self._per_load = list(env.object_property_initializers)

    def pin(self, episode: int) -> None:
        """Before episode ``episode``'s reset (counted from 0 in a fresh env)."""
        if self._per_load:
            self._env.object_property_initializers = self._per_load * (episode + 1)
