"""Where each verification writes its results in a design folder (read by report, sweep and bench)."""

CSIM_RESULTS = "csim_results.json"  # fpgagen csim
SIM_RESULTS = "sim_results.json"  # fpgagen sim
SYNTH_RESULTS = "synth_results.json"  # fpgagen synth
