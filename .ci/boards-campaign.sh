#!/bin/bash
# A boards-only campaign (issue #47: 30 minutes): configurations drawn from the seed in
# the ranges of `converge simulate --campaign`, until the time is up; prints every
# failing run's command. As in the campaign, half the runs without restarts forget
# mid-run (some retiring and rejoining devices), and half of those collect their lists'
# slot tombstones. Usage: .ci/boards-campaign.sh [SECONDS] [SEED] (release build first).
BIN=${BIN:-.build/release/converge}
SECONDS_LIMIT=${1:-1800}
SEED=${2:-1}
RANDOM=$SEED
end=$(( $(date +%s) + SECONDS_LIMIT ))
runs=0; ops=0; fails=0; stability=0
while [ $(date +%s) -lt $end ]; do
  seed=$(( RANDOM * 32768 + RANDOM ))
  replicas=$(( 2 + RANDOM % 15 ))
  operations=$(( 100 + RANDOM % 2901 ))
  loss=0.$(( RANDOM % 50 )); dup=0.$(( RANDOM % 50 )); reo=0.$(( RANDOM % 50 ))
  part=0.00$(( RANDOM % 5 )); off=0.00$(( RANDOM % 5 ))
  ae=$(( RANDOM % 201 ))
  extra=""
  [ $(( RANDOM % 2 )) -eq 0 ] && extra="$extra --no-live-push"
  [ $(( RANDOM % 2 )) -eq 0 ] && extra="$extra --frames"
  restarts=""
  if [ $(( RANDOM % 2 )) -eq 0 ]; then restarts=" --restarts 0.0$(( 1 + RANDOM % 5 ))"; fi
  undos=(0 0.05 0.2); extra="$extra --undo ${undos[$(( RANDOM % 3 ))]}"
  sis=(0 50 200); interval=" --sync-interval ${sis[$(( RANDOM % 3 ))]}"
  [ $(( RANDOM % 6 )) -eq 0 ] && extra="$extra --library $(( 100 + RANDOM % 1901 ))"
  # Stability runs restart no device and sync every commit.
  if [ -z "$restarts" ] && [ $(( RANDOM % 2 )) -eq 0 ]; then
    forgets=(0.01 0.05 0.2); extra="$extra --forget ${forgets[$(( RANDOM % 3 ))]}"
    if [ $(( RANDOM % 2 )) -eq 0 ]; then
      horizons=(2000 5000 10000); leaves=(0.0005 0.002 0.01)
      extra="$extra --horizon ${horizons[$(( RANDOM % 3 ))]} --leave ${leaves[$(( RANDOM % 3 ))]}"
    fi
    [ $(( RANDOM % 2 )) -eq 0 ] && extra="$extra --collect-lists"
    stability=$((stability+1))
  else
    extra="$extra$restarts$interval"
  fi
  cmd="$BIN simulate --workload boards --replicas $replicas --operations $operations --seed $seed --loss $loss --duplicate $dup --reorder $reo --partitions $part --offline $off --anti-entropy $ae $extra"
  out=$($cmd 2>&1); rc=$?
  runs=$((runs+1)); ops=$((ops+operations))
  if [ $rc -ne 0 ]; then fails=$((fails+1)); echo "FAIL rc=$rc: $cmd"; echo "$out" | tail -30; fi
done
echo "runs=$runs stability_runs=$stability operations=$ops failures=$fails seed=$SEED seconds=$SECONDS_LIMIT"
