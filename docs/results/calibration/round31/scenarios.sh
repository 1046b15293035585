#!/bin/sh
# The thirty-first round's candidate files, from the repository root: the committed file as round
# 30 left it (round30/scenarios/seed157-pooled.toml) with the speed epochs' depth by load:
# speed_cv (an idle host's cv), speed_cv_busy (a fully busy host's) and speed_busy_exponent, for
# each IDLE,BUSY[,EXPONENT] given. Writes round31/scenarios/load-IDLE-BUSY[-pEXPONENT].toml.
# Run:  sh docs/results/calibration/round31/scenarios.sh 0.06,0.16 0.08,0.22,4 ...
set -e
D=docs/results/calibration/round31; BASE=docs/results/calibration/round30/scenarios/seed157-pooled.toml
mkdir -p $D/scenarios
for spec in "$@"; do
  idle=$(echo $spec | cut -d, -f1); busy=$(echo $spec | cut -d, -f2); p=$(echo $spec | cut -s -d, -f3)
  name=load-$idle-$busy; keys="speed_cv = $idle\nspeed_cv_busy = $busy"
  if [ -n "$p" ]; then name=$name-p$p; keys="$keys\nspeed_busy_exponent = $p"; fi
  sed -e "s/^speed_cv = 0.1$/$keys/" $BASE > $D/scenarios/$name.toml
  grep -q "^speed_cv_busy = $busy$" $D/scenarios/$name.toml
done
