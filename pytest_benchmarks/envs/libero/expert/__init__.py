"""LIBERO's scripted expert: a plan of goal steps from the BDDL file, each step a small machine
that acts through LIBERO's own end-effector action space from privileged simulator state."""
