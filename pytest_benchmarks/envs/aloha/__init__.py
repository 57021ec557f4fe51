"""ALOHA (gym-aloha): the ACT paper's bimanual simulated tasks, insertion and transfer cube."""
