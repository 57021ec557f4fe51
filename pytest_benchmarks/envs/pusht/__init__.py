"""PushT (gym-pusht): the Diffusion Policy paper's task, a T pushed onto its goal pose."""
