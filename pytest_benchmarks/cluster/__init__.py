"""Running a session past one machine: Slurm array jobs (``slurm``), and a single-node Slurm
cluster to try them on (``local_slurm``)."""
