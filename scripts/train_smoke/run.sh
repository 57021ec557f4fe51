#!/usr/bin/env bash
# Record, train, gate: the whole LeRobot loop, offline, on a CPU.
#
#  1. the scripted expert's successful episodes of one task (Meta-World's reach-v3, or ALOHA's
#     transfer cube with BENCHMARK=aloha), recorded as LeRobotDatasets: state only, and with a
#     64x64 camera;
#  2. LeRobot's own training entry point (lerobot-train, unchanged) trains a small ACT on each:
#     the state dataset for long enough to succeed, the camera dataset for a few steps (its
#     image pipeline, normalisation and checkpoint loading, not its success);
#  3. each checkpoint is evaluated through --benchmark-policy=lerobot:CHECKPOINT on scenes it
#     was not trained on (another --benchmark-seed); the state one is gated by the snapshot in
#     scripts/train_smoke/.
#
# Environment (defaults in brackets, Meta-World's then ALOHA's): BENCHMARK [metaworld] (or
# aloha), OUT [train-smoke], PYTHON [python], TASK [reach-v3 | AlohaTransferCube-v0],
# DEMOS [30 | 50] and PIXEL_DEMOS [3] episodes recorded, STEPS [1000 | 5000] and PIXEL_STEPS
# [20] training steps, CHUNK [10 | 20] actions per ACT chunk, EVAL [20] episodes evaluated,
# MAX_STEPS [100 | 400] per episode, GATE [stat] (off: no snapshot comparison, for runs shorter
# than the snapshot's). Extra arguments go to the last pytest run (e.g. --snapshot-update).
set -euo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-train-smoke}"
py="${PYTHON:-python}"
benchmark="${BENCHMARK:-metaworld}"
case "$benchmark" in
  metaworld) defaults=(reach-v3 30 1000 10 100) ;;
  aloha) defaults=(AlohaTransferCube-v0 50 5000 20 400) ;;
  *) echo "train-smoke: BENCHMARK=$benchmark is not one it runs; valid: metaworld, aloha" >&2; exit 2 ;;
esac
task="${TASK:-${defaults[0]}}"
demos="${DEMOS:-${defaults[1]}}"
steps="${STEPS:-${defaults[2]}}"
chunk="${CHUNK:-${defaults[3]}}"
max_steps="${MAX_STEPS:-${defaults[4]}}"
export HF_HUB_OFFLINE=1 WANDB_MODE=disabled
case "$out" in "" | / | . | ..) echo "train-smoke: OUT=$out would be deleted; give a directory of its own" >&2; exit 2 ;; esac
rm -rf "$out" "$out.parts"
mkdir -p "$out"

record() {  # record DIR EPISODES OBS-ARGS...: the expert's successful episodes
  local dir="$1" episodes="$2"
  shift 2
  "$py" -m pytest "benchmarks/test_$benchmark.py" -k test_rollout -p no:cacheprovider -q \
    --benchmark-env="$benchmark" --benchmark-task="$task" --benchmark-episodes="$episodes" \
    --benchmark-max-steps="$max_steps" --benchmark-record="$out/$dir" \
    --benchmark-record-only=success --benchmark-metrics="$out/$dir.json" "$@"
}

train() {  # train DIR STEPS: a small ACT (no pretrained backbone: nothing is downloaded)
  "$py" -m lerobot.scripts.lerobot_train --dataset.repo_id="local/$1" --dataset.root="$out/$1" \
    --policy.type=act --policy.device=cpu --policy.push_to_hub=false \
    --policy.pretrained_backbone_weights=null --policy.use_vae=false \
    --policy.chunk_size="$chunk" --policy.n_action_steps="$chunk" --policy.dim_model=128 \
    --policy.dim_feedforward=512 --policy.n_encoder_layers=2 --policy.n_decoder_layers=1 \
    --policy.optimizer_lr=1e-3 --batch_size=32 --steps="$2" --save_freq="$2" --log_freq=250 \
    --env_eval_freq=0 --num_workers=0 --seed=1 --wandb.enable=false --output_dir="$out/train-$1"
}

evaluate() {  # evaluate TESTS DIR EPISODES ARGS...: the checkpoint on held-out scenes
  local tests="$1" dir="$2" episodes="$3"
  shift 3
  "$py" -m pytest "$tests" -p no:cacheprovider -q --benchmark-env="$benchmark" \
    --benchmark-task="$task" --benchmark-episodes="$episodes" --benchmark-seed=5000 \
    --benchmark-max-steps="$max_steps" --benchmark-device=cpu \
    --benchmark-policy="lerobot:$out/train-$dir/checkpoints/last/pretrained_model" \
    --benchmark-metrics="$out/eval-$dir.json" "$@"
}

record demos "$demos" --benchmark-obs=state
record demos-64 "${PIXEL_DEMOS:-3}" --benchmark-obs=pixels --benchmark-image-size=64
train demos-64 "${PIXEL_STEPS:-20}"
evaluate "benchmarks/test_$benchmark.py" demos-64 1 -k test_rollout \
  --benchmark-obs=pixels --benchmark-image-size=64
train demos "$steps"
evaluate scripts/train_smoke/test_trained.py demos "${EVAL:-20}" --benchmark-obs=state \
  --benchmark-gate="${GATE:-stat}" "$@"
echo "train-smoke: datasets, checkpoints and metrics in $out"
