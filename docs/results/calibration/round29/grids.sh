# Sourced by judge_all.sh and run_speed.sh: every grid of this host state (rounds 25-29), by hour,
# with R (docs/results/calibration) and D (round29) set by the caller.
R25="$R/round25/grid-seed127 $R/round25/grid-seed131"
R26="$R/round26/grid-seed137 $R/round26/grid-seed139"
R26b="$R/round26/grid-seed149 $R/round26/grid-seed151"
R27="$R/round27/grid-seed157 $R/round27/grid-seed163"
R27b="$R/round27/grid-seed167 $R/round27/grid-seed173"
R28="$R/round28/grid-seed179 $R/round28/grid-seed181"
R28b="$R/round28/grid-seed191"
R29="$D/grid-seed193 $D/grid-seed197"
