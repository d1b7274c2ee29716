"""The episode studies and their one seam (computerops/studies/base.py): what each adds to an episode's plan, tenant,
loop, evidence, record and verification, and the registry `run_episode`, `derived_fields` and `verify` go through."""
