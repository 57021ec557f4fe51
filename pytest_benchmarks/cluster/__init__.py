"""Running a session past one machine: Slurm array jobs (``slurm``) and a single-node Slurm
cluster to try them on (``local_slurm``); a Ray cluster's nodes running the session's tasks
(``ray_connect`` joins it, ``ray_pool`` hands the tasks out, ``ray_node`` runs one)."""
