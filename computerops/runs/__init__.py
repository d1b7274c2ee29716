"""Running episodes and the evidence they leave: the plan, the runner, the run directory, verification,
replay and export."""
