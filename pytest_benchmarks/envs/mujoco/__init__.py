"""How the MuJoCo benchmarks render on a CPU: render modes, coarse meshes, view culling."""
