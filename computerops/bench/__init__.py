"""`computerops bench`: the harness's own costs, measured as ratios in one run."""
