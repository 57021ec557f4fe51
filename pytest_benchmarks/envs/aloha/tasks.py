"""ALOHA's tasks as LeRobot's env config declares them; static data, no simulator import."""

from __future__ import annotations

#: gym-aloha's task ids and the scene each builds (``bimanual_viperx_<scene>.xml``).
SCENES = {"AlohaInsertion-v0": "insertion", "AlohaTransferCube-v0": "transfer_cube"}
DESCRIPTIONS = {
    "AlohaInsertion-v0": "Insert the peg into the socket",
    "AlohaTransferCube-v0": "Pick up the cube with the right arm and transfer it to the left arm",
}
#: LeRobot's ``AlohaEnv``: 400 steps at 50 Hz.
MAX_STEPS = 400
FPS = 50
#: 14 joint positions: per arm six joints and the gripper (0 closed, 1 open).
STATE_DIM = ACTION_DIM = 14
#: The objects' free joints in qpos (position and quaternion each): the cube; peg and socket.
OBJECTS_DIM = {"transfer_cube": 7, "insertion": 14}
#: gym-aloha's reward when the task is done (LeRobot's success: ``reward == 4``).
MAX_REWARD = 4
CAMERA = "top"
